"""Which of a run's ``OutputSnapshot``\\s a surface sends whole (ADR 0033).

A run makes a snapshot after every ``Delta`` that changed the structured answer, and each
snapshot is the whole answer so far: cheap in process, where a snapshot's value is built only
when read, but a surface that writes each one out whole (runport's own event stream, the UI
message stream's data part, an MCP progress notification) would send a 1 MB answer as
gigabytes. ``SnapshotPace`` thins them so that what is sent stays linear in the answer: while
the answer is shorter than ``every_below`` characters every snapshot goes out (a short answer
fills in delta by delta, and costs a bounded amount whatever its deltas); past it, a snapshot
goes out once the answer grew by a ``ratio``-th of what it was at the last one sent. The
snapshots between are folded into the next one sent (their ``completed`` pointers and
``problems`` carried on, in order), and whatever is held goes out before any event that is not
a fragment of the answer (``Complete``, ``Failed``, a ``ToolResult``), so the last snapshot of
a turn is always sent and still equals its output. The rule counts characters, not time: the
same stream is always thinned the same way.
"""

from __future__ import annotations

from typing import Final

from runport.contracts import (
    Delta,
    Diagnostic,
    OutputSnapshot,
    ReasoningDelta,
    RunEvent,
    ToolCallDelta,
)

DEFAULT_SNAPSHOT_EVERY_BELOW: Final = 1024
"""An answer shorter than this many characters has every snapshot sent."""

DEFAULT_SNAPSHOT_RATIO: Final = 32
"""A snapshot is sent once the answer grew by this fraction (1/N) of its length at the last
one sent: the snapshots of an answer of n characters then weigh about N·n together."""

_FRAGMENTS: Final = (ReasoningDelta, ToolCallDelta)


class SnapshotPace:
    """Thins one run's events for a surface: call it with each event in order; it returns the
    events to send, in order (the event itself, nothing while a snapshot is held, or a held
    snapshot followed by the event)."""

    __slots__ = ("_below", "_chars", "_completed", "_held", "_problems", "_ratio", "_sent_at")

    def __init__(
        self,
        *,
        every_below: int = DEFAULT_SNAPSHOT_EVERY_BELOW,
        ratio: int = DEFAULT_SNAPSHOT_RATIO,
    ) -> None:
        if every_below < 0 or ratio < 1:
            raise ValueError(
                f"every_below must be at least 0 and ratio at least 1, not {every_below} "
                f"and {ratio}"
            )
        self._below = every_below
        self._ratio = ratio
        self._chars = 0
        self._sent_at = 0
        self._held: OutputSnapshot | None = None
        self._completed: list[str] = []
        self._problems: list[Diagnostic] = []

    def __call__(self, event: RunEvent) -> tuple[RunEvent, ...]:
        if type(event) is Delta:
            self._chars += len(event.text)
            return (event,)
        if isinstance(event, OutputSnapshot):
            return self._snapshot(event)
        if isinstance(event, _FRAGMENTS):
            return (event,)
        # The end of a turn, a tool's result, a rejection: what is held goes first, and the
        # next turn's answer is counted afresh.
        held = self._release()
        self._chars = self._sent_at = 0
        return (event,) if held is None else (held, event)

    def _snapshot(self, snapshot: OutputSnapshot) -> tuple[RunEvent, ...]:
        if self._held is not None:
            # folded into this one: only its pointers and problems are read, never its value
            self._completed.extend(self._held.completed)
            self._problems.extend(self._held.problems)
        self._held = snapshot
        chars = self._chars
        if chars >= self._below and (chars - self._sent_at) * self._ratio < self._sent_at:
            return ()
        self._sent_at = chars
        released = self._release()
        assert released is not None
        return (released,)

    def _release(self) -> OutputSnapshot | None:
        held = self._held
        if held is None:
            return None
        self._held = None
        if not self._completed and not self._problems:
            return held
        completed, self._completed = [*self._completed, *held.completed], []
        problems, self._problems = [*self._problems, *held.problems], []
        return OutputSnapshot.model_construct(
            value=held.value, completed=completed, problems=problems
        )
