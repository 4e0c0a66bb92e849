"""Passing a callee's events on to the caller while noting what the caller saw.

Every place that sits between an adapter and a sink — ``execute_contract``, a run's turn,
``Fallback`` — does the same: note the event, maybe hold it back, pass it on, and remember
when the caller's own sink raised (that exception is the caller's, never a runtime failure).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from types import CoroutineType
from typing import Protocol

from runport.contracts import Complete, Delta, ExecutionReceipt, Failed, StreamEvent
from runport.core import redact_secrets
from runport.ports import AsyncSink, PortError, Sink

__all__ = ["Relayed", "TurnWatch", "arelay", "failure_message", "relay"]


class Relayed(Protocol):
    """What a relay reports to: ``passes`` decides, ``stopped`` records the caller's raise."""

    stopped: BaseException | None

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


def relay(watch: Relayed, target: Sink) -> Sink:
    """A sink that passes what ``watch`` lets through on to ``target`` (a ``Failed`` with its
    message redacted, as :func:`failure_message`)."""

    def sink(event: StreamEvent) -> None:
        event = _told(event)
        if watch.passes(event):
            try:
                target(event)
            except BaseException as error:
                watch.stopped = error
                raise

    return sink


def arelay(watch: Relayed, target: AsyncSink) -> AsyncSink:
    """``relay`` for an async sink: what ``target`` returns is passed on (a plain sink's
    ``None`` as it is, so nothing is awaited), watched for the caller's raise."""

    def sink(event: StreamEvent) -> Awaitable[None] | None:
        event = _told(event)
        if not watch.passes(event):
            return None
        try:
            result = target(event)
        except BaseException as error:
            watch.stopped = error
            raise
        if result is None or not (type(result) is CoroutineType or inspect.isawaitable(result)):
            return None
        return _watched(watch, result)

    return sink


async def _watched(watch: Relayed, result: Awaitable[None]) -> None:
    try:
        await result
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

    def __init__(self) -> None:
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
