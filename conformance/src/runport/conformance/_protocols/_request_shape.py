"""What a request must carry of the ``ExecutionRequest`` it was made from, for the protocols
whose wire spreads it over different fields: each protocol reads its request into a
``SentShape`` (the tools offered, the tool calls and results sent back, the schema asked for,
each with the field it came from), and ``shape_problems`` compares that with the request."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from runport.contracts import ExecutionRequest

__all__ = [
    "SentShape",
    "converse_shape",
    "gemini_shape",
    "messages_shape",
    "responses_shape",
    "shape_problems",
]


_CallFields = tuple[str, str, str, str]
"""A history call's type, then the fields of its id, name and arguments."""
_ResultFields = tuple[str, str, str]
"""A tool result's type, then the fields of its call id and content."""


@dataclass
class SentShape:
    """A request as the suite reads it: each entry carries the path of the field it came from
    (``tools[1].input_schema``)."""

    tools: list[tuple[str, Any, Any]] = field(default_factory=list)
    """(path, name, parameters schema) per tool offered."""
    calls: list[tuple[str, Any, Any, Any]] = field(default_factory=list)
    """(path, call id or ``None`` when the wire has none, name, arguments) per call sent back."""
    results: list[tuple[str, Any, Any]] = field(default_factory=list)
    """(path, call id or ``None``, content) per tool result sent back."""
    schema: tuple[str, Any] | None = None
    """(path, schema) of the ask for structured output; ``None`` when none was made."""
    checks_schema: bool = True
    """False for a wire the suite does not hold to an ask for structured output."""

    def history_item(
        self,
        path: str,
        item: Mapping[str, Any],
        call: _CallFields,
        result: _ResultFields,
        *,
        wrapped: bool = False,
    ) -> None:
        """One block or item of the history sent back: a call when it is tagged ``call[0]``
        (its id, name and arguments under the fields ``call[1:]``), a tool result when it is
        tagged ``result[0]`` (the call id and content under ``result[1:]``). The tag is its
        ``type``, or with ``wrapped`` the key it holds them under (``{"toolUse": {…}}``)."""
        held = _tagged(item, call[0], wrapped)
        if held is not None:
            call_id, name, arguments = call[1:]
            self.calls.append((path, held.get(call_id), held.get(name), held.get(arguments)))
            return
        held = _tagged(item, result[0], wrapped)
        if held is not None:
            call_id, content = result[1:]
            self.results.append((path, held.get(call_id), held.get(content)))


def _tagged(item: Mapping[str, Any], tag: str, wrapped: bool) -> Mapping[str, Any] | None:
    if wrapped:
        return _map(item[tag]) if tag in item else None
    return item if item.get("type") == tag else None


def _parsed(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _same_content(sent: Any, content: Any) -> bool:
    """A tool result's content as sent: the text, its JSON, text blocks holding it, or an
    object holding either (a wire that wants an object)."""
    want = _parsed(content)
    if isinstance(sent, list):
        texts = [item.get("text") for item in sent if isinstance(item, Mapping) and "text" in item]
        jsons = [item.get("json") for item in sent if isinstance(item, Mapping) and "json" in item]
        if texts and "".join(str(text) for text in texts) == content:
            return True
        return jsons == [want]
    if sent == content or _parsed(sent) == want:
        return True
    return isinstance(sent, Mapping) and any(value in (content, want) for value in sent.values())


def shape_problems(sent: SentShape, request: ExecutionRequest) -> list[str]:
    """What ``sent`` gets wrong of ``request``, each problem naming the field."""
    interaction = request.interaction
    problems: list[str] = []
    tools = interaction.tools or []
    if tools and not sent.tools:
        problems.append(f"no tools were sent: the request offers {[t.name for t in tools]}")
    elif tools and len(sent.tools) != len(tools):
        names = [name for _, name, _ in sent.tools]
        problems.append(f"the tools sent are {names}, the request offers {[t.name for t in tools]}")
    else:
        for (path, name, schema), tool in zip(sent.tools, tools, strict=False):
            if name != tool.name:
                problems.append(f"{path} names {name!r}, not {tool.name!r}")
            elif schema != tool.parameters:
                problems.append(
                    f"{path} is {json.dumps(schema)}, {tool.name}'s parameters "
                    f"{json.dumps(tool.parameters)}"
                )
    calls = [call for m in interaction.messages for call in m.tool_calls or []]
    if len(sent.calls) != len(calls):
        problems.append(
            f"{len(sent.calls)} tool call(s) were sent back, the conversation has {len(calls)}"
        )
    else:
        for (path, call_id, name, arguments), call in zip(sent.calls, calls, strict=True):
            if call_id is not None and call_id != call.call_id:
                problems.append(f"{path} has id {call_id!r}, the call's {call.call_id!r}")
            if name != call.name:
                problems.append(f"{path} names {name!r}, the call {call.name!r}")
            if _parsed(arguments) != call.arguments:
                problems.append(
                    f"{path} has arguments {json.dumps(arguments)}, the call's "
                    f"{json.dumps(call.arguments)}"
                )
    results = [m for m in interaction.messages if m.role == "tool"]
    if len(sent.results) != len(results):
        problems.append(
            f"{len(sent.results)} tool result(s) were sent back, the conversation has "
            f"{len(results)}"
        )
    else:
        for (path, call_id, content), message in zip(sent.results, results, strict=True):
            if call_id is not None and call_id != message.tool_call_id:
                problems.append(
                    f"{path} is for {call_id!r}, the result for {message.tool_call_id!r}"
                )
            if not _same_content(content, message.content):
                problems.append(
                    f"{path} holds {json.dumps(content)}, the result {message.content!r}"
                )
    schema = interaction.output_schema
    if sent.checks_schema and schema.get("type") != "string":
        if sent.schema is None:
            problems.append(
                f"no structured output was asked for: the contract's schema is {json.dumps(schema)}"
            )
        elif sent.schema[1] is not None and sent.schema[1] != schema:
            problems.append(
                f"{sent.schema[0]} is {json.dumps(sent.schema[1])}, the contract's "
                f"{json.dumps(schema)}"
            )
    return problems


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


_TOOL_USE: Final[_CallFields] = ("tool_use", "id", "name", "input")
_TOOL_RESULT: Final[_ResultFields] = ("tool_result", "tool_use_id", "content")
_FUNCTION_CALL: Final[_CallFields] = ("function_call", "call_id", "name", "arguments")
_FUNCTION_CALL_OUTPUT: Final[_ResultFields] = ("function_call_output", "call_id", "output")
_FUNCTION_CALL_PART: Final[_CallFields] = ("functionCall", "id", "name", "args")
_FUNCTION_RESPONSE_PART: Final[_ResultFields] = ("functionResponse", "id", "response")
_TOOL_USE_BLOCK: Final[_CallFields] = ("toolUse", "toolUseId", "name", "input")
_TOOL_RESULT_BLOCK: Final[_ResultFields] = ("toolResult", "toolUseId", "content")


def messages_shape(body: Any, request: ExecutionRequest) -> SentShape:
    """An Anthropic Messages API request: ``tools[i].input_schema``, ``tool_use`` and
    ``tool_result`` blocks, and structured output as a forced tool's ``input_schema`` (or an
    ``output_format`` / ``output_config.format`` JSON schema)."""
    body = _map(body)
    offered = {tool.name for tool in request.interaction.tools or []}
    choice = _map(body.get("tool_choice"))
    forced = choice.get("name") if choice.get("type") == "tool" else None
    shape = SentShape()
    for number, tool in enumerate(_list(body.get("tools"))):
        tool = _map(tool)
        path = f"tools[{number}].input_schema"
        if tool.get("name") == forced and forced not in offered:
            shape.schema = (path, tool.get("input_schema"))
            continue
        shape.tools.append((path, tool.get("name"), tool.get("input_schema")))
    for key in ("output_format", "output_config"):
        given = _map(body.get(key))
        given = _map(given.get("format")) if key == "output_config" else given
        if given.get("type") == "json_schema":
            shape.schema = (f"{key}.schema", given.get("schema"))
    for i, message in enumerate(_list(body.get("messages"))):
        content = _map(message).get("content")
        for j, block in enumerate(_list(content)):
            path = f"messages[{i}].content[{j}]"
            shape.history_item(path, _map(block), _TOOL_USE, _TOOL_RESULT)
    return shape


def gemini_shape(body: Any) -> SentShape:
    """A Gemini API request: ``tools[k].functionDeclarations[j]``, ``functionCall`` and
    ``functionResponse`` parts, and ``generationConfig.responseJsonSchema`` (a
    ``responseSchema``, in the API's own schema dialect, counts as asked)."""
    body = _map(body)
    shape = SentShape()
    for k, tool in enumerate(_list(body.get("tools"))):
        for j, declaration in enumerate(_list(_map(tool).get("functionDeclarations"))):
            declaration = _map(declaration)
            key = "parametersJsonSchema" if "parametersJsonSchema" in declaration else "parameters"
            path = f"tools[{k}].functionDeclarations[{j}].{key}"
            shape.tools.append((path, declaration.get("name"), declaration.get(key)))
    config = _map(body.get("generationConfig"))
    if "responseJsonSchema" in config:
        shape.schema = ("generationConfig.responseJsonSchema", config["responseJsonSchema"])
    elif "responseSchema" in config:
        shape.schema = ("generationConfig.responseSchema", None)
    for i, content in enumerate(_list(body.get("contents"))):
        for j, part in enumerate(_list(_map(content).get("parts"))):
            path = f"contents[{i}].parts[{j}]"
            shape.history_item(
                path, _map(part), _FUNCTION_CALL_PART, _FUNCTION_RESPONSE_PART, wrapped=True
            )
    return shape


def responses_shape(body: Any) -> SentShape:
    """A Responses API request: ``tools[i]`` function tools, ``function_call`` and
    ``function_call_output`` input items, and ``text.format`` (``json_schema``; a
    ``json_object`` counts as asked)."""
    body = _map(body)
    shape = SentShape()
    for number, tool in enumerate(_list(body.get("tools"))):
        tool = _map(tool)
        if tool.get("type") == "function":
            path = f"tools[{number}].parameters"
            shape.tools.append((path, tool.get("name"), tool.get("parameters")))
    format_ = _map(_map(body.get("text")).get("format"))
    if format_.get("type") == "json_schema":
        shape.schema = ("text.format.schema", format_.get("schema"))
    elif format_.get("type") == "json_object":
        shape.schema = ("text.format", None)
    for i, item in enumerate(_list(body.get("input"))):
        shape.history_item(f"input[{i}]", _map(item), _FUNCTION_CALL, _FUNCTION_CALL_OUTPUT)
    return shape


def converse_shape(body: Any) -> SentShape:
    """A Bedrock Converse request: ``toolConfig.tools[i].toolSpec.inputSchema.json``,
    ``toolUse`` and ``toolResult`` blocks (the suite holds the wire to no ask for structured
    output)."""
    body = _map(body)
    shape = SentShape(checks_schema=False)
    for number, tool in enumerate(_list(_map(body.get("toolConfig")).get("tools"))):
        spec = _map(_map(tool).get("toolSpec"))
        path = f"toolConfig.tools[{number}].toolSpec.inputSchema.json"
        shape.tools.append((path, spec.get("name"), _map(spec.get("inputSchema")).get("json")))
    for i, message in enumerate(_list(body.get("messages"))):
        for j, block in enumerate(_list(_map(message).get("content"))):
            path = f"messages[{i}].content[{j}]"
            shape.history_item(path, _map(block), _TOOL_USE_BLOCK, _TOOL_RESULT_BLOCK, wrapped=True)
    return shape
