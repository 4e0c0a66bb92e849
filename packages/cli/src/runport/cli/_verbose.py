"""``-v``/``--verbose``: where the packages' log records go while a command runs.

The libraries log to ``runport.<package>`` and install no handler; the command is the
application, so it decides. Without ``-v`` nothing but the command's own one-line error reaches
stderr; ``-v`` shows warnings (a retry, a fallback moving on, a failure the MCP server survived)
and INFO, ``-vv`` adds the wire's DEBUG lines and the tracebacks records carry. No record holds a
key, a body or model text (docs/observability.md).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

LEVELS = (logging.INFO, logging.DEBUG)
FORMAT = "runport: %(levelname)s %(name)s: %(message)s"


class _Formatter(logging.Formatter):
    """One line per record; the traceback a record carries only when asked for with ``-vv``."""

    def __init__(self, tracebacks: bool) -> None:
        super().__init__(FORMAT)
        self._tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        if self._tracebacks or not record.exc_info:
            return super().format(record)
        bare = logging.makeLogRecord(record.__dict__)
        bare.exc_info = None
        bare.exc_text = None
        return super().format(bare)


@contextmanager
def verbose_logging(verbosity: int) -> Iterator[None]:
    """A stderr handler on the ``runport`` logger for the command's duration, removed after,
    so a command run in-process (as the tests do) leaves the logging tree as it found it."""
    logger = logging.getLogger("runport")
    if verbosity <= 0:
        # A handler that drops every record: without any, Python's last-resort handler would
        # print warnings and errors (tracebacks included) beside the command's one line.
        quiet = logging.NullHandler()
        logger.addHandler(quiet)
        try:
            yield
        finally:
            logger.removeHandler(quiet)
        return
    handler = logging.StreamHandler(sys.stderr)
    level = LEVELS[min(verbosity, len(LEVELS)) - 1]
    handler.setFormatter(_Formatter(tracebacks=level == logging.DEBUG))
    handler.setLevel(level)
    before = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)
