"""Interim: ``astream_run``'s shape over ``arun_stream``, until the application has it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from runport.application import arun_stream
from runport.contracts import Message, RunEvent
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter

_END = object()


@contextlib.asynccontextmanager
async def astream_run(
    contract: Contract,
    adapter: AsyncRuntimeAdapter,
    *,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    tools: Sequence[Any] = (),
    history: Sequence[Message] | None = None,
    partial_output: bool = False,
) -> AsyncIterator[AsyncIterator[RunEvent]]:
    queue: asyncio.Queue[object] = asyncio.Queue(maxsize=1)

    async def drive() -> None:
        try:
            await arun_stream(
                contract,
                adapter,
                inputs=inputs,
                context=context,
                tools=tools,
                history=history,
                on_event=queue.put,
            )
        except Exception as error:
            await queue.put(error)
            return
        await queue.put(_END)

    task = asyncio.ensure_future(drive())

    async def events() -> AsyncIterator[RunEvent]:
        while True:
            item = await queue.get()
            if item is _END:
                return
            if isinstance(item, Exception):
                raise item
            yield item  # type: ignore[misc]

    try:
        yield events()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
