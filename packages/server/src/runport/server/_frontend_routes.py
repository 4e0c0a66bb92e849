"""``POST /v1/contracts/{id}/chat`` (the AI SDK's chat transport) and
``POST /v1/contracts/{id}/agui`` (AG-UI's ``RunAgentInput``): a contract run as a chat,
answered in the frontend's own protocol (docs/frontends.md, adr/0036)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from runport.application import Catalog, Tool
from runport.contracts import ErrorCode
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter
from runport.server._agui import AGUI_HEADERS, agui_stream
from runport.server._agui_input import parse_agui
from runport.server._auth import check_token
from runport.server._body import read_body
from runport.server._chat import ChatCall, parse_chat
from runport.server._errors import RequestRefused, find_contract
from runport.server._event_log import EventLogError
from runport.server._frontend_resume import (
    FrontendJob,
    active_run,
    job_encoder,
    protocol_headers,
    resumable_frontend,
)
from runport.server._frontend_run import Encoder, FrontendRun, Refusal
from runport.server._resumable import RunReader, run_events, ui_lost
from runport.server._runs import Runs
from runport.server._sse import DEFAULT_HEARTBEAT_S
from runport.server._ui_stream import UI_MESSAGE_STREAM_HEADERS, ui_message_stream

AdapterForRequest = Callable[[], Awaitable[tuple[AsyncRuntimeAdapter, bool]]]
"""The adapter one request runs on, and whether the request owns it (closes it after)."""


def _error(refused: RequestRefused) -> dict[str, object]:
    return {"code": str(refused.code), "message": refused.message}


def chat_refusal(refused: RequestRefused) -> JSONResponse:
    """A refused chat request: runport's coded error, and the UI message stream's own error
    chunk (``errorText``) in the same object, which the AI SDK shows as the chat's error."""
    body = {
        "type": "error",
        "errorText": f"{refused.code}: {refused.message}",
        "error": _error(refused),
    }
    return JSONResponse(body, status_code=refused.status, headers=refused.headers)


def agui_refusal(refused: RequestRefused) -> JSONResponse:
    """A refused AG-UI request: runport's coded error in the shape of AG-UI's ``RUN_ERROR``."""
    body = {
        "type": "RUN_ERROR",
        "code": str(refused.code),
        "message": refused.message,
        "error": _error(refused),
    }
    return JSONResponse(body, status_code=refused.status, headers=refused.headers)


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "false")
    if value not in ("true", "false"):
        raise RequestRefused(
            400, ErrorCode.DATA_INVALID, f"?{name}= takes true or false, not {value!r}"
        )
    return value == "true"


def frontend_routes(
    catalog: Catalog,
    adapter_for: AdapterForRequest,
    *,
    token: bytes | None,
    max_body_bytes: int,
    body_timeout: float,
    tools: Sequence[Tool | Callable[..., Any]],
    reasoning_key: bytes,
    partial_output: bool,
    runs: Runs | None = None,
    heartbeat: float = DEFAULT_HEARTBEAT_S,
) -> list[Route]:
    busy: set[tuple[str, str, str]] = set()

    async def serve(
        request: Request,
        route: str,
        parse: Callable[[bytes, Contract], tuple[ChatCall, Encoder]],
        headers: dict[str, str],
        refusal: Refusal,
    ) -> Response:
        try:
            check_token(request, token)
            contract = find_contract(catalog, request.path_params["contract_id"])
            call, encode = parse(await read_body(request, max_body_bytes, body_timeout), contract)
            key = (route, contract.id, call.chat_id)
            chat_key = ":".join(key)
            if key in busy or (runs is not None and await active_run(runs, chat_key)):
                raise RequestRefused(
                    409,
                    ErrorCode.CHAT_BUSY,
                    f"chat {call.chat_id!r} already has a run streaming; stop it or wait for "
                    "it to end before sending the next message",
                )
            adapter, owned = await adapter_for()
        except RequestRefused as refused:
            return refusal(refused)
        except EventLogError as error:
            return refusal(RequestRefused(503, error.code, error.message))
        if runs is not None:  # the run lives in the log; the chat is busy while it goes on
            job = FrontendJob(
                contract,
                adapter,
                call,
                tools=tools,
                encoder=job_encoder(route, encode, call, reasoning_key),
                partial_output=partial_output,
                owned=owned,
            )
            return await resumable_frontend(
                runs,
                job,
                chat_key,
                route=route,
                headers=headers,
                refusal=refusal,
                heartbeat=heartbeat,
            )
        busy.add(key)
        return FrontendRun(
            contract,
            adapter,
            call,
            tools=tools,
            encode=encode,
            headers=headers,
            refusal=refusal,
            on_done=functools.partial(busy.discard, key),
            partial_output=partial_output,
            owned=owned,
            heartbeat=heartbeat,
        )

    def parse_ui(body: bytes, contract: Contract) -> tuple[ChatCall, Encoder]:
        call = parse_chat(body, contract, reasoning_key)
        encode = functools.partial(
            ui_message_stream,
            message_id=call.message_id,
            reasoning_key=reasoning_key,
            contract_id=contract.id,
            chat_id=call.chat_id,
        )
        return call, encode

    def parse_ag(body: bytes, contract: Contract) -> tuple[ChatCall, Encoder]:
        call, thread_id, run_id = parse_agui(body, contract)
        return call, functools.partial(agui_stream, thread_id=thread_id, run_id=run_id)

    async def chat(request: Request) -> Response:
        return await serve(request, "chat", parse_ui, UI_MESSAGE_STREAM_HEADERS, chat_refusal)

    async def agui(request: Request) -> Response:
        return await serve(request, "agui", parse_ag, AGUI_HEADERS, agui_refusal)

    async def chat_stream(request: Request) -> Response:
        """The AI SDK's resume (``useChat({resume: true})``): the chat's active run, from
        its first frame (or after ``Last-Event-ID``); 204 when it has none. With
        ``?finished=true`` (a page that did not see its run end) the chat's last run is
        replayed even if it ended meanwhile, while the log keeps it."""
        try:
            check_token(request, token)
            contract = find_contract(catalog, request.path_params["contract_id"])
            finished = _flag(request, "finished")
            if runs is None:
                return Response(status_code=204)
            chat_key = ":".join(("chat", contract.id, request.path_params["chat_id"]))
            run_id = await active_run(runs, chat_key, finished=finished)
            if run_id is None:
                return Response(status_code=204)
            reader = await run_events(runs, request, run_id, heartbeat)
            if not isinstance(reader, RunReader):
                return reader
            return RunReader(
                runs,
                run_id,
                reader.after,
                heartbeat,
                lost=ui_lost,
                headers=protocol_headers(UI_MESSAGE_STREAM_HEADERS, run_id),
            )
        except RequestRefused as refused:
            return chat_refusal(refused)
        except EventLogError as error:
            return chat_refusal(RequestRefused(503, error.code, error.message))

    return [
        Route(
            "/v1/contracts/{contract_id:str}/chat/{chat_id:str}/stream",
            chat_stream,
            methods=["GET"],
        ),
        Route("/v1/contracts/{contract_id:str}/chat", chat, methods=["POST"]),
        Route("/v1/contracts/{contract_id:str}/agui", agui, methods=["POST"]),
    ]
