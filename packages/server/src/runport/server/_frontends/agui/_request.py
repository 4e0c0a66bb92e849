"""AG-UI's ``RunAgentInput`` as a run: its messages before the last user message become the
history, that message's text the contract's chat input and its image and document parts the
contract's part inputs, by the chat's one binding rule (``_files``; adr/0036, adr/0039).

A ``RunAgentInput`` with ``resume`` answers the interrupts a paused run ended with
(adr/0069): each entry's ``interruptId`` a held call's id, ``status: resolved`` with
``payload: {approved, reason?}`` or ``status: cancelled`` (a denial), and the sealed
continuation its interrupt carried in ``metadata.runport.continuation``, echoed back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, JsonValue

from runport.application import ClientToolError, Tool
from runport.contracts import ErrorCode, Message, ToolCall
from runport.core import Contract, JsonLimitError, parse_json_text
from runport.server._body import parse_json_object
from runport.server._errors import RequestRefused
from runport.server._frontends._chat import DEFAULT_MAX_CHAT_MESSAGES, History
from runport.server._frontends._files import SentFile
from runport.server._frontends._protocol import ChatCall
from runport.server._frontends._reading import RequestModel, bad, read_model


class RunAgentInput(RequestModel):
    """AG-UI's ``RunAgentInput``: what runport reads of it typed, the rest any JSON."""

    thread_id: str = Field(alias="threadId", min_length=1)
    run_id: str = Field(alias="runId", min_length=1)
    parent_run_id: JsonValue = Field(None, alias="parentRunId")
    protocol_version: JsonValue = Field(None, alias="protocolVersion")
    state: JsonValue = None
    tools: list[JsonValue] | None = None
    context: list[JsonValue] | None = None
    resume: JsonValue = None
    forwarded_props: dict[str, JsonValue] | None = Field(None, alias="forwardedProps")
    messages: list[JsonValue] = Field(min_length=1)


_IDS = "'threadId' and 'runId' must be non-empty strings"
_INPUT_REFUSALS = {
    "threadId": _IDS,
    "runId": _IDS,
    "tools": "'tools' must be a list: the tools a client offers (this agent runs its own)",
    "context": "'context' must be a list of context entries",
    "forwardedProps": (
        "'forwardedProps' may carry only {inputs: {...}}: the contract's other inputs"
    ),
    "messages": "'messages' must be a non-empty list ending with the user's message",
}


class AGUIMessage(RequestModel):
    """What every AG-UI message may carry besides its role and content."""

    id: str | None = None
    metadata: JsonValue = None
    subagent_run_id: JsonValue = Field(None, alias="subagentRunId")
    encrypted_value: JsonValue = Field(None, alias="encryptedValue")


class UserMessage(AGUIMessage):
    role: Literal["user"]
    content: str | list[JsonValue]
    name: str | None = None


class AssistantMessage(AGUIMessage):
    role: Literal["assistant"]
    content: str | None = None
    name: str | None = None
    tool_calls: list[JsonValue] | None = Field(None, alias="toolCalls")


class ToolMessage(AGUIMessage):
    role: Literal["tool"]
    content: str | list[JsonValue]
    tool_call_id: str = Field(alias="toolCallId")
    error: str | None = None


class ReasoningMessage(AGUIMessage):
    """What a UI showed of the model's reasoning: never sent back unsealed."""

    role: Literal["reasoning"]
    content: JsonValue = None


class ActivityMessage(AGUIMessage):
    """What a UI showed of an activity: never sent back."""

    role: Literal["activity"]
    content: JsonValue = None
    activity_type: JsonValue = Field(None, alias="activityType")


class InstructionMessage(AGUIMessage):
    """A system or developer message: refused, they come from the contract."""

    role: Literal["system", "developer"]
    content: JsonValue = None
    name: JsonValue = None


_MESSAGES: dict[str, type[AGUIMessage]] = {
    "user": UserMessage,
    "assistant": AssistantMessage,
    "tool": ToolMessage,
    "reasoning": ReasoningMessage,
    "activity": ActivityMessage,
    "system": InstructionMessage,
    "developer": InstructionMessage,
}


def _message(raw: JsonValue, where: str) -> AGUIMessage:
    role = raw.get("role") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(role, str) or role not in _MESSAGES:
        raise bad(f"{where} must be an AG-UI message with a known role")
    model = _MESSAGES[role]

    def unanswered(call_id: object) -> str:
        return f"{where}: a tool result for {call_id!r} answers no call before it"

    content = (
        f"{where}: an assistant's 'content' must be a string"
        if role == "assistant"
        else f"{where}: 'content' must be a string or a list of parts"
    )
    refusals: dict[str, str | Callable[[Any], str]] = {
        "content": content,
        "toolCallId": unanswered,
        "toolCalls": f"{where}: 'toolCalls' must be a list",
        "id": f"{where}: a message's 'id' must be a string",
        "name": f"{where}: a message's 'name' must be a string",
        "error": f"{where}: a tool message's 'error' must be a string",
    }
    return read_model(model, raw, refusals, _unknown_in(where))


def _unknown_in(where: str) -> Callable[[list[str]], str]:
    def unknown(extra: list[str]) -> str:
        return f"{where} has unknown field(s): {', '.join(extra)}"

    return unknown


# @ag-ui/core 1.0's media parts that runport maps to a file value: an image or a document
_MEDIA_PARTS = frozenset({"image", "document"})
_PART_KEYS = frozenset({"type", "id", "source", "metadata"})


def _content_text(content: Any, where: str) -> str:
    """A tool result's content (or a user message's without media): its text."""
    text, files = _user_content(content, where)
    if files:
        raise bad(f"{files[0].where}: a tool result cannot carry an image or a document")
    return text


def _user_content(content: Any, where: str) -> tuple[str, list[SentFile]]:
    """A user message's text (its text parts joined) and its image and document parts."""
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise bad(f"{where}: 'content' must be a string or a list of parts")
    texts: list[str] = []
    files: list[SentFile] = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else part
        if isinstance(part, dict) and isinstance(kind, str) and kind in _MEDIA_PARTS:
            files.append(_media(part, f"{where}, part {index}"))
            continue
        if kind != "text":
            raise bad(
                f"{where}, part {index}: {kind!r} parts are not taken (runport takes text, "
                "image and document parts)"
            )
        text = part.get("text") if isinstance(part, dict) else None
        if not isinstance(text, str):
            raise bad(f"{where}: a text part needs a string 'text'")
        texts.append(text)
    return "\n".join(texts), files


def _media(part: dict[str, Any], where: str) -> SentFile:
    """An image or document part, its ``source`` inline (``{type: data, value, mimeType}``)
    or by URL (``{type: url, value, mimeType}``). A provider's file handle (``{type: file}``)
    is refused: it names bytes runport cannot check or fingerprint."""
    extra = sorted(set(part) - _PART_KEYS)
    if extra:
        raise bad(f"{where}: an {part['type']} part has unknown field(s): {', '.join(extra)}")
    source = part.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("value"), str):
        raise bad(f"{where}: a media part needs a source {{type, value, mimeType}}")
    media_type = source.get("mimeType")
    if media_type is not None and not isinstance(media_type, str):
        raise bad(f"{where}: a source's 'mimeType' must be a string")
    if source.get("type") == "data":
        return SentFile(where, media_type, data=source["value"])
    if source.get("type") == "url":
        return SentFile(where, media_type, url=source["value"])
    raise bad(
        f"{where}: a source of type {source.get('type')!r} is not taken: send the bytes "
        "(type data) or an https URL (type url)"
    )


def _tool_calls(value: Any, where: str, history: History) -> list[ToolCall]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad(f"{where}: 'toolCalls' must be a list")
    calls: list[ToolCall] = []
    for call in value:
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(function, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str)
        ):
            raise bad(f"{where}: a tool call needs an id and a function {{name, arguments}}")
        history.claim_call(call["id"], where)
        try:
            is_json, arguments = parse_json_text(function["arguments"])
        except JsonLimitError as error:
            raise bad(f"{where}: tool call {call['id']!r}: {error.message}") from None
        calls.append(
            ToolCall(
                call_id=call["id"],
                name=function["name"],
                arguments=arguments if is_json else function["arguments"],
            )
        )
    return calls


RESUME_METADATA = "runport"
"""The key of an interrupt's (and its resume entry's) metadata that holds the continuation."""


def _approvals_refused(message: str) -> RequestRefused:
    return RequestRefused(400, ErrorCode.APPROVALS_INVALID, message)


def _resume(entries: JsonValue) -> tuple[str, dict[str, bool | str]]:
    """The continuation and the decisions ``resume`` carries (a coded 400 otherwise)."""
    if not isinstance(entries, list) or not entries:
        raise _approvals_refused("'resume' must be a non-empty list of resume entries")
    approvals: dict[str, bool | str] = {}
    tokens: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"resume entry {index}"
        if not isinstance(entry, dict) or not isinstance(entry.get("interruptId"), str):
            raise _approvals_refused(f"{where} needs a string 'interruptId'")
        call_id = str(entry["interruptId"])
        if call_id in approvals:
            raise _approvals_refused(f"{where}: interrupt {call_id!r} is answered twice")
        status, payload = entry.get("status"), entry.get("payload")
        if status == "cancelled":
            approvals[call_id] = "the person cancelled the approval"
        elif status == "resolved" and isinstance(payload, dict):
            approved, reason = payload.get("approved"), payload.get("reason")
            if not isinstance(approved, bool) or not (reason is None or isinstance(reason, str)):
                raise _approvals_refused(
                    f"{where}: a resolved approval's payload is {{approved: boolean, reason?}}"
                )
            approvals[call_id] = True if approved else (reason or False)
        else:
            raise _approvals_refused(
                f"{where}: 'status' is resolved (with payload {{approved, reason?}}) or cancelled"
            )
        metadata = entry.get("metadata")
        carried = metadata.get(RESUME_METADATA) if isinstance(metadata, dict) else None
        if isinstance(carried, dict) and "continuation" in carried:
            token = carried["continuation"]
            tokens.add(token if isinstance(token, str) else "")
    if len(tokens) != 1 or "" in tokens:
        raise RequestRefused(
            400,
            ErrorCode.CONTINUATION_INVALID,
            "the resume entries must carry their interrupts' continuation "
            f"(metadata.{RESUME_METADATA}.continuation, one and the same)",
        )
    return tokens.pop(), approvals


_TOOL_KEYS = frozenset({"name", "description", "parameters"})
_NO_ARGUMENTS: dict[str, JsonValue] = {"type": "object", "properties": {}}


def _client_tool(entry: JsonValue, where: str) -> Tool:
    """A tool the client offers to run itself (AG-UI ``Tool``: ``{name, description,
    parameters}``), declared to the run as ``Tool.client`` (adr/0069)."""
    if not isinstance(entry, dict) or set(entry) - _TOOL_KEYS:
        raise bad(f"{where} must be a tool: {{name, description, parameters}}")
    name = entry.get("name")
    description = entry.get("description", "")
    parameters = entry.get("parameters", _NO_ARGUMENTS)
    if not isinstance(name, str) or not name or not isinstance(description, str):
        raise bad(f"{where}: a tool's name is a non-empty string, its description a string")
    if not isinstance(parameters, dict):
        raise bad(f"{where}: a tool's parameters are a JSON Schema object")
    return Tool.client(name, description, parameters)


def _state_continuation(state: JsonValue) -> str | None:
    """The continuation a run paused at client calls left in the thread's state
    (``{runport: {continuation}}``), which the client sends back with every run."""
    held = state.get(RESUME_METADATA) if isinstance(state, dict) else None
    token = held.get("continuation") if isinstance(held, dict) else None
    return token if isinstance(token, str) else None


def _trailing_results(messages: list[JsonValue]) -> dict[str, JsonValue | ClientToolError]:
    """The tool messages after the thread's last assistant message, by call id: the results
    the client's tools gave (and those the server ran, already in the conversation). A tool
    message with an ``error`` is the client tool's failure: the model is told the error."""
    results: dict[str, JsonValue | ClientToolError] = {}
    for raw in reversed(messages):
        if not isinstance(raw, dict) or raw.get("role") != "tool":
            break
        call_id, content, error = raw.get("toolCallId"), raw.get("content"), raw.get("error")
        if not isinstance(call_id, str) or not isinstance(content, str):
            raise bad("a tool message is {role: 'tool', toolCallId, content: string}")
        if error is not None and not isinstance(error, str):
            raise bad(f"tool call {call_id!r}: a tool message's 'error' must be a string")
        if call_id in results:
            raise bad(f"tool call {call_id!r} is answered twice")
        results[call_id] = content if error is None else ClientToolError(error)
    return dict(reversed(results.items()))


def parse_agui(
    body: bytes, contract: Contract, *, max_messages: int = DEFAULT_MAX_CHAT_MESSAGES
) -> tuple[ChatCall, str, str]:
    """The run in a ``RunAgentInput`` body, with its thread and run ids, or a 400."""
    data = parse_json_object(body, "the body must be AG-UI's RunAgentInput (a JSON object)")
    request = read_model(
        RunAgentInput,
        data,
        _INPUT_REFUSALS,
        lambda unknown: f"unknown field(s) in RunAgentInput: {', '.join(unknown)}",
    )
    thread_id, run_id = request.thread_id, request.run_id
    offered = request.tools or []
    client_tools = tuple(_client_tool(entry, f"tools[{i}]") for i, entry in enumerate(offered))
    if len({tool.name for tool in client_tools}) < len(client_tools):
        raise bad("'tools' names one tool twice")
    if request.context:
        raise bad("'context' entries are not taken: send the run's values in forwardedProps.inputs")
    sealed = _state_continuation(request.state)
    answering = _trailing_results(request.messages)
    if request.resume is not None or (sealed is not None and answering):
        if len(request.messages) > max_messages:
            raise RequestRefused(
                413,
                ErrorCode.REQUEST_TOO_LARGE,
                f"the thread carries {len(request.messages)} messages; this server takes at "
                f"most {max_messages}",
            )
        if request.resume is not None:
            continuation, approvals = _resume(request.resume)
        else:
            assert sealed is not None
            continuation, approvals = sealed, {}
        call = ChatCall(
            thread_id,
            {},
            None,
            [],
            None,
            run_id=run_id,
            contract_id=contract.id,
            continuation=continuation,
            approvals=approvals,
            outputs=answering,
            client_tools=client_tools,
        )
        return call, thread_id, run_id
    props = request.forwarded_props or {}
    if set(props) - {"inputs"}:
        raise bad(_INPUT_REFUSALS["forwardedProps"])
    inputs = props.get("inputs", {})
    if not isinstance(inputs, dict):
        raise bad("'forwardedProps.inputs' must be an object")
    messages = request.messages
    history = History.begin(
        contract,
        inputs,
        None,
        inputs_field="forwardedProps.inputs",
        count=len(messages),
        max_messages=max_messages,
        what="thread",
    )
    last = len(messages) - 1
    for index, raw in enumerate(messages):
        where = f"message {index}"
        message = _message(raw, where)
        if index == last and not isinstance(message, UserMessage):
            raise bad("the last message must be the user's: it is what the run answers")
        if isinstance(message, UserMessage):
            text, sent = _user_content(message.content, where)
            history.user_message(text, sent, where, last=index == last)
        elif isinstance(message, AssistantMessage):
            calls = _tool_calls(message.tool_calls, where, history)
            history.messages.append(
                Message(role="assistant", content=message.content or "", tool_calls=calls)
            )
        elif isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if not history.answers(call_id):
                raise bad(f"{where}: a tool result for {call_id!r} answers no call before it")
            history.messages.append(
                Message(
                    role="tool", content=_content_text(message.content, where), tool_call_id=call_id
                )
            )
        elif isinstance(message, InstructionMessage):
            raise bad(
                f"{where}: {message.role} messages come from the contract, not from the thread"
            )
        # reasoning and activity messages are what a UI showed: never sent back unsealed
    call = ChatCall(
        thread_id,
        history.run_inputs(),
        None,
        history.messages,
        None,
        run_id=run_id,
        contract_id=contract.id,
        client_tools=client_tools,
    )
    return call, thread_id, run_id
