"""``astream``: one streamed turn as an async iterator (docs/async.md)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from runport.application._contract import ContractSource
from runport.application._execute import aexecute_contract
from runport.contracts import OperationEnvelope, StreamEvent
from runport.ports import AsyncRuntimeAdapter


class EventStream:
    """The value of ``async with astream(...)``: iterate it for the turn's events, then read
    ``envelope``.

    The turn runs in a task of its own that hands each event over and waits until the
    iterator took it, so a slow consumer holds the adapter back. An event is kept from the
    moment it is handed over, so one whose wait the adapter's deadline cut off is still
    yielded, in order: the iterator yields exactly the envelope's ``stream_events``. Leaving
    the ``async with`` block before the last event is a caller stop: the task is cancelled,
    which makes the adapter close its upstream, and there is no envelope.
    """

    def __init__(
        self,
        contract_or_path: ContractSource,
        adapter: AsyncRuntimeAdapter,
        inputs: Mapping[str, Any] | None,
        context: Mapping[str, Any] | None,
    ) -> None:
        self._call = (contract_or_path, adapter, inputs, context)
        self._pending: deque[tuple[StreamEvent, asyncio.Future[None]]] = deque()
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[OperationEnvelope] | None = None
        self._finished = False

    async def __aenter__(self) -> EventStream:
        if self._task is not None:
            raise RuntimeError("an astream(...) block can be entered only once")
        contract_or_path, adapter, inputs, context = self._call
        self._task = asyncio.ensure_future(
            aexecute_contract(
                contract_or_path, adapter, inputs=inputs, context=context, on_event=self._hand_over
            )
        )
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> StreamEvent:
        task = self._running()
        if self._finished:
            raise StopAsyncIteration
        while not self._pending and not task.done():
            self._arrived.clear()
            arrival = asyncio.ensure_future(self._arrived.wait())
            try:
                await asyncio.wait({arrival, task}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                arrival.cancel()
        if self._pending:
            event, taken = self._pending.popleft()
            if not taken.done():
                taken.set_result(None)
            return event
        self._finished = True
        task.result()  # an unexpected error of the turn surfaces here
        raise StopAsyncIteration

    async def _hand_over(self, event: StreamEvent) -> None:
        """The turn's sink: keep ``event`` for the iterator, then wait until it is taken."""
        taken = asyncio.get_running_loop().create_future()
        self._pending.append((event, taken))
        self._arrived.set()
        await taken

    @property
    def envelope(self) -> OperationEnvelope:
        """The envelope ``aexecute_contract`` returns for this turn, ``stream_events``
        included; there is none before the last event, nor after leaving early."""
        task = self._running()
        if not task.done() or task.cancelled():
            raise RuntimeError("the stream was not read to its end, so the turn has no envelope")
        return task.result()

    def _running(self) -> asyncio.Task[OperationEnvelope]:
        if self._task is None:
            raise RuntimeError("use astream(...) as `async with astream(...) as events:`")
        return self._task


def astream(
    contract_or_path: ContractSource,
    adapter: AsyncRuntimeAdapter,
    *,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
) -> EventStream:
    """Stream one turn: ``async with astream(contract, adapter, inputs=…) as events:``
    ``async for event in events: …``, then ``events.envelope``.

    ``inputs=None`` means no inputs. Leaving the block before the last event is a caller stop.
    """
    return EventStream(contract_or_path, adapter, inputs, context)
