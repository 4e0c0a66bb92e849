"""The frontend protocols' routes: ``POST /v1/contracts/{id}/<segment>`` for each protocol the
registry names (``chat``: the AI SDK's chat transport; ``agui``: AG-UI's ``RunAgentInput``), a
contract run as a chat answered in the frontend's own protocol, and for a protocol whose client
resumes chats, ``GET /v1/contracts/{id}/<segment>/{chat_id}/stream`` (docs/frontends.md,
adr/0036, adr/0041)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from runport.application import Catalog, ContinuationSeal, Tool
from runport.contracts import ErrorCode
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter
from runport.server._auth import check_token
from runport.server._body import read_body
from runport.server._errors import RequestRefused, find_contract
from runport.server._event_log import EventLogError
from runport.server._frontends._job import ChatJob, ChatRun, chat_reader, start_resumable
from runport.server._frontends._protocol import ChatCall, FrontendProtocol
from runport.server._resumable import RunReader, StreamProtocol, run_events
from runport.server._runs import Runs

AdapterForRequest = Callable[[], Awaitable[tuple[AsyncRuntimeAdapter, bool]]]
"""The adapter one request runs on, and whether the request owns it (closes it after)."""


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "false")
    if value not in ("true", "false"):
        raise RequestRefused(
            400, ErrorCode.DATA_INVALID, f"?{name}= takes true or false, not {value!r}"
        )
    return value == "true"


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


def client_results(seal: ContinuationSeal, contract: Contract, call: ChatCall) -> ChatCall:
    """``call`` with the client tools' results it carries (adr/0069): of the tool outputs its
    answering message holds, those of the paused run's pending ``ClientToolCall``s. An output
    the conversation already has (a call the server ran before the pause) is the client
    showing it; an output for any other call (never made, or waiting for an approval) is
    refused, coded, before anything runs. A continuation that does not open is left to the
    run, which refuses it."""
    if call.continuation is None or not call.outputs:
        return call
    try:
        paused = seal.open(call.continuation, contract.id)
    except ValueError:  # the seal's ContinuationInvalid: refused, coded, by the run
        return call
    clients = {request.call_id for request in paused.pending if request.kind == "ClientToolCall"}
    answered = {m.tool_call_id for m in paused.interaction.messages if m.role == "tool"}
    results: dict[str, Any] = {}
    for call_id, output in call.outputs.items():
        if call_id in clients:
            results[call_id] = output
        elif call_id not in answered:
            raise RequestRefused(
                400,
                ErrorCode.APPROVALS_INVALID,
                f"a tool result for call {call_id!r}, which waits for no result: the paused "
                f"run's client calls are {', '.join(map(repr, sorted(clients))) or 'none'}; "
                "nothing was run",
            )
    return dataclasses.replace(call, tool_results=results)


async def spend_across(
    runs: Runs, seal: ContinuationSeal, contract: Contract, call: ChatCall
) -> None:
    """Spend the continuation ``call`` resumes in the event log, shared by every server
    process of a resumable deployment, so it resumes once among them all (each process's
    run spends it in that process's memory too). What the run would refuse is refused
    first, so a refusal spends nothing."""
    try:
        paused = seal.open(call.continuation, contract.id)
    except ValueError as invalid:  # the seal's ContinuationInvalid
        raise RequestRefused(
            400, ErrorCode.CONTINUATION_INVALID, f"the continuation is refused: {invalid}"
        ) from None
    for kind, given, what in (
        ("ToolApprovalRequest", call.approvals, "approvals"),
        ("ClientToolCall", call.tool_results, "client tool results"),
    ):
        pending = [request.call_id for request in paused.pending if request.kind == kind]
        if set(given or {}) != set(pending):
            raise RequestRefused(
                400,
                ErrorCode.APPROVALS_INVALID,
                f"the {what} must answer exactly the pending calls: {', '.join(pending)}",
            )
    if not await runs.log.spend(f"continuation:{paused.id}", paused.expires):
        raise RequestRefused(
            400,
            ErrorCode.CONTINUATION_INVALID,
            "the continuation is refused: it was already resumed once",
        )


def frontend_routes(
    protocols: Sequence[FrontendProtocol],
    catalog: Catalog,
    adapter_for: AdapterForRequest,
    *,
    token: bytes | None,
    max_body_bytes: int,
    body_timeout: float,
    tools: Sequence[Tool | Callable[..., Any]],
    partial_output: bool,
    runs: Runs | None,
    heartbeat: float,
    known: Sequence[StreamProtocol],
    seal: ContinuationSeal,
) -> list[Route]:
    """The routes of ``protocols``; ``known`` are every protocol a run in the log may be in;
    ``seal`` seals the continuation of a run that pauses for a person, and opens it when the
    person's answer comes back (adr/0069)."""
    busy: set[tuple[str, str, str]] = set()
    served = {tool.name if isinstance(tool, Tool) else tool.__name__ for tool in tools}

    async def serve(protocol: FrontendProtocol, request: Request) -> Response:
        try:
            check_token(request, token)
            contract = find_contract(catalog, request.path_params["contract_id"])
            call = protocol.parse(await read_body(request, max_body_bytes, body_timeout), contract)
            taken = sorted(served & {tool.name for tool in call.client_tools})
            if taken:
                raise RequestRefused(
                    400,
                    ErrorCode.DATA_INVALID,
                    f"the client offers tool(s) this server runs itself: {', '.join(taken)}",
                )
            call = client_results(seal, contract, call)
            key = (protocol.segment, contract.id, call.chat_id)
            chat_key = ":".join(key)
            if key in busy or (runs is not None and await active_run(runs, chat_key)):
                raise RequestRefused(
                    409,
                    ErrorCode.CHAT_BUSY,
                    f"chat {call.chat_id!r} already has a run streaming; stop it or wait for "
                    "it to end before sending the next message",
                )
            if runs is not None and call.continuation is not None:
                await spend_across(runs, seal, contract, call)
            adapter, owned = await adapter_for()
        except RequestRefused as refused:
            return protocol.refusal(refused)
        except EventLogError as error:
            return protocol.refusal(RequestRefused(503, error.code, error.message))
        job = ChatJob(
            protocol,
            contract,
            adapter,
            call,
            tools=tools,
            partial_output=partial_output,
            owned=owned,
            resumable=runs is not None,
            seal=seal,
        )
        if runs is not None:  # the run lives in the log; the chat is busy while it goes on
            return await start_resumable(runs, job, chat_key, heartbeat, known)
        busy.add(key)
        return ChatRun(job, on_done=functools.partial(busy.discard, key), heartbeat=heartbeat)

    async def resume(protocol: FrontendProtocol, request: Request) -> Response:
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
            chat_id = request.path_params["chat_id"]
            chat_key = ":".join((protocol.segment, contract.id, chat_id))
            run_id = await active_run(runs, chat_key, finished=finished)
            if run_id is None:
                return Response(status_code=204)
            reader = await run_events(runs, request, run_id, heartbeat, known)
            if not isinstance(reader, RunReader):
                return reader
            return chat_reader(runs, protocol, run_id, reader.after, heartbeat, known)
        except RequestRefused as refused:
            return protocol.refusal(refused)
        except EventLogError as error:
            return protocol.refusal(RequestRefused(503, error.code, error.message))

    routes: list[Route] = []
    for protocol in protocols:
        path = f"/v1/contracts/{{contract_id:str}}/{protocol.segment}"
        if protocol.resumes_chats:
            stream = f"{path}/{{chat_id:str}}/stream"
            routes.append(Route(stream, _endpoint(resume, protocol), methods=["GET"]))
        routes.append(Route(path, _endpoint(serve, protocol), methods=["POST"]))
    return routes


def _endpoint(
    handler: Callable[[FrontendProtocol, Request], Awaitable[Response]], protocol: FrontendProtocol
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await handler(protocol, request)

    return endpoint
