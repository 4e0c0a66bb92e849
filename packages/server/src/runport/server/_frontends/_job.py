"""One chat request's run, in its frontend protocol, whether or not the server is resumable.

``ChatJob`` runs the call and hands each run event's payloads on together; it is a
producer's ``Job`` as it stands (``--resumable``: the run goes into the event log and this
connection is its first reader), and ``ChatRun`` drives it straight onto the connection
otherwise. As for an execution, a direct run happens in the request's own task beside a
watcher that waits for the client to go away; a client that disconnects (a stopped
``useChat``, a closed tab) cancels the run, and cancellation is a caller stop: the adapter
closes its upstream. A run its contract refuses before any model call (inputs,
capabilities) is a 422 in the protocol's error shape, never a stream that starts and fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from runport.application import (
    ContinuationSeal,
    RunError,
    RunPartial,
    RunStream,
    Tool,
    aclose_adapter,
    astream_run,
)
from runport.contracts import ClientToolCall, ErrorCode
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter
from runport.server._disconnect import respond_until_disconnected
from runport.server._errors import RequestRefused
from runport.server._event_log import EventLogError
from runport.server._frames import id_prefix, numbered_data_frames
from runport.server._frontends._protocol import ChatCall, FrontendProtocol
from runport.server._resumable import RunReader, StreamProtocol
from runport.server._runs import Emit, Frame, Job, Runs
from runport.server._sse import RUN_ID_HEADER, SSEWriter, new_run_id
from runport.server._watched import Watched

_REFUSED_STAGES = frozenset({"input", "compile"})
# A resume the client got wrong (its continuation, its approvals): the request's fault, a 400.
_BAD_RESUME = frozenset({ErrorCode.CONTINUATION_INVALID, ErrorCode.APPROVALS_INVALID})
_CODES = frozenset(code.value for code in ErrorCode)

Payloads = Callable[[list[bytes]], Awaitable[None]]


class ChatJob(Job):
    """A chat's run through its protocol's encoder. A run its contract refuses before any
    model call sets ``refused`` and hands nothing on, so the route answers with the
    protocol's JSON refusal."""

    def __init__(
        self,
        protocol: FrontendProtocol,
        contract: Contract,
        adapter: AsyncRuntimeAdapter,
        call: ChatCall,
        *,
        tools: Sequence[Tool | Callable[..., Any]],
        partial_output: bool,
        owned: bool,
        resumable: bool,
        seal: ContinuationSeal,
    ) -> None:
        self.protocol = protocol
        self.contract = contract
        self.adapter = adapter
        self.call = call
        self.tools = tools
        self.encoder = protocol.encoder(call, resumable=resumable)
        self.partial_output = partial_output
        self.owned = owned
        self.seal = seal
        self.refused: RequestRefused | None = None
        self._started = False
        self._marked = False

    def _opened(self, payloads: list[bytes]) -> list[bytes]:
        if not self._started:
            self._started = True
            return [*self.encoder.start(), *payloads]
        return payloads

    def _ended(self, error: RunError | None = None) -> list[bytes]:
        return [*self._opened(self.encoder.end(error)), *self.protocol.closing]

    async def play(self, out: Payloads, begun: asyncio.Future[bool]) -> list[bytes] | None:
        """Hand each run event's payloads to ``out`` (the run's opening with the first);
        the run's last payloads, or ``None`` when the contract refused the call."""
        async with self._run(Watched(self.adapter, begun)) as events:
            try:
                async for event in events:
                    payloads = self.encoder.encode(event)
                    if payloads or not self._started:
                        await out(self._opened(payloads))
            except RunError as error:
                if not begun.done() and error.stage in _REFUSED_STAGES:
                    code = ErrorCode(error.code) if error.code in _CODES else ErrorCode.DATA_INVALID
                    status = 400 if code in _BAD_RESUME else 422
                    self.refused = RequestRefused(status, code, error.message or str(error))
                    return None
                return self._ended(error)
            result = events.result
        if result.status == "paused" and result.continuation is not None:
            if not self.encoder.pauses:
                message = f"the {self.protocol.name} protocol carries no approval requests"
                return self._ended(
                    RunError("tool", ErrorCode.APPROVALS_INVALID, RunPartial(), message)
                )
            clients = [p.name for p in result.pending if isinstance(p, ClientToolCall)]
            if clients and not self.encoder.client_calls:
                message = (
                    f"the {self.protocol.name} route carries no calls of client tools "
                    f"({', '.join(clients)}): the model's call was not answered"
                )
                return self._ended(
                    RunError("tool", ErrorCode.APPROVALS_INVALID, RunPartial(), message)
                )
            self.encoder.pause(result.continuation)
        return self._ended()

    def _run(self, adapter: Watched) -> RunStream:
        """The call's run: a new one, or the paused run its continuation resumes (adr/0069)."""
        call = self.call
        if call.continuation is not None:
            return astream_run(
                self.contract,
                adapter,
                tools=[*self.tools, *call.client_tools],
                partial_output=self.partial_output,
                continuation=call.continuation,
                approvals=call.approvals or {},
                tool_results=call.tool_results or {},
                continuation_seal=self.seal,
            )
        return astream_run(
            self.contract,
            adapter,
            inputs=call.inputs,
            context=call.context,
            tools=[*self.tools, *call.client_tools],
            history=call.history,
            partial_output=self.partial_output,
            continuation_seal=self.seal,
        )

    def _frames(self, payloads: list[bytes]) -> list[Frame]:
        """Frames for the log: the run's first carries the protocol's mark (adr/0041)."""
        frames: list[Frame] = []
        for payload in payloads:
            frames.append(("" if self._marked else self.protocol.mark, payload.decode()))
            self._marked = True
        return frames

    async def run(self, emit: Emit, begun: asyncio.Future[bool]) -> list[Frame]:
        async def out(payloads: list[bytes]) -> None:
            for name, data in self._frames(payloads):
                await emit(name, data)

        last = await self.play(out, begun)
        return [("refused", "{}")] if last is None else self._frames(last)

    def ending(self, code: str, message: str) -> list[Frame]:
        return self._frames(self._ended(RunError("model", code, RunPartial(), message)))

    async def aclose(self) -> None:
        if self.owned:
            await aclose_adapter(self.adapter)


class ChatRun(Response):
    """A chat run straight onto its connection (no event log): frames numbered as they
    are written, ``on_done`` told when the response ends however it ends (the chat's busy
    mark is lifted there), an ``owned`` adapter closed after it."""

    def __init__(self, job: ChatJob, *, on_done: Callable[[], None], heartbeat: float) -> None:
        self._job = job
        self._on_done = on_done
        self._heartbeat = heartbeat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await respond_until_disconnected(self._respond(scope, receive, send), receive)
        finally:
            self._on_done()
            await self._job.aclose()

    async def _respond(self, scope: Scope, receive: Receive, send: Send) -> None:
        job = self._job
        # Every frame numbered (id: <run_id>:<seq>), the run named in a header, a ping
        # after a quiet spell: as every SSE response of the server (_sse.py).
        run_id = new_run_id()
        writer = SSEWriter(send, run_id, self._heartbeat, headers=_headers(job.protocol, run_id))
        prefix, seq = id_prefix(run_id), 0
        beats: asyncio.Future[None] | None = None

        async def out(payloads: list[bytes]) -> None:
            nonlocal seq, beats
            if beats is None:
                await writer.start()
                beats = asyncio.ensure_future(writer.heartbeats())
            framed, seq = numbered_data_frames(payloads, prefix, seq)
            await writer.write(framed)

        try:
            last = await job.play(out, asyncio.get_running_loop().create_future())
            if last is None:
                assert job.refused is not None
                await job.protocol.refusal(job.refused)(scope, receive, send)
                return
            await out(last)
        finally:
            if beats is not None:
                beats.cancel()
        await writer.end()


def _headers(protocol: FrontendProtocol, run_id: str) -> list[tuple[bytes, bytes]]:
    return [
        *((name.encode(), value.encode()) for name, value in protocol.headers.items()),
        (RUN_ID_HEADER.encode(), run_id.encode()),
    ]


def chat_reader(
    runs: Runs,
    protocol: FrontendProtocol,
    run_id: str,
    after: int,
    heartbeat: float,
    known: Sequence[StreamProtocol],
) -> RunReader:
    """A reader of a chat's run, in the chat's protocol."""
    return RunReader(
        runs,
        run_id,
        after,
        heartbeat,
        protocol=protocol,
        known=known,
        headers=_headers(protocol, run_id),
    )


async def start_resumable(
    runs: Runs, job: ChatJob, chat_key: str, heartbeat: float, known: Sequence[StreamProtocol]
) -> Response:
    """Start a chat's run in the log and answer as its first reader (or with the
    protocol's refusal, as without ``--resumable``)."""
    protocol = job.protocol
    try:
        run_id, begun = await runs.start(job)
        if not await begun and job.refused is not None:
            return protocol.refusal(job.refused)
        await runs.log.link(chat_key, run_id)
    except EventLogError as error:
        return protocol.refusal(RequestRefused(503, error.code, error.message))
    return chat_reader(runs, protocol, run_id, 0, heartbeat, known)
