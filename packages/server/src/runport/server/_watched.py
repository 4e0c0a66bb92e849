"""``Watched``: a run's adapter that tells when it is called."""

from __future__ import annotations

import asyncio

from runport.contracts import AdapterDescriptor, ExecutionReceipt, ExecutionRequest
from runport.ports import AsyncRuntimeAdapter, AsyncSink


class Watched(AsyncRuntimeAdapter):
    """The run's adapter, telling when it is called: from then on the call was accepted
    (inputs, context and capabilities passed), so its connection may start the event
    stream; a run that ends without calling it was refused."""

    def __init__(self, inner: AsyncRuntimeAdapter, called: asyncio.Future[bool]) -> None:
        self._inner = inner
        self._called = called

    def descriptor(self) -> AdapterDescriptor:
        return self._inner.descriptor()

    def _call(self) -> None:
        if not self._called.done():
            self._called.set_result(True)

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        self._call()
        return await self._inner.execute(request)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        self._call()
        return await self._inner.execute_streaming(request, sink)
