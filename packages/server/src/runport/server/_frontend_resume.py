"""The chat and AG-UI routes with ``--resumable``: a frontend run produced into the event
log like an execution, its frames the protocol's own (bare ``data:`` frames, numbered), and
the AI SDK's resume route ``GET /v1/contracts/{id}/chat/{chat_id}/stream``, which continues the
chat's active run (``204`` when it has none)."""

from __future__ import annotations

import asyncio
import functools
import secrets
from collections.abc import Callable, Sequence
from typing import Any

from starlette.responses import Response

from runport.application import RunError, RunPartial, Tool, aclose_adapter, astream_run
from runport.contracts import ErrorCode
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter
from runport.server._agui import AGUIEncoder
from runport.server._chat import ChatCall
from runport.server._errors import RequestRefused
from runport.server._event_log import EventLogError
from runport.server._resumable import RunReader, agui_lost, ui_lost
from runport.server._runs import Emit, Frame, Job, Runs, Watched
from runport.server._sse import RUN_ID_HEADER
from runport.server._ui_stream import UIMessageEncoder

_REFUSED_STAGES = frozenset({"input", "compile"})
_CODES = frozenset(code.value for code in ErrorCode)


class FrontendJob(Job):
    """A chat (UI message stream) or AG-UI run as a producer's job. A run its contract
    refuses before any model call ends with one ``refused`` frame and ``refused`` set, so
    the route answers with the protocol's JSON refusal as without ``--resumable``."""

    def __init__(
        self,
        contract: Contract,
        adapter: AsyncRuntimeAdapter,
        call: ChatCall,
        *,
        tools: Sequence[Tool | object],
        encoder: UIMessageEncoder | AGUIEncoder,
        partial_output: bool,
        owned: bool,
    ) -> None:
        self.contract = contract
        self.adapter = adapter
        self.call = call
        self.tools = tools
        self.encoder = encoder
        self.partial_output = partial_output
        self.owned = owned
        self.refused: RequestRefused | None = None
        self.started = False

    def _frames(self, payloads: list[bytes]) -> list[Frame]:
        if not self.started:
            self.started = True
            payloads = [*self.encoder.start(), *payloads]
        return [("", payload.decode()) for payload in payloads]

    def _closing(self, payloads: list[bytes]) -> list[Frame]:
        frames = self._frames(payloads)
        if isinstance(self.encoder, UIMessageEncoder):
            frames.append(("", "[DONE]"))
        return frames

    async def run(self, emit: Emit, begun: asyncio.Future[bool]) -> list[Frame]:
        call = self.call
        async with astream_run(
            self.contract,
            Watched(self.adapter, begun),
            inputs=call.inputs,
            context=call.context,
            tools=self.tools,  # type: ignore[arg-type]
            history=call.history,
            partial_output=self.partial_output,
        ) as events:
            try:
                async for event in events:
                    for name, data in self._frames(self.encoder.encode(event)):
                        await emit(name, data)
            except RunError as error:
                if not begun.done() and error.stage in _REFUSED_STAGES:
                    code = ErrorCode(error.code) if error.code in _CODES else ErrorCode.DATA_INVALID
                    self.refused = RequestRefused(422, code, error.message or str(error))
                    return [("refused", "{}")]
                return self._closing(self.encoder.end(error))
        return self._closing(self.encoder.end())

    def ending(self, code: str, message: str) -> list[Frame]:
        return self._closing(self.encoder.end(RunError("model", code, RunPartial(), message)))

    async def aclose(self) -> None:
        if self.owned:
            await aclose_adapter(self.adapter)


def job_encoder(route: str, encode: object, call: ChatCall, reasoning_key: bytes) -> Any:
    """The encoder object behind a route's ``encode`` (the same arguments), for a job that
    writes its frames one by one. A resumable chat's ``start`` always names its assistant
    message (the request's ``messageId``, or one made up here): a page that kept the
    message across a reload then has the replay replace it, not add a second one."""
    assert isinstance(encode, functools.partial)
    if route == "chat":
        message_id = call.message_id or f"msg-{secrets.token_hex(12)}"
        contract_id = encode.keywords["contract_id"]
        return UIMessageEncoder(
            message_id, reasoning_key, contract_id=contract_id, chat_id=call.chat_id
        )
    return AGUIEncoder(encode.keywords["thread_id"], encode.keywords["run_id"])


async def resumable_frontend(
    runs: Runs,
    job: FrontendJob,
    key: str,
    *,
    route: str,
    headers: dict[str, str],
    refusal: Callable[[RequestRefused], Response],
    heartbeat: float,
) -> Response:
    """Start a frontend run in the log and answer as its first reader (or with the
    protocol's refusal, as without ``--resumable``)."""
    try:
        run_id, begun = await runs.start(job)
        if not await begun and job.refused is not None:
            return refusal(job.refused)
        await runs.log.link(key, run_id)
    except EventLogError as error:
        return refusal(RequestRefused(503, error.code, error.message))
    return RunReader(
        runs,
        run_id,
        0,
        heartbeat,
        lost=ui_lost if route == "chat" else agui_lost,
        headers=protocol_headers(headers, run_id),
    )


def protocol_headers(headers: dict[str, str], run_id: str) -> list[tuple[bytes, bytes]]:
    return [
        *((name.encode(), value.encode()) for name, value in headers.items()),
        (RUN_ID_HEADER.encode(), run_id.encode()),
    ]


async def active_run(runs: Runs, key: str, *, finished: bool = False) -> str | None:
    """The chat's run while it goes on; ``None`` when it has none, or it has ended (with
    ``finished``, its last run while the log keeps it, ended or not)."""
    run_id = await runs.log.linked(key)
    if run_id is None:
        return None
    state = await runs.log.state(run_id)
    if state is None or (state.finished and not finished):
        return None
    return run_id
