"""One chat or AG-UI request as an ASGI response: the run, streamed in a frontend protocol.

As for an execution, the run happens in the request's own task beside a watcher that waits
for the client to go away; a client that disconnects (a stopped ``useChat``, a closed tab)
cancels the run, and cancellation is a caller stop: the adapter closes its upstream. A run
its contract refuses before any model call (inputs, capabilities) is a 422 with the
protocol's error shape, never a stream that starts and fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from runport.application import RunError, Tool, aclose_adapter, astream_run
from runport.contracts import ErrorCode, RunEvent
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter
from runport.server._chat import ChatCall
from runport.server._disconnect import respond_until_disconnected
from runport.server._errors import RequestRefused
from runport.server._sse import DEFAULT_HEARTBEAT_S, RUN_ID_HEADER, SSEWriter, new_run_id, numbered

Encoder = Callable[[AsyncIterator[RunEvent]], AsyncIterator[bytes]]
Refusal = Callable[[RequestRefused], JSONResponse]
_REFUSED_STAGES = frozenset({"input", "compile"})
_CODES = frozenset(code.value for code in ErrorCode)


async def _chained(
    first: RunEvent | None, rest: AsyncIterator[RunEvent], error: RunError | None
) -> AsyncIterator[RunEvent]:
    if error is not None:
        raise error
    if first is None:
        return
    yield first
    async for event in rest:
        yield event


class FrontendRun(Response):
    """Runs ``call`` while the response is sent, through ``encode`` (``ui_message_stream``
    or ``agui_stream``). ``on_done`` is told when the response ends however it ends (the
    chat's busy mark is lifted there); an ``owned`` adapter is closed after it."""

    def __init__(
        self,
        contract: Contract,
        adapter: AsyncRuntimeAdapter,
        call: ChatCall,
        *,
        tools: Sequence[Tool | Callable[..., Any]],
        encode: Encoder,
        headers: Mapping[str, str],
        refusal: Refusal,
        on_done: Callable[[], None],
        partial_output: bool = False,
        owned: bool = False,
        heartbeat: float = DEFAULT_HEARTBEAT_S,
    ) -> None:
        self._heartbeat = heartbeat
        self._contract = contract
        self._adapter = adapter
        self._call = call
        self._tools = tools
        self._encode = encode
        self._sse_headers = [(key.encode(), value.encode()) for key, value in headers.items()]
        self._refusal = refusal
        self._on_done = on_done
        self._partial_output = partial_output
        self._owned = owned

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await respond_until_disconnected(self._respond(scope, receive, send), receive)
        finally:
            self._on_done()
            if self._owned:
                await aclose_adapter(self._adapter)

    async def _respond(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = self._call
        async with astream_run(
            self._contract,
            self._adapter,
            inputs=call.inputs,
            context=call.context,
            tools=self._tools,
            history=call.history,
            partial_output=self._partial_output,
        ) as events:
            iterator = aiter(events)
            first: RunEvent | None = None
            failure: RunError | None = None
            try:
                first = await anext(iterator)
            except StopAsyncIteration:
                pass
            except RunError as error:
                if error.stage in _REFUSED_STAGES:
                    code = ErrorCode(error.code) if error.code in _CODES else ErrorCode.DATA_INVALID
                    refused = RequestRefused(422, code, error.message or str(error))
                    await self._refusal(refused)(scope, receive, send)
                    return
                failure = error
            # Every frame numbered (id: <run_id>:<seq>), the run named in a header, a ping
            # after a quiet spell: as every SSE response of the server (_sse.py).
            run_id = new_run_id()
            headers = [*self._sse_headers, (RUN_ID_HEADER.encode(), run_id.encode())]
            writer = SSEWriter(send, run_id, self._heartbeat, headers=headers)
            await writer.start()
            beats = asyncio.ensure_future(writer.heartbeats())
            try:
                seq = 0
                async for chunk in self._encode(_chained(first, iterator, failure)):
                    framed, seq = numbered(chunk, run_id, seq)
                    await writer.write(framed)
            finally:
                beats.cancel()
        await writer.end()
