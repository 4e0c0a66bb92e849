"""``-v``/``--verbose``: where the packages' log records go while a command runs.

The libraries log to ``runport.<package>`` and install no handler; the command is the
application, so it decides. Without ``-v`` warnings and errors (a retry, a fallback moving on, a
failure the MCP server survived) reach stderr; ``-v`` adds INFO, ``-vv`` the wire's DEBUG lines.
No record holds a key, a body or model text (docs/observability.md).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

LEVELS = (logging.WARNING, logging.INFO, logging.DEBUG)
FORMAT = "runport: %(levelname)s %(name)s: %(message)s"


@contextmanager
def verbose_logging(verbosity: int) -> Iterator[None]:
    """A stderr handler on the ``runport`` logger for the command's duration, removed after,
    so a command run in-process (as the tests do) leaves the logging tree as it found it."""
    logger = logging.getLogger("runport")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    level = LEVELS[min(max(verbosity, 0), len(LEVELS) - 1)]
    handler.setLevel(level)
    before = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)
