"""``FrontendProtocol``: everything the server knows of one chat frontend's protocol, in one
object (adr/0041). The routes, the job that runs a chat and the readers of a resumable run
ask it, and never ask which protocol it is."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import JsonValue
from starlette.responses import JSONResponse

from runport.application import ClientToolError, Tool
from runport.contracts import ErrorCode, Message
from runport.core import Contract
from runport.server._errors import RequestRefused
from runport.server._event_log import LogEntry
from runport.server._frames import data_frames
from runport.server._frontends._encoder import RunEventEncoder
from runport.server._resumable import PRODUCER_LOST, StreamProtocol


@dataclass(frozen=True)
class ChatCall:
    """One chat request, read: the run's inputs, context and history, the chat it belongs
    to, and the ids the client gave the answer (the AI SDK's ``messageId``; AG-UI's
    ``runId``). ``contract_id``: the contract it was read for (what its answer's sealed
    reasoning is bound to, with ``chat_id``).

    A call that answers a paused run (adr/0069) carries its sealed ``continuation`` and the
    person's ``approvals`` (``{call_id: True | False | "reason"}``) and ``outputs``, the tool
    results the answering message carries (``{call_id: output}``, a ``ClientToolError`` for a
    client tool that failed): the client tools' results
    among them become ``tool_results`` once the continuation says which calls are the
    client's (``client_results``). Its inputs, context and history are then the
    continuation's, not the request's."""

    chat_id: str
    inputs: dict[str, Any]
    context: dict[str, Any] | None
    history: list[Message]
    message_id: str | None
    run_id: str | None = None
    contract_id: str = ""
    continuation: str | None = None
    approvals: dict[str, bool | str] | None = None
    outputs: dict[str, JsonValue | ClientToolError] | None = None
    tool_results: dict[str, JsonValue | ClientToolError] | None = None
    client_tools: tuple[Tool, ...] = ()
    """Tools the request declares for its client to run (AG-UI ``RunAgentInput.tools``)."""

    @property
    def denied(self) -> frozenset[str]:
        """The calls a person denied: their results are denials, not failures."""
        return frozenset(
            call_id for call_id, decision in (self.approvals or {}).items() if decision is not True
        )


class FrontendProtocol(StreamProtocol):
    """One frontend protocol. Its ``segment`` names its route (``POST
    /v1/contracts/{id}/<segment>``), ``headers`` its responses'; ``parse`` reads a request
    body into a ``ChatCall`` (or refuses it, coded), ``encoder`` makes the state that turns
    the call's run events into the protocol's payloads, ``refusal_body`` is a refused
    request's JSON in the protocol's error shape, ``failed`` the payloads that end a run
    the server could not see to its end, and ``closing`` the payloads after a run's last
    (the UI message stream's ``[DONE]``). ``resumes_chats``: the protocol's client resumes a
    chat by ``GET /v1/contracts/{id}/<segment>/{chat_id}/stream``.

    Its frames are bare ``data:`` frames; a resumable run's first frame is recorded in the
    log under ``mark`` (never written), so any reader knows the run's protocol."""

    name: ClassVar[str]
    segment: ClassVar[str]
    headers: ClassVar[Mapping[str, str]]
    closing: ClassVar[tuple[bytes, ...]] = ()
    resumes_chats: ClassVar[bool] = False

    def __init__(self, *, reasoning_key: bytes) -> None:
        self.reasoning_key = reasoning_key

    @property
    def mark(self) -> str:
        return f"runport.frontend:{self.name}"

    @abstractmethod
    def parse(self, body: bytes, contract: Contract) -> ChatCall: ...

    @abstractmethod
    def encoder(self, call: ChatCall, *, resumable: bool) -> RunEventEncoder:
        """``resumable``: the run lives in a log and may be replayed to a page that kept
        part of it (the UI message stream then always names its message)."""

    @abstractmethod
    def refusal_body(self, refused: RequestRefused) -> dict[str, JsonValue]: ...

    @abstractmethod
    def failed(self, code: str, message: str) -> list[bytes]: ...

    def refusal(self, refused: RequestRefused) -> JSONResponse:
        return JSONResponse(
            self.refusal_body(refused), status_code=refused.status, headers=refused.headers
        )

    def lost(self, first: int, last: LogEntry | None) -> list[LogEntry]:
        payloads = [*self.failed(ErrorCode.RUN_PRODUCER_LOST, PRODUCER_LOST), *self.closing]
        end = first + len(payloads) - 1
        return [
            LogEntry(seq, "", payload.decode(), final=seq == end)
            for seq, payload in enumerate(payloads, start=first)
        ]

    def unnumbered(self, code: str, message: str) -> bytes:
        return data_frames([*self.failed(code, message), *self.closing])


def coded_error(refused: RequestRefused) -> dict[str, JsonValue]:
    """runport's coded error, as every protocol's refusal carries it."""
    return {"code": str(refused.code), "message": refused.message}
