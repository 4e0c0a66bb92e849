"""A chat request as a run: the AI SDK chat transport's body read into the run's inputs and
history (adr/0036).

The client keeps the conversation as ``UIMessage``s and sends all of it each time. Every
message before the last user message becomes history — each earlier user message rendered
through the contract as the model saw it, each assistant step an assistant message with its
tool calls, its tools' results and the reasoning this server sealed — and the last user
message's text is bound to the contract's chat input and its files to the contract's part
inputs (``_files``), as each earlier user message's are when it is rendered for the
history. What the UI only shows — sources, data parts, the provider's own tool parts
(``providerExecuted``) and the files the model generated — is left out (adr/0064). Anything
the server cannot map faithfully is refused before the run starts, with a 400 naming it.

A person in the loop (adr/0069): a request whose last message is the assistant's, its tool
parts answered with ``addToolApprovalResponse`` (``approval-responded``), resumes the paused
run from the continuation that message carries (``data-runport-continuation``); a denied call
earlier in the chat is the denial the model read, a call nobody answered before the chat
moved on a denial too, and an answer in any message but the last one arrived after the chat
moved on: refused, so no approval is silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import Field, JsonValue

from runport.application import ClientToolError
from runport.contracts import ErrorCode, Message, ReasoningPart, ToolCall
from runport.core import Contract
from runport.server._body import parse_json_object
from runport.server._errors import RequestRefused
from runport.server._frontends._chat import DEFAULT_MAX_CHAT_MESSAGES, History, tool_content
from runport.server._frontends._files import SentFile
from runport.server._frontends._protocol import ChatCall
from runport.server._frontends._reading import RequestModel, bad, read_model
from runport.server._reasoning_seal import PROVIDER_KEY, SealBroken, unsealed_reasoning

_TRIGGERS = ("regenerate-message", "submit-message")
_TOOL_STATES = frozenset(
    {
        "input-streaming",
        "input-available",
        "approval-requested",
        "approval-responded",
        "output-available",
        "output-error",
        "output-denied",
    }
)
_ANSWERED = frozenset({"output-available", "output-error", "output-denied", "approval-requested"})
_CONTINUATION_PART = "data-runport-continuation"
_MOVED_ON = "nobody answered before the chat moved on"
# Parts a UI keeps for itself (step boundaries, runport's own data parts, sources): they
# carry nothing the model said or needs back.
_SHOWN_ONLY = ("step-start", "data-", "source-url", "source-document")
_FILE_KEYS = frozenset({"type", "mediaType", "url", "filename", "providerMetadata"})


class ChatRequest(RequestModel):
    """The body the AI SDK's default chat transport sends, and runport's two additions
    (``inputs``: the contract's other inputs; ``context``)."""

    id: str = Field(min_length=1, max_length=200)
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    message_id: str | None = Field(None, alias="messageId")
    inputs: dict[str, JsonValue] = Field(default_factory=dict)
    context: dict[str, JsonValue] | None = None
    messages: list[JsonValue] = Field(min_length=1)


class UIMessage(RequestModel):
    """One ``UIMessage``: its parts are read one by one (``_user_parts``, ``AssistantTurns``)."""

    parts: list[JsonValue]
    role: str
    id: str | None = None
    metadata: JsonValue = None


_BODY_REFUSALS = {
    "id": "'id' (the chat's id) must be a non-empty string of at most 200 characters",
    "trigger": f"'trigger' must be one of {', '.join(_TRIGGERS)}",
    "messageId": "'messageId' must be a string",
    "inputs": "'inputs' must be an object, and 'context' an object or null",
    "context": "'inputs' must be an object, and 'context' an object or null",
    "messages": "'messages' must be a non-empty list of UI messages",
}
_BODY_KEYS = ("context", "id", "inputs", "messageId", "messages", "trigger")


def _unknown_body_fields(unknown: list[str]) -> str:
    return (
        f"unknown field(s) in the chat body: {', '.join(unknown)} "
        f"(expected {', '.join(_BODY_KEYS)})"
    )


def _user_parts(parts: list[Any], where: str) -> tuple[str, list[SentFile]]:
    """A user message's text (its text parts joined) and the files it carries, in order."""
    texts: list[str] = []
    files: list[SentFile] = []
    for index, part in enumerate(parts):
        kind = _part_type(part, where)
        if kind == "text":
            texts.append(_string(part, "text", where))
        elif kind == "file":
            files.append(_file_part(part, f"{where}, part {index}"))
        elif not kind.startswith(_SHOWN_ONLY):
            raise bad(f"{where}: a user message cannot carry a {kind!r} part")
    return "\n".join(texts), files


def _file_part(part: Mapping[str, Any], where: str) -> SentFile:
    """An AI SDK ``FileUIPart`` (``{type: file, mediaType, url, filename?,
    providerMetadata?}``); its provider metadata is the client's, and is not sent on."""
    extra = sorted(set(part) - _FILE_KEYS)
    if extra:
        raise bad(f"{where}: a file part has unknown field(s): {', '.join(extra)}")
    media_type, url = _string(part, "mediaType", where), _string(part, "url", where)
    filename = part.get("filename")
    if filename is not None and not isinstance(filename, str):
        raise bad(f"{where}: a file part's 'filename' must be a string")
    return SentFile(where, media_type, url=url, filename=filename or None)


def _provider_run(part: Mapping[str, Any], where: str) -> bool:
    """Whether a tool part is one the provider ran itself (``providerExecuted: true``)."""
    flag = part.get("providerExecuted", False)
    if not isinstance(flag, bool):
        raise bad(f"{where}: a tool part's 'providerExecuted' must be true or false")
    return flag


def _part_type(part: Any, where: str) -> str:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        raise bad(f"{where}: every part must be an object with a string 'type'")
    kind: str = part["type"]
    return kind


def _string(part: Mapping[str, Any], key: str, where: str) -> str:
    value = part.get(key)
    if not isinstance(value, str):
        raise bad(f"{where}: a {part.get('type')!r} part needs a string {key!r}")
    return value


class AssistantTurns:
    """Reads assistant ``UIMessage``s into ``history``: each step an assistant message with
    its tool calls and the reasoning this server sealed, then its tools' results."""

    def __init__(
        self, history: History, reasoning_key: bytes, *, contract_id: str, chat_id: str
    ) -> None:
        self._history = history
        self._reasoning_key = reasoning_key
        self._sealed_for = (contract_id, chat_id)

    def read(self, parts: list[Any], where: str) -> None:
        """One assistant UI message: each step (split at ``step-start``) one assistant
        message, followed by its tools' results."""
        step: list[Any] = []
        for index, part in enumerate(parts):
            if _part_type(part, f"{where}, part {index}") == "step-start":
                self._step(step, where)
                step = []
            else:
                step.append(part)
        self._step(step, where)

    def _step(self, parts: list[Any], where: str) -> None:
        texts: list[str] = []
        calls: list[ToolCall] = []
        results: list[Message] = []
        reasoning: list[ReasoningPart] | None = None
        for part in parts:
            kind = _part_type(part, where)
            if kind == "text":
                texts.append(_string(part, "text", where))
            elif kind == "reasoning":
                sealed = self._reasoning(part, where)
                if sealed is not None:
                    if reasoning is not None:
                        raise bad(f"{where}: one step carries two sets of sealed reasoning")
                    reasoning = sealed
            elif (kind.startswith("tool-") or kind == "dynamic-tool") and _provider_run(
                part, where
            ):
                continue  # the provider ran it: never a call the run or the client makes
            elif kind.startswith("tool-") or kind == "dynamic-tool":
                call, result = self._tool(part, kind, where)
                calls.append(call)
                if result is not None:
                    results.append(result)
            elif kind == "file":
                _file_part(part, where)  # a file the model made: shown, never sent back
            elif not kind.startswith(_SHOWN_ONLY):
                raise bad(f"{where}: an assistant message cannot carry a {kind!r} part")
        if not texts and not calls and not reasoning:
            return
        self._history.messages.append(
            Message(role="assistant", content="".join(texts), tool_calls=calls, reasoning=reasoning)
        )
        self._history.messages.extend(results)

    def _reasoning(self, part: Mapping[str, Any], where: str) -> list[ReasoningPart] | None:
        """The blocks sealed into a reasoning part's metadata. Reasoning without runport's
        seal is shown text only: it never goes back to a provider."""
        _string(part, "text", where)
        metadata = part.get("providerMetadata")
        if not isinstance(metadata, dict) or PROVIDER_KEY not in metadata:
            return None
        try:
            contract_id, chat_id = self._sealed_for
            return unsealed_reasoning(
                metadata, self._reasoning_key, contract_id=contract_id, chat_id=chat_id
            )
        except SealBroken as broken:
            raise bad(
                f"{where}: a reasoning part's provider metadata is refused: {broken}"
            ) from None

    def _tool(
        self, part: Mapping[str, Any], kind: str, where: str
    ) -> tuple[ToolCall, Message | None]:
        name = _string(part, "toolName", where) if kind == "dynamic-tool" else kind[5:]
        call_id = _string(part, "toolCallId", where)
        state = part.get("state")
        if not isinstance(state, str) or state not in _TOOL_STATES:
            raise bad(f"{where}: tool call {call_id!r} has an unknown state {state!r}")
        if not name:
            raise bad(f"{where}: a tool part needs a tool name")
        self._history.claim_call(call_id, where)
        if "input" not in part and state in _ANSWERED:
            raise bad(f"{where}: a tool result for {call_id!r} answers no call (it has no input)")
        arguments: JsonValue = part.get("input")
        call = ToolCall(call_id=call_id, name=name, arguments=arguments)
        if state in _ANSWERED:
            self._history.answers(call_id)
        if state == "approval-responded":
            raise _moved_on(call_id, where)
        if state == "output-available":
            content = tool_content(part.get("output"))
        elif state == "output-error":
            content = _string(part, "errorText", where)
        elif state == "output-denied":
            content = denial(name, _decision(part, call_id, where))
        elif state == "approval-requested":
            content = denial(name, _MOVED_ON)  # the person moved on instead of answering
        else:
            return call, None
        return call, Message(role="tool", content=content, tool_call_id=call_id)


def denial(name: str, decision: bool | str) -> str:
    """The tool message of a denied call, as the run wrote it when the person denied it."""
    reason = (
        decision if isinstance(decision, str) and decision.strip() else "a person denied this call"
    )
    return f"denied: tool {name!r} was not run: {reason}"


def _decision(part: Mapping[str, Any], call_id: str, where: str) -> bool | str:
    """An answered approval (``{id, approved, reason?}``) as the run's decision: ``True``,
    or the denial's reason (``False`` without one)."""
    approval = part.get("approval")
    approved = approval.get("approved") if isinstance(approval, dict) else None
    reason = approval.get("reason") if isinstance(approval, dict) else None
    if not isinstance(approved, bool) or not (reason is None or isinstance(reason, str)):
        raise RequestRefused(
            400,
            ErrorCode.APPROVALS_INVALID,
            f"{where}: tool call {call_id!r}: an answered approval is "
            "{id, approved: true | false, reason?: string}",
        )
    return True if approved else (reason or False)


def _moved_on(call_id: str, where: str) -> RequestRefused:
    return RequestRefused(
        400,
        ErrorCode.APPROVALS_INVALID,
        f"{where}: the answer to tool call {call_id!r} arrived after the chat moved on: "
        "only the last message's approvals resume its paused run, and nothing was run",
    )


def _resumed(request: ChatRequest, contract: Contract, max_messages: int) -> ChatCall:
    """A request that answers the paused run its last (assistant) message ended with: the
    approvals that message's tool parts carry and its sealed continuation. The conversation
    is the continuation's; the messages before only have to carry no other answer."""
    messages = request.messages
    if len(messages) > max_messages:
        raise RequestRefused(
            413,
            ErrorCode.REQUEST_TOO_LARGE,
            f"the chat carries {len(messages)} messages; this server takes at most {max_messages}",
        )
    approvals: dict[str, bool | str] = {}
    outputs: dict[str, JsonValue | ClientToolError] = {}
    continuation: JsonValue = None
    last = len(messages) - 1
    for index, raw in enumerate(messages):
        where = f"message {index}"
        if not isinstance(raw, dict):
            raise bad(f"{where} must be an object")
        parts: list[Any] = _ui_message(raw, where).parts
        for number, part in enumerate(parts):
            at = f"{where}, part {number}"
            kind = _part_type(part, at)  # a part is an object from here on
            if kind == _CONTINUATION_PART and index == last:
                continuation = part.get("data")
            if not (kind.startswith("tool-") or kind == "dynamic-tool"):
                continue
            state = part.get("state")
            answered = state in ("output-available", "output-error")
            if index == last and answered and not part.get("providerExecuted"):
                call_id = _string(part, "toolCallId", at)
                if call_id in outputs:
                    raise bad(f"{at}: tool call {call_id!r} appears twice in the message")
                # a client tool's result (or its failure, ``addToolOutput``'s output-error),
                # or one the server ran, shown again
                outputs[call_id] = (
                    part.get("output")
                    if state == "output-available"
                    else ClientToolError(_string(part, "errorText", at))
                )
                continue
            if state != "approval-responded":
                continue
            call_id = _string(part, "toolCallId", at)
            if index != last:
                raise _moved_on(call_id, at)
            if call_id in approvals or call_id in outputs:
                raise bad(f"{at}: tool call {call_id!r} appears twice in the message")
            approvals[call_id] = _decision(part, call_id, at)
    if not approvals and not outputs:
        raise bad(
            "the last message must be the user's (it is what the run answers), or the "
            "assistant's with its approval requests or client tool calls answered"
        )
    if not isinstance(continuation, str):
        raise RequestRefused(
            400,
            ErrorCode.CONTINUATION_INVALID,
            f"message {last} answers a paused run but carries no continuation "
            f"(its {_CONTINUATION_PART!r} part, as the paused run's stream sent it)",
        )
    return ChatCall(
        request.id,
        {},
        None,
        [],
        request.message_id,
        contract_id=contract.id,
        continuation=continuation,
        approvals=approvals,
        outputs=outputs,
    )


def _ui_message(raw: Mapping[str, Any], where: str) -> UIMessage:
    def unknown(extra: list[str]) -> str:
        return f"{where} has unknown field(s): {', '.join(extra)}"

    def unknown_role(role: object) -> str:
        return f"{where} has an unknown role {role!r}"

    refusals: dict[str, str | Callable[[Any], str]] = {
        "parts": f"{where} needs a list of parts",
        "role": unknown_role,
        "id": f"{where}: a message's 'id' must be a string",
    }
    return read_model(UIMessage, raw, refusals, unknown)


def parse_chat(
    body: bytes,
    contract: Contract,
    reasoning_key: bytes,
    *,
    max_messages: int = DEFAULT_MAX_CHAT_MESSAGES,
) -> ChatCall:
    """The chat request in ``body`` (the AI SDK default chat transport's), or a 400."""
    data = parse_json_object(body, "the chat body must be a JSON object: {id, messages, trigger}")
    request = read_model(ChatRequest, data, _BODY_REFUSALS, _unknown_body_fields)
    messages, inputs, context = request.messages, request.inputs, request.context
    final = messages[-1]
    if isinstance(final, dict) and final.get("role") == "assistant":
        return _resumed(request, contract, max_messages)
    history = History.begin(
        contract,
        inputs,
        context,
        inputs_field="inputs",
        count=len(messages),
        max_messages=max_messages,
        what="chat",
    )
    assistant = AssistantTurns(history, reasoning_key, contract_id=contract.id, chat_id=request.id)
    last = len(messages) - 1
    for index, raw in enumerate(messages):
        where = f"message {index}"
        if not isinstance(raw, dict):
            raise bad(f"{where} must be an object")
        message = _ui_message(raw, where)
        role, parts = message.role, message.parts
        if role == "user":
            text, sent = _user_parts(parts, where)
            history.user_message(text, sent, where, last=index == last)
        elif index == last:
            raise bad("the last message must be the user's: it is what the run answers")
        elif role == "assistant":
            assistant.read(parts, where)
        elif role == "system":
            raise bad(f"{where}: system messages come from the contract, not from the chat")
        else:
            raise bad(f"{where} has an unknown role {role!r}")
    return ChatCall(
        request.id,
        history.run_inputs(),
        context,
        history.messages,
        request.message_id,
        contract_id=contract.id,
    )
