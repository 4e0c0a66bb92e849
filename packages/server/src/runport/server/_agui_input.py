"""AG-UI's ``RunAgentInput`` as a run: its messages before the last user message become the
history, that message's text the contract's chat input (adr/0036)."""

from __future__ import annotations

from typing import Any

from runport.contracts import ErrorCode, Message, ToolCall
from runport.core import Contract, JsonLimitError, parse_json_text
from runport.server._body import parse_json_object
from runport.server._chat import DEFAULT_MAX_CHAT_MESSAGES, ChatCall, History, bad, chat_input
from runport.server._errors import RequestRefused

_INPUT_KEYS = frozenset(
    {
        "threadId",
        "runId",
        "parentRunId",
        "protocolVersion",
        "state",
        "messages",
        "tools",
        "context",
        "forwardedProps",
        "resume",
    }
)
_COMMON = frozenset({"id", "role", "metadata", "subagentRunId", "encryptedValue"})
_MESSAGE_KEYS = {
    "user": _COMMON | {"content", "name"},
    "assistant": _COMMON | {"content", "name", "toolCalls"},
    "tool": _COMMON | {"content", "toolCallId", "error"},
    "reasoning": _COMMON | {"content"},
    "activity": _COMMON | {"activityType", "content"},
    "system": _COMMON | {"content", "name"},
    "developer": _COMMON | {"content", "name"},
}


def _content_text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad(f"{where}: 'content' must be a string or a list of parts")
    texts: list[str] = []
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "text":
            kind = part.get("type") if isinstance(part, dict) else part
            raise bad(
                f"{where}: {kind!r} parts (images, audio, documents) are not taken in "
                "messages yet; send text"
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise bad(f"{where}: a text part needs a string 'text'")
        texts.append(text)
    return "\n".join(texts)


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


def parse_agui(
    body: bytes, contract: Contract, *, max_messages: int = DEFAULT_MAX_CHAT_MESSAGES
) -> tuple[ChatCall, str, str]:
    """The run in a ``RunAgentInput`` body, with its thread and run ids, or a 400."""
    data = parse_json_object(body, "the body must be AG-UI's RunAgentInput (a JSON object)")
    unknown = sorted(set(data) - _INPUT_KEYS)
    if unknown:
        raise bad(f"unknown field(s) in RunAgentInput: {', '.join(unknown)}")
    thread_id, run_id = data.get("threadId"), data.get("runId")
    if not isinstance(thread_id, str) or not thread_id or not isinstance(run_id, str) or not run_id:
        raise bad("'threadId' and 'runId' must be non-empty strings")
    if data.get("tools"):
        raise bad("this agent runs its own tools: a RunAgentInput offering tools is refused")
    if data.get("context"):
        raise bad("'context' entries are not taken: send the run's values in forwardedProps.inputs")
    if data.get("resume"):
        raise bad("this agent sets no interrupts, so there is nothing to resume")
    props = data.get("forwardedProps") or {}
    if not isinstance(props, dict) or set(props) - {"inputs"}:
        raise bad("'forwardedProps' may carry only {inputs: {...}}: the contract's other inputs")
    inputs = props.get("inputs", {})
    if not isinstance(inputs, dict):
        raise bad("'forwardedProps.inputs' must be an object")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("'messages' must be a non-empty list ending with the user's message")
    if len(messages) > max_messages:
        raise RequestRefused(
            413,
            ErrorCode.REQUEST_TOO_LARGE,
            f"the thread carries {len(messages)} messages; "
            f"this server takes at most {max_messages}",
        )
    name = chat_input(contract)
    if name in inputs:
        raise bad(f"'forwardedProps.inputs' must not give {name!r}: the last user message is it")
    history = History(contract, name, dict(inputs), None)
    last = len(messages) - 1
    text = ""
    for index, message in enumerate(messages):
        where = f"message {index}"
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(message, dict) or role not in _MESSAGE_KEYS:
            raise bad(f"{where} must be an AG-UI message with a known role")
        extra = sorted(set(message) - _MESSAGE_KEYS[role])
        if extra:
            raise bad(f"{where} has unknown field(s): {', '.join(extra)}")
        if index == last and role != "user":
            raise bad("the last message must be the user's: it is what the run answers")
        if role == "user":
            text = _content_text(message.get("content"), where)
            if index < last:
                history.user(text, where)
        elif role == "assistant":
            content = message.get("content")
            if content is not None and not isinstance(content, str):
                raise bad(f"{where}: an assistant's 'content' must be a string")
            calls = _tool_calls(message.get("toolCalls"), where, history)
            history.messages.append(
                Message(role="assistant", content=content or "", tool_calls=calls)
            )
        elif role == "tool":
            call_id = message.get("toolCallId")
            if not isinstance(call_id, str) or not history.answers(call_id):
                raise bad(f"{where}: a tool result for {call_id!r} answers no call before it")
            history.messages.append(
                Message(
                    role="tool",
                    content=_content_text(message.get("content"), where),
                    tool_call_id=call_id,
                )
            )
        elif role in ("system", "developer"):
            raise bad(f"{where}: {role} messages come from the contract, not from the thread")
        # reasoning and activity messages are what a UI showed: never sent back unsealed
    call = ChatCall(thread_id, {**inputs, name: text}, None, history.messages, None)
    return call, thread_id, run_id
