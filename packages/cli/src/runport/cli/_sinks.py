"""Which sink ``runport run --stream`` / ``--json`` writes through, chosen by where stdout
goes: JSON lines for ``--json``, rich rendering on a TTY, plain text otherwise.

Rich is imported only on the TTY path, so piped runs and every other command start without
paying for it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, TextIO

from runport.cli._output import JsonLines, PlainStream
from runport.cli._safe import raw
from runport.contracts import OperationEnvelope, StreamEvent

if TYPE_CHECKING:
    from rich.console import Console


class EventSink(Protocol):
    """What a run hands every event to."""

    def __call__(self, event: StreamEvent) -> None: ...


class StreamSink(Protocol):
    """What ``runport run`` hands to ``execute_contract`` as ``on_event``."""

    def __call__(self, event: StreamEvent) -> None: ...

    def finish(self, envelope: OperationEnvelope) -> None: ...


def _terminal(out: TextIO | None) -> tuple[TextIO, Console | None]:
    """Where the output goes, and a rich console on it when that is a terminal."""
    stream = sys.stdout if out is None else out
    if not stream.isatty():
        return stream, None
    from rich.console import Console

    return stream, Console(file=raw(stream), highlight=False)


@contextmanager
def stream_sink(*, json_lines: bool, out: TextIO | None = None) -> Iterator[StreamSink]:
    """The sink for ``runport run --stream`` / ``--json``, chosen by where stdout goes.

    A context manager so the live display is stopped (cursor restored) however the run ends.
    """
    stream, console = _terminal(out)
    if json_lines or console is None:
        yield JsonLines(stream) if json_lines else PlainStream(stream)
        return
    from runport.cli._terminal import RichStream

    rich_sink = RichStream(console)
    rich_sink.start()
    try:
        yield rich_sink
    finally:
        rich_sink.stop()


@contextmanager
def run_sink(*, json_lines: bool, out: TextIO | None = None) -> Iterator[EventSink]:
    """The ``on_event`` of ``runport run --tools --stream`` / ``--json``, chosen the same way."""
    stream, console = _terminal(out)
    if json_lines or console is None:
        from runport.cli._run_tools import TurnStream

        yield JsonLines(stream) if json_lines else TurnStream(stream)
        return
    from runport.cli._terminal import RichTurns

    turns = RichTurns(console)
    try:
        yield turns
    finally:
        turns.stop()
