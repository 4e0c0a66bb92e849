"""``astream``: one streamed turn as an async iterator (docs/async.md)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Mapping
from types import TracebackType
from typing import Any

from runport.application._async import aexecute_contract
from runport.application._driver import EventDriver
from runport.application._envelope import ContractSource
from runport.contracts import OperationEnvelope, StreamEvent
from runport.ports import AsyncRuntimeAdapter, AsyncSink


class EventStream:
    """The value of ``async with astream(...)``: iterate it for the turn's events, then read
    ``envelope``.

    The turn is driven by the iteration (``runport.application``'s one ``EventDriver``): each
    step of the ``async for`` resumes the turn where its sink's await left it, so a slow
    consumer holds the adapter back, and a turn whose events need no waiting costs no task
    switch per event. The turn runs as a task of its own, so its deadline cancels the turn,
    never the consumer. An event is kept from the moment it is handed over, so one whose
    wait the adapter's deadline cut off is still yielded, in order: the iterator yields
    exactly the envelope's ``stream_events``. Leaving the ``async with`` block before the last
    event is a caller stop: the turn's task is cancelled, which makes the adapter close its
    upstream, and there is no envelope.
    """

    def __init__(
        self,
        contract_or_path: ContractSource,
        adapter: AsyncRuntimeAdapter,
        inputs: Mapping[str, Any] | None,
        context: Mapping[str, Any] | None,
    ) -> None:
        def turn(sink: AsyncSink) -> Awaitable[OperationEnvelope]:
            return aexecute_contract(
                contract_or_path, adapter, inputs=inputs, context=context, on_event=sink
            )

        self._driver: EventDriver[StreamEvent, OperationEnvelope] = EventDriver(turn)
        self._entered = False

    async def __aenter__(self) -> EventStream:
        if self._entered:
            raise RuntimeError("an astream(...) block can be entered only once")
        self._entered = True
        await self._driver.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self._driver.stop()

    def __aiter__(self) -> EventDriver[StreamEvent, OperationEnvelope]:
        self._running()
        return self._driver

    async def __anext__(self) -> StreamEvent:
        self._running()
        return await self._driver.__anext__()

    @property
    def envelope(self) -> OperationEnvelope:
        """The envelope ``aexecute_contract`` returns for this turn, ``stream_events``
        included; there is none before the last event, nor after leaving early."""
        self._running()
        try:
            return self._driver.result()
        except RuntimeError:
            raise RuntimeError(
                "the stream was not read to its end, so the turn has no envelope"
            ) from None

    def _running(self) -> None:
        if not self._entered:
            raise RuntimeError("use astream(...) as `async with astream(...) as events:`")


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
