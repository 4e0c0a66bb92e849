"""Watching one call: the recording sink, the outcome, and failure messages worth reading.

Every call the suite makes runs on a worker thread it joins with a bound (an async adapter's
call runs as a task on the harness's event loop, awaited with the same bound), so an adapter
that hangs fails its test with a message instead of hanging the run; the adapter still sees one
caller thread, and the sink checks it is called on that thread. Failure messages name the law
item, the case and the event sequences seen and expected, rendered compactly, with the first
difference marked; the same facts ride on the failure for the plugin's report.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import traceback
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn, get_args

import pytest

from runport.conformance._upstream import Pacer
from runport.contracts import (
    Citation,
    Complete,
    Delta,
    ExecutionReceipt,
    Failed,
    FileDelta,
    ProgressEvent,
    ReasoningDelta,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
    ToolCallDelta,
)
from runport.ports import PortError

__all__ = [
    "CALL_BOUND",
    "LAWS",
    "CallerStop",
    "Outcome",
    "Recorder",
    "broken",
    "first_difference",
    "observe",
    "render_events",
]

PROGRESS: Final = get_args(ProgressEvent)
"""The progress events (``runport.contracts.ProgressEvent``; law 4 paces every one of
them)."""

CALL_BOUND: Final = 45.0
"""Seconds one adapter call may take before the suite calls it hung."""

LAWS: Final = {
    1: "law 1 (grammar)",
    2: "law 2 (same result)",
    3: "law 3 (assembly)",
    4: "law 4 (order and promptness)",
    5: "law 5 (failure projection)",
    6: "law 6 (caller stop)",
    7: "law 7 (single attempt)",
    8: "law 8 (bounds)",
    9: "law 9 (truncation)",
    10: "law 10 (no secrets)",
}


class CallerStop(Exception):
    """What the suite's sink raises to stop a call (law 6): it must come back unwrapped."""


def _short(text: str, limit: int = 18) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def render_event(event: object) -> str:
    if isinstance(event, Delta):
        return f"D{_short(event.text)}"
    if isinstance(event, ReasoningDelta):
        return f"R{_short(event.text)}"
    if isinstance(event, ToolCallDelta):
        return f"T{event.index}[{event.call_id} {event.name}]{_short(event.arguments_fragment)}"
    if isinstance(event, ServerToolCall):
        return f"ServerToolCall[{event.call_id} {event.name}]"
    if isinstance(event, ServerToolResult):
        return f"ServerToolResult[{event.call_id} {event.name}]"
    if isinstance(event, Citation):
        return f"Citation[{event.source.url or event.source.type} {event.start}:{event.end}]"
    if isinstance(event, FileDelta):
        return f"FileDelta[{event.media_type}{' partial' if event.partial else ''}]"
    if isinstance(event, Complete):
        receipt = event.receipt
        parts = [f"text={_short(receipt.text)}" if receipt.text is not None else "no text"]
        if receipt.tool_calls:
            parts.append(f"{len(receipt.tool_calls)} call(s)")
        return f"Complete({', '.join(parts)})"
    if isinstance(event, Failed):
        return f"Failed({event.code})"
    return f"<not a StreamEvent: {type(event).__name__}>"


def render_events(events: Sequence[object], *, focus: int | None = None) -> str:
    """Events on one line; long sequences keep their ends and the window around ``focus``."""
    if not events:
        return "(none)"
    if len(events) <= 16:
        line = " ".join(_marked(index, event, focus) for index, event in enumerate(events))
        if focus is not None and focus >= len(events):
            line += f" >>#{focus}:(nothing)"
        return line
    keep = set(range(5)) | set(range(len(events) - 4, len(events)))
    if focus is not None:
        keep |= set(range(max(0, focus - 2), min(len(events), focus + 3)))
    parts: list[str] = []
    skipped = 0
    for index, event in enumerate(events):
        if index in keep:
            if skipped:
                parts.append(f"…({skipped} more)…")
                skipped = 0
            parts.append(_marked(index, event, focus))
        else:
            skipped += 1
    if skipped:
        parts.append(f"…({skipped} more)…")
    return f"[{len(events)} events] " + " ".join(parts)


def _marked(index: int, event: object, focus: int | None) -> str:
    return f">>#{index}:{render_event(event)}" if index == focus else render_event(event)


def first_difference(seen: Sequence[object], expected: Sequence[object]) -> int | None:
    for index, (one, other) in enumerate(zip(seen, expected, strict=False)):
        if one != other:
            return index
    if len(seen) != len(expected):
        return min(len(seen), len(expected))
    return None


@dataclass
class Outcome:
    """What one call did: the events its sink got, and how it ended."""

    events: list[StreamEvent] = field(default_factory=list)
    after_stop: list[StreamEvent] = field(default_factory=list)
    receipt: ExecutionReceipt | None = None
    error: BaseException | None = None
    stop: CallerStop | None = None
    foreign_threads: int = 0
    hung: bool = False
    cancelled_at: int | None = None
    """The event after which the suite cancelled the calling task (async calls)."""
    unawaited: list[int] = field(default_factory=list)
    """Events whose awaitable (the sink returned one) the adapter did not await first."""
    logs: list[str] = field(default_factory=list)
    streamed: bool = True
    requests: list[Any] = field(default_factory=list)
    """What a served upstream recorded of this call's requests, as the call returned (the
    harness fills it; the ``RecordedRequest`` of each)."""

    @property
    def progress(self) -> list[StreamEvent]:
        return [event for event in self.events if isinstance(event, PROGRESS)]

    @property
    def terminals(self) -> list[StreamEvent]:
        return [event for event in self.events if isinstance(event, Complete | Failed)]

    def ending(self) -> str:
        """How the call ended, for messages: the receipt, or the exception it raised."""
        if self.hung:
            return f"did not return within {CALL_BOUND:g} s"
        if self.error is None:
            return "returned a receipt" if self.receipt is not None else "returned nothing"
        if isinstance(self.error, PortError):
            extra = (
                ""
                if self.error.retry_after_ms is None
                else f" retry_after_ms={self.error.retry_after_ms}"
            )
            said = _short(self.error.message, 160) if self.error.message else "no message"
            return f"raised PortError({self.error.code}{extra}): {said}"
        if self.error is self.stop:
            return "let the sink's exception propagate"
        if isinstance(self.error, asyncio.CancelledError):
            return "let the cancellation propagate"
        return f"raised {type(self.error).__name__}: {self.error}"

    def unexpected(self) -> str | None:
        """A traceback for an exception that is neither a ``PortError`` nor the sink's own."""
        if (
            self.error is None
            or isinstance(self.error, PortError | asyncio.CancelledError)
            or self.error is self.stop
        ):
            return None
        return "".join(traceback.format_exception(self.error)).rstrip()


class Recorder:
    """The sink the suite hands adapters: records, paces, and stops on request.

    ``raise_at`` is the index (over all events) at which it raises a ``CallerStop``;
    ``cancel_at`` the index after which it cancels the calling task (async calls); events that
    arrive after either are kept apart in ``after_stop`` (law 6 wants none). With ``awaiting``
    it returns an awaitable for every event and notes each the adapter did not await before
    it delivered the next event (backpressure).
    """

    def __init__(
        self,
        outcome: Outcome,
        *,
        pacer: Pacer | None = None,
        raise_at: int | None = None,
        cancel_at: int | None = None,
        awaiting: bool = False,
    ) -> None:
        self.outcome = outcome
        self.pacer = pacer
        self.raise_at = raise_at
        self.cancel_at = cancel_at
        self.awaiting = awaiting
        self.thread: int | None = None
        self.pending: _Hold | None = None
        self._progress = 0

    def __call__(self, event: StreamEvent) -> Awaitable[None] | None:
        outcome = self.outcome
        if threading.get_ident() != self.thread:
            outcome.foreign_threads += 1
        self.check_awaited()
        if outcome.stop is not None or outcome.cancelled_at is not None:
            outcome.after_stop.append(event)
            return None
        outcome.events.append(event)
        index = len(outcome.events) - 1
        if self.raise_at is not None and index == self.raise_at:
            outcome.stop = CallerStop(f"the caller stopped at event #{self.raise_at}")
            if self.pacer is not None:
                self.pacer.stop()
            raise outcome.stop
        if self.cancel_at is not None and index == self.cancel_at:
            outcome.cancelled_at = index
            if self.pacer is not None:
                self.pacer.stop()
            task = asyncio.current_task()
            if task is not None:
                task.cancel()
            return _Hold(index)  # a suspension point, where the cancellation lands
        if isinstance(event, PROGRESS):
            self._progress += 1
            if self.pacer is not None:
                self.pacer.saw(self._progress)
        elif self.pacer is not None:
            self.pacer.end()
        if self.awaiting:
            self.pending = _Hold(index)
            return self.pending
        return None

    def check_awaited(self) -> None:
        """Note the previous event's awaitable if the adapter moved on without awaiting it."""
        if self.pending is not None and not self.pending.done:
            self.outcome.unawaited.append(self.pending.index)
        self.pending = None


class _Hold:
    """What an awaiting sink returns: it suspends its awaiter a few times, like a consumer
    that takes a moment, and records that it was awaited to the end."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.done = False

    def __await__(self) -> Generator[Any, None, None]:
        for _ in range(3):
            yield from asyncio.sleep(0).__await__()
        self.done = True


_FORMATTER = logging.Formatter("%(name)s %(levelname)s %(message)s")


class _LogCapture(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        try:
            # formatted whole, so a secret in a logged exception's traceback is seen too
            self.into.append(_FORMATTER.format(record))
        except Exception:  # a broken log call must not break the check
            self.into.append(str(record.msg))


def observe(
    call: Callable[[Recorder | None], Any],
    *,
    streamed: bool,
    pacer: Pacer | None = None,
    raise_at: int | None = None,
    cancel_at: int | None = None,
    awaiting: bool = False,
    capture_logs: bool = False,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Outcome:
    """Run ``call`` with a recording sink when ``streamed``, bounded by ``CALL_BOUND``: on a
    worker thread, or — given the harness's ``loop`` — as a task there (``call`` then returns
    an awaitable)."""
    outcome = Outcome(streamed=streamed)
    recorder = (
        Recorder(outcome, pacer=pacer, raise_at=raise_at, cancel_at=cancel_at, awaiting=awaiting)
        if streamed
        else None
    )
    handler = _LogCapture(outcome.logs) if capture_logs else None
    root = logging.getLogger()
    level = root.level
    if handler is not None:
        root.addHandler(handler)
        root.setLevel(logging.DEBUG)
    if pacer is not None:
        pacer.start_call()

    def run() -> None:
        if recorder is not None:
            recorder.thread = threading.get_ident()
        try:
            outcome.receipt = call(recorder)
        except BaseException as error:
            outcome.error = error

    async def run_task() -> None:
        if recorder is not None:
            recorder.thread = threading.get_ident()
        try:
            outcome.receipt = await call(recorder)
        except BaseException as error:  # a cancellation included: it is the outcome
            outcome.error = error
        if recorder is not None:
            recorder.check_awaited()

    try:
        if loop is None:
            worker = threading.Thread(target=run, name="runport-conformance-call", daemon=True)
            worker.start()
            worker.join(CALL_BOUND)
            outcome.hung = worker.is_alive()
        else:
            future = asyncio.run_coroutine_threadsafe(run_task(), loop)
            try:
                future.result(CALL_BOUND)
            except TimeoutError:
                outcome.hung = True
                future.cancel()
    finally:
        if pacer is not None:
            pacer.end()
        if handler is not None:
            root.removeHandler(handler)
            root.setLevel(level)
    return outcome


def broken(
    law: int | str,
    case: str,
    problem: str,
    *,
    seen: Sequence[object] | None = None,
    expected: Sequence[object] | None = None,
    outcome: Outcome | None = None,
) -> NoReturn:
    """Fail the running test with the law item, the case, and the sequences that disagree.

    The failure carries the same facts as ``runport_violation`` (a dict), which the plugin
    turns into its report and JUnit XML properties."""
    title = LAWS[law] if isinstance(law, int) else law
    lines = [f"{title} broken — case {case!r}: {problem}"]
    facts: dict[str, str] = {"law": title, "case": case, "problem": problem}
    focus = None
    if seen is not None and expected is not None:
        focus = first_difference(seen, expected)
        if focus is not None:
            lines.append(f"  first difference at event #{focus} (marked >>)")
            facts["first_difference"] = str(focus)
    if seen is None and outcome is not None:
        seen = outcome.events
    if seen is not None:
        facts["observed"] = render_events(seen, focus=focus)
        lines.append(f"  seen:     {facts['observed']}")
    if expected is not None:
        facts["expected"] = render_events(expected, focus=focus)
        lines.append(f"  expected: {facts['expected']}")
    if outcome is not None:
        lines.append(f"  the call {outcome.ending()}")
        trace = outcome.unexpected()
        if trace:
            lines.append("  " + trace.replace("\n", "\n  "))
    failure = pytest.fail.Exception("\n".join(lines), pytrace=False)
    failure.runport_violation = facts  # type: ignore[attr-defined]
    raise failure
