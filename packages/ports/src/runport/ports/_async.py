from __future__ import annotations

import asyncio
import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from types import CoroutineType
from typing import Final, TypeVar

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    PortError,
    StreamEvent,
)

AsyncSink = Callable[[StreamEvent], Awaitable[None] | None]
"""Receives every event of an async streamed call, in the caller's task, in order.

A plain callable, or one that returns an awaitable: the adapter awaits it before it reads any
further from its upstream, which is how a slow consumer holds a fast upstream back."""


_Event = TypeVar("_Event")


async def deliver(sink: Callable[[_Event], Awaitable[None] | None], event: _Event) -> None:
    """Hand ``event`` to ``sink`` and await it when it returned an awaitable: an adapter's
    ``StreamEvent`` to an ``AsyncSink``, and a run's ``RunEvent`` to its async sink alike."""
    result = sink(event)
    if result is not None and (type(result) is CoroutineType or inspect.isawaitable(result)):
        await result


TERMINAL_GRACE_S: Final = 1.0
"""How long a call's terminal event is awaited once the call's own time is spent."""

_log = logging.getLogger("runport.ports")


async def deliver_terminal(sink: AsyncSink, event: StreamEvent, seconds_left: float) -> None:
    """Hand a call's terminal event to ``sink``, awaiting it for the ``seconds_left`` before
    the call's deadline, or ``TERMINAL_GRACE_S`` when less is left.

    A sink still busy then is cancelled and the call goes on to its end: a sink that never
    returns cannot hold a call past its deadline (by more than the grace). What the sink
    raises itself, a ``TimeoutError`` of its own included, propagates unchanged.
    """
    result = sink(event)
    if result is None or not inspect.isawaitable(result):
        return
    limit = asyncio.timeout(max(seconds_left, TERMINAL_GRACE_S))
    try:
        async with limit:
            await result
    except TimeoutError:
        if not limit.expired():
            raise  # the sink's own
        _log.warning(
            "the event sink did not return from the call's %s event in time; stopped waiting",
            event.kind,
        )


class AsyncRuntimeAdapter(ABC):
    """The runtime port on the event loop: ``RuntimeAdapter``'s twin, name for name.

    The same streaming law holds, with one addition: cancelling the calling task is a caller
    stop. The adapter closes its upstream, sends nothing more, lets ``asyncio.CancelledError``
    propagate and stays usable. Adapters bind to no event loop when constructed.

    ``execute_streaming`` has a default for adapters that cannot stream: it awaits ``execute``
    and sends one terminal event — ``Complete`` with the receipt, or ``Failed`` with the
    ``PortError``'s code before re-raising it.
    """

    @abstractmethod
    def descriptor(self) -> AdapterDescriptor: ...

    @abstractmethod
    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt: ...

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        try:
            receipt = await self.execute(request)
        except PortError as error:
            await deliver(sink, Failed(code=error.code, message=error.message))
            raise
        await deliver(sink, Complete(receipt=receipt))
        return receipt
