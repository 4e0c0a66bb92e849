"""A chat request as a run: the AI SDK chat transport's body read into the run's inputs and
history (adr/0036).

The client keeps the conversation as ``UIMessage``s and sends all of it each time. Every
message before the last user message becomes history — each earlier user message rendered
through the contract as the model saw it, each assistant step an assistant message with its
tool calls, its tools' results and the reasoning this server sealed — and the last user
message's text is bound to the contract's chat input and its files to the contract's part
inputs (``_chat_files``), as each earlier user message's are when it is rendered for the
history. Anything the server cannot map faithfully is refused before the run starts, with a
400 naming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from runport.contracts import ErrorCode, FilePart, ImagePart, Message, ReasoningPart, ToolCall
from runport.core import Contract, ContractError, compile_contract
from runport.server._agui import tool_content
from runport.server._body import parse_json_object
from runport.server._chat_files import CHAT_EXTENSION, FileInputs, SentFile
from runport.server._errors import RequestRefused
from runport.server._reasoning_seal import PROVIDER_KEY, SealBroken, unsealed_reasoning

DEFAULT_MAX_CHAT_MESSAGES = 200
"""The most UI messages one chat request may carry (docs/limits.md)."""

_BODY_KEYS = frozenset({"id", "messages", "trigger", "messageId", "inputs", "context"})
_MESSAGE_KEYS = frozenset({"id", "role", "parts", "metadata"})
_TRIGGERS = frozenset({"submit-message", "regenerate-message"})
_TOOL_STATES = frozenset({"input-streaming", "input-available", "output-available", "output-error"})
_ANSWERED = frozenset({"output-available", "output-error"})
# Parts a UI keeps for itself (step boundaries, runport's own data parts, sources): they
# carry nothing the model said or needs back.
_SHOWN_ONLY = ("step-start", "data-", "source-url", "source-document")
_FILE_KEYS = frozenset({"type", "mediaType", "url", "filename", "providerMetadata"})


@dataclass(frozen=True)
class ChatCall:
    chat_id: str
    inputs: dict[str, Any]
    context: dict[str, Any] | None
    history: list[Message]
    message_id: str | None


def bad(message: str) -> RequestRefused:
    return RequestRefused(400, ErrorCode.DATA_INVALID, message)


def chat_input(contract: Contract) -> str:
    """The input a contract's chat messages are bound to: the one its ``runport.chat``
    extension names, else its only required string input; a contract with neither cannot
    be chatted with (a 400 that says how to name one)."""
    extension = contract.extensions.get(CHAT_EXTENSION)
    if isinstance(extension, dict) and isinstance(extension.get("input"), str):
        name = extension["input"]
        if name in contract.inputs:
            return name
    strings = [
        name
        for name, spec in contract.inputs.items()
        if spec.required and spec.json_schema.get("type") == "string"
    ]
    if len(strings) == 1:
        return strings[0]
    raise RequestRefused(
        400,
        ErrorCode.CONTRACT_INVALID,
        f"contract {contract.id!r} names no chat input: give it one required string input, "
        f"or name the input in its extensions ({CHAT_EXTENSION}: {{input: NAME}})",
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


class History:
    """The conversation so far, rebuilt message by message."""

    def __init__(
        self,
        contract: Contract,
        chat_name: str,
        inputs: dict[str, Any],
        context: dict[str, Any] | None,
        reasoning_key: bytes | None = None,
        files: FileInputs | None = None,
        *,
        chat_id: str = "",
    ) -> None:
        self._contract = contract
        self.files = files if files is not None else FileInputs(contract, inputs, "inputs")
        self._chat_name = chat_name
        self._inputs = inputs
        self._context = context
        self._reasoning_key = reasoning_key
        self._chat_id = chat_id
        self.messages: list[Message] = []
        self._call_ids: set[str] = set()
        self._answered: set[str] = set()

    def claim_call(self, call_id: str, where: str) -> None:
        """A tool call's id, seen once in the whole conversation."""
        if not call_id:
            raise bad(f"{where}: a tool call needs a non-empty id")
        if call_id in self._call_ids:
            raise bad(f"{where}: tool call {call_id!r} appears twice in the conversation")
        self._call_ids.add(call_id)

    def answers(self, call_id: str) -> bool:
        """Whether a result for ``call_id`` answers a call made before it (once)."""
        if call_id not in self._call_ids or call_id in self._answered:
            return False
        self._answered.add(call_id)
        return True

    def user(self, text: str, where: str, files: Sequence[SentFile] = ()) -> None:
        """An earlier user message as the model saw it: rendered through the contract, its
        text as the chat input and its files in the part inputs they bind to."""
        bound = self.files.bind(files, where)
        try:
            interaction = compile_contract(
                self._contract,
                inputs={**self._inputs, self._chat_name: text, **bound},
                context=self._context,
            )
        except ContractError as error:
            problems = "; ".join(diagnostic.message for diagnostic in error.diagnostics)
            raise bad(
                f"{where}: the contract does not take it as its chat input: {problems}"
            ) from None
        rendered = interaction.messages
        start = 0
        while start < len(rendered) and rendered[start].role in ("system", "developer"):
            start += 1
        self.messages.extend(rendered[start:])

    def assistant(self, parts: list[Any], where: str) -> None:
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
            elif kind.startswith("tool-") or kind == "dynamic-tool":
                call, result = self._tool(part, kind, where)
                calls.append(call)
                if result is not None:
                    results.append(result)
            elif kind == "file":
                raise bad(
                    f"{where}: an assistant message cannot carry a file: runport sends images "
                    "and files in user turns only"
                )
            elif not kind.startswith(_SHOWN_ONLY):
                raise bad(f"{where}: an assistant message cannot carry a {kind!r} part")
        if not texts and not calls and not reasoning:
            return
        self.messages.append(
            Message(role="assistant", content="".join(texts), tool_calls=calls, reasoning=reasoning)
        )
        self.messages.extend(results)

    def _reasoning(self, part: Mapping[str, Any], where: str) -> list[ReasoningPart] | None:
        """The blocks sealed into a reasoning part's metadata. Reasoning without runport's
        seal is shown text only: it never goes back to a provider."""
        _string(part, "text", where)
        metadata = part.get("providerMetadata")
        if not isinstance(metadata, dict) or PROVIDER_KEY not in metadata:
            return None
        if self._reasoning_key is None:
            return None
        try:
            return unsealed_reasoning(
                metadata, self._reasoning_key, contract_id=self._contract.id, chat_id=self._chat_id
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
        if state not in _TOOL_STATES:
            raise bad(f"{where}: tool call {call_id!r} has an unknown state {state!r}")
        if not name:
            raise bad(f"{where}: a tool part needs a tool name")
        self.claim_call(call_id, where)
        if "input" not in part and state in _ANSWERED:
            raise bad(f"{where}: a tool result for {call_id!r} answers no call (it has no input)")
        arguments: JsonValue = part.get("input")
        call = ToolCall(call_id=call_id, name=name, arguments=arguments)
        if state in _ANSWERED:
            self.answers(call_id)
        if state == "output-available":
            content = tool_content(part.get("output"))
        elif state == "output-error":
            content = _string(part, "errorText", where)
        else:
            return call, None
        return call, Message(role="tool", content=content, tool_call_id=call_id)


def parse_chat(
    body: bytes,
    contract: Contract,
    reasoning_key: bytes,
    *,
    max_messages: int = DEFAULT_MAX_CHAT_MESSAGES,
) -> ChatCall:
    """The chat request in ``body`` (the AI SDK default chat transport's), or a 400."""
    data = parse_json_object(body, "the chat body must be a JSON object: {id, messages, trigger}")
    unknown = sorted(set(data) - _BODY_KEYS)
    if unknown:
        raise bad(
            f"unknown field(s) in the chat body: {', '.join(unknown)} "
            f"(expected {', '.join(sorted(_BODY_KEYS))})"
        )
    chat_id = data.get("id")
    if not isinstance(chat_id, str) or not chat_id or len(chat_id) > 200:
        raise bad("'id' (the chat's id) must be a non-empty string of at most 200 characters")
    if data.get("trigger", "submit-message") not in _TRIGGERS:
        raise bad(f"'trigger' must be one of {', '.join(sorted(_TRIGGERS))}")
    message_id = data.get("messageId")
    if message_id is not None and not isinstance(message_id, str):
        raise bad("'messageId' must be a string")
    inputs = data.get("inputs", {})
    context = data.get("context")
    if not isinstance(inputs, dict) or (context is not None and not isinstance(context, dict)):
        raise bad("'inputs' must be an object, and 'context' an object or null")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("'messages' must be a non-empty list of UI messages")
    if len(messages) > max_messages:
        raise RequestRefused(
            413,
            ErrorCode.REQUEST_TOO_LARGE,
            f"the chat carries {len(messages)} messages; this server takes at most {max_messages}",
        )
    name = chat_input(contract)
    if name in inputs:
        raise bad(f"'inputs' must not give {name!r}: the chat's last user message is that input")
    files = FileInputs(contract, inputs, "inputs")
    history = History(contract, name, dict(inputs), context, reasoning_key, files, chat_id=chat_id)
    last = len(messages) - 1
    text = ""
    bound: dict[str, ImagePart | FilePart] = {}
    for index, message in enumerate(messages):
        where = f"message {index}"
        if not isinstance(message, dict):
            raise bad(f"{where} must be an object")
        extra = sorted(set(message) - _MESSAGE_KEYS)
        if extra:
            raise bad(f"{where} has unknown field(s): {', '.join(extra)}")
        role, parts = message.get("role"), message.get("parts")
        if not isinstance(parts, list):
            raise bad(f"{where} needs a list of parts")
        if role == "user":
            text, sent = _user_parts(parts, where)
            if index < last:
                history.user(text, where, sent)
            else:
                bound = files.bind(sent, where)
        elif index == last:
            raise bad("the last message must be the user's: it is what the run answers")
        elif role == "assistant":
            history.assistant(parts, where)
        elif role == "system":
            raise bad(f"{where}: system messages come from the contract, not from the chat")
        else:
            raise bad(f"{where} has an unknown role {role!r}")
    return ChatCall(
        chat_id,
        {**inputs, name: text, **bound},
        context,
        history.messages,
        message_id if isinstance(message_id, str) else None,
    )
