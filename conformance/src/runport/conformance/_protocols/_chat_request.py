"""What a chat-completions request must carry of the ``ExecutionRequest`` it was made from:
the tools, the ask for structured output, and the conversation so far (a previous turn's tool
calls and their results included) — each problem named by its field, as the API would read
it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from runport.contracts import ExecutionRequest, Message

__all__ = ["chat_request_problems"]


def _text(content: Any) -> str | None:
    """A message's content as text: a string, or a list of text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(part, Mapping) and part.get("type") == "text" for part in content
    ):
        return "".join(str(part.get("text", "")) for part in content)
    return None


def _arguments(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _call_problems(where: str, sent: Any, message: Message) -> list[str]:
    calls = message.tool_calls or []
    if not isinstance(sent, list) or len(sent) != len(calls):
        count = len(sent) if isinstance(sent, list) else 0
        return [f"{where}.tool_calls has {count} call(s), the turn made {len(calls)}"]
    problems: list[str] = []
    for number, (wire, call) in enumerate(zip(sent, calls, strict=True)):
        at = f"{where}.tool_calls[{number}]"
        function = wire.get("function") if isinstance(wire, Mapping) else None
        if not isinstance(wire, Mapping) or not isinstance(function, Mapping):
            problems.append(f"{at} is not a function call")
            continue
        if wire.get("id") != call.call_id:
            problems.append(f"{at}.id is {wire.get('id')!r}, the call's id {call.call_id!r}")
        if function.get("name") != call.name:
            problems.append(f"{at}.function.name is {function.get('name')!r}, not {call.name!r}")
        if _arguments(function.get("arguments")) != call.arguments:
            problems.append(
                f"{at}.function.arguments is {function.get('arguments')!r}, the call's "
                f"arguments {json.dumps(call.arguments)}"
            )
    return problems


def _message_problems(sent: Any, messages: list[Message]) -> list[str]:
    if not isinstance(sent, list):
        return ["messages is missing"]
    if len(sent) != len(messages):
        roles = [entry.get("role") if isinstance(entry, Mapping) else None for entry in sent]
        conversation = [message.role for message in messages]
        return [f"messages has roles {roles}, the conversation {conversation}"]
    problems: list[str] = []
    for number, (wire, message) in enumerate(zip(sent, messages, strict=True)):
        where = f"messages[{number}]"
        if not isinstance(wire, Mapping):
            problems.append(f"{where} is not an object")
            continue
        role = wire.get("role")
        if role != message.role and not (message.role == "system" and role == "developer"):
            problems.append(f"{where}.role is {role!r}, not {message.role!r}")
        content = _text(wire.get("content"))
        want = message.content if isinstance(message.content, str) else None
        if want is not None and (content or "") != want:
            problems.append(f"{where}.content is {wire.get('content')!r}, not {want!r}")
        if message.tool_calls:
            problems += _call_problems(where, wire.get("tool_calls"), message)
        if message.tool_call_id is not None and wire.get("tool_call_id") != message.tool_call_id:
            problems.append(
                f"{where}.tool_call_id is {wire.get('tool_call_id')!r}, the result is for "
                f"{message.tool_call_id!r}"
            )
    return problems


def _tool_problems(sent: Any, request: ExecutionRequest) -> list[str]:
    tools = request.interaction.tools or []
    if not tools:
        return []
    if not isinstance(sent, list) or not sent:
        names = [tool.name for tool in tools]
        return [f"tools is missing: the request offers {names}"]
    if len(sent) != len(tools):
        return [f"tools has {len(sent)} tool(s), the request offers {len(tools)}"]
    problems: list[str] = []
    for number, (wire, tool) in enumerate(zip(sent, tools, strict=True)):
        function = wire.get("function") if isinstance(wire, Mapping) else None
        if not isinstance(function, Mapping) or wire.get("type") != "function":
            problems.append(f"tools[{number}] is not a function tool")
            continue
        if function.get("name") != tool.name:
            problems.append(
                f"tools[{number}].function.name is {function.get('name')!r}, not {tool.name!r}"
            )
        if function.get("parameters") != tool.parameters:
            problems.append(
                f"tools[{number}].function.parameters is {function.get('parameters')!r}, "
                f"{tool.name}'s parameters {json.dumps(tool.parameters)}"
            )
    return problems


def _format_problems(sent: Any, request: ExecutionRequest) -> list[str]:
    schema = request.interaction.output_schema
    if schema.get("type") == "string":
        return []
    if not isinstance(sent, Mapping):
        return [
            "response_format is missing: the contract asks for structured output "
            f"({json.dumps(schema)})"
        ]
    kind = sent.get("type")
    if kind == "json_object":
        return []
    if kind != "json_schema":
        return [f"response_format.type is {kind!r}, not 'json_schema' (or 'json_object')"]
    format_ = sent.get("json_schema")
    given = format_.get("schema") if isinstance(format_, Mapping) else None
    if given != schema:
        return [
            f"response_format.json_schema.schema is {json.dumps(given)}, the contract's "
            f"{json.dumps(schema)}"
        ]
    return []


def chat_request_problems(body: Any, request: ExecutionRequest) -> list[str]:
    """What the chat-completions request ``body`` gets wrong of ``request``."""
    if not isinstance(body, Mapping):
        return ["the request body is not a JSON object"]
    interaction = request.interaction
    return [
        *_message_problems(body.get("messages"), list(interaction.messages)),
        *_tool_problems(body.get("tools"), request),
        *_format_problems(body.get("response_format"), request),
    ]
