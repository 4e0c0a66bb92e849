"""Passing a callee's events on to the caller while noting what the caller saw.

Every place that sits between an adapter and a sink — ``execute_contract``, a run's turn,
``Fallback`` — does the same: note the event, maybe hold it back, pass it on, and remember
when the caller's own sink raised (that exception is the caller's, never a runtime failure).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from types import CoroutineType
from typing import Protocol, cast

from runport.application._driver import HELD
from runport.application._partial import Snapshots
from runport.contracts import (
    Complete,
    Delta,
    ExecutionReceipt,
    Failed,
    RunEvent,
    StreamEvent,
)
from runport.core import redact_secrets
from runport.ports import AsyncSink, PortError, Sink, deliver

__all__ = [
    "AsyncRunSink",
    "Relayed",
    "RunSink",
    "TurnWatch",
    "arelay",
    "arelay_kept",
    "failure_message",
    "relay",
]

RunSink = Callable[[RunEvent], None]
"""What a run hands its events to: every turn's ``StreamEvent``s and what the run adds."""

AsyncRunSink = Callable[[RunEvent], Awaitable[None] | None]
"""``RunSink`` on the event loop: a plain callable, or one returning an awaitable."""


class Relayed(Protocol):
    """What a relay reports to: ``passes`` decides, ``stopped`` records the caller's raise,
    ``partial`` (when set) turns the answer's text into ``OutputSnapshot``s for the caller."""

    stopped: BaseException | None
    partial: Snapshots | None

    def passes(self, event: StreamEvent) -> bool: ...


def failure_message(error: PortError) -> str:
    """An adapter's failure as the caller is told it: without the credentials an upstream may
    have echoed into it (``runport.core.redact_secrets``), whoever wrote the adapter."""
    return redact_secrets(error.message)


def _told(event: StreamEvent) -> StreamEvent:
    if isinstance(event, Failed):
        message = redact_secrets(event.message)
        if message != event.message:
            return event.model_copy(update={"message": message})
    return event


def relay(watch: Relayed, target: Sink | RunSink) -> Sink:
    """A sink that passes what ``watch`` lets through on to ``target`` (a ``Failed`` with its
    message redacted, as :func:`failure_message`). When ``watch.partial`` parses the answer,
    ``target`` takes every ``RunEvent``: each ``Delta`` is followed by the snapshot it made,
    and the answer's ``Complete`` is preceded by the one its end made (a value only the end
    completes, such as a top-level number) — at most one per event."""
    deliver_to = cast(RunSink, target)
    passes = watch.passes

    def sink(event: StreamEvent) -> None:
        delta = type(event) is Delta  # the common event, told apart without isinstance
        if not delta and isinstance(event, Failed):
            event = _told(event)
        if not passes(event):
            return
        partial = watch.partial
        try:
            if partial is None:
                deliver_to(event)
            elif delta:
                deliver_to(event)
                snapshot = partial.feed(event.text)  # type: ignore[union-attr]  # a Delta
                if snapshot is not None:
                    deliver_to(snapshot)
            else:
                if isinstance(event, Complete):
                    last = partial.close()
                    if last is not None:
                        deliver_to(last)
                deliver_to(event)
        except BaseException as error:
            watch.stopped = error
            raise

    return sink


def arelay(watch: Relayed, target: AsyncSink | AsyncRunSink) -> AsyncSink:
    """``relay`` for an async sink: what ``target`` returns is passed on (a plain sink's
    ``None`` as it is, so nothing is awaited), watched for the caller's raise."""
    deliver_to = cast(AsyncRunSink, target)
    passes = watch.passes

    def sink(event: StreamEvent) -> Awaitable[None] | None:
        delta = type(event) is Delta
        if not delta and isinstance(event, Failed):
            event = _told(event)
        if not passes(event):
            return None
        partial = watch.partial
        before = after = None
        if partial is not None:
            if delta:
                after = partial.feed(event.text)  # type: ignore[union-attr]  # a Delta
            elif isinstance(event, Complete):
                before = partial.close()
        try:
            if before is not None:
                result = deliver_to(before)
                if _awaitable(result):
                    assert result is not None
                    return _watched(watch, result, deliver_to, (event,))
            result = deliver_to(event)
            if not _awaitable(result):
                if after is None:
                    return None
                result, after = deliver_to(after), None
                if not _awaitable(result):
                    return None
        except BaseException as error:
            watch.stopped = error
            raise
        assert result is not None
        return _watched(watch, result, deliver_to, () if after is None else (after,))

    return sink


def arelay_kept(
    watch: Relayed, kept: list[StreamEvent], target: AsyncSink | AsyncRunSink
) -> AsyncSink:
    """``arelay`` for a watch that lets every event through into ``kept`` and makes no
    snapshots (a turn's ``Call`` without ``partial_output``), with that ``passes`` inlined;
    ``EventDriver``'s hand-over is passed on as it is, with no coroutine around it.

    The hand-over's only raise is the cancellation of the call's task (a deadline, a caller
    stop), never the caller's own exception, and ``Call`` tells the caller's raise from the
    adapter's only among ``Exception``s: not noting it loses nothing."""
    deliver_to = cast(AsyncRunSink, target)
    keep = kept.append

    def sink(event: StreamEvent) -> Awaitable[None] | None:
        if type(event) is not Delta and isinstance(event, Failed):
            event = _told(event)
        keep(event)
        try:
            result = deliver_to(event)
        except BaseException as error:
            watch.stopped = error
            raise
        if result is None or result is HELD:
            return result
        if _awaitable(result):
            return _watched(watch, result, deliver_to, ())
        return None

    return sink


def _awaitable(result: Awaitable[None] | None) -> bool:
    return result is not None and (type(result) is CoroutineType or inspect.isawaitable(result))


async def _watched(
    watch: Relayed,
    result: Awaitable[None],
    deliver_to: AsyncRunSink,
    then: tuple[RunEvent, ...],
) -> None:
    """Await what the caller's sink returned, then hand it the events ``then`` holds."""
    try:
        await result
        for event in then:
            await deliver(deliver_to, event)
    except BaseException as error:
        watch.stopped = error
        raise


class TurnWatch:
    """What the caller saw of one streamed attempt.

    A ``Failed`` is held back, not shown: whether the caller sees it depends on whether the
    run retries the turn (then it never does) or gives up (then it is shown, once). Every
    progress event counts as shown, ``ReasoningDelta`` included; only ``Delta`` text is the
    partial answer (``text``).
    """

    def __init__(self, partial: Snapshots | None = None) -> None:
        self.partial = partial
        self.text: list[str] = []
        self.completed: list[ExecutionReceipt] = []
        self.held: Failed | None = None
        self.shown = False
        self.stopped: BaseException | None = None

    def passes(self, event: StreamEvent) -> bool:
        """Note ``event``; ``True`` when it goes on to the caller now."""
        if isinstance(event, Failed):
            self.held = self.held or event
            return False
        if isinstance(event, Delta):
            self.text.append(event.text)
        if isinstance(event, Complete):
            self.completed.append(event.receipt)
        else:
            self.shown = True
        return True
