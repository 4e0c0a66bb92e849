"""runport's wire types as a Responses API request body (docs/providers-openai-responses.md).

Stateless by default (adr/0032-openai-responses-stateless.md): ``store: false``, the whole
conversation in ``input`` every turn, and, when reasoning is asked for, ``include:
["reasoning.encrypted_content"]``, so a turn's reasoning comes back encrypted, is kept in
``ReasoningPart.provider_metadata`` and goes back as a ``reasoning`` item in the next request.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import JsonValue

from runport.contracts import (
    CompiledInteraction,
    ContentPart,
    ErrorCode,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolSpec,
)
from runport.core import is_text_schema
from runport.http import (
    PartRules,
    cache_key,
    data_url,
    message_parts,
    reasoning_policy,
    server_tools_policy,
    text_content,
    tool_declaration,
)
from runport.openai._request import ResponseFormatMode, arguments_text, json_schema_format
from runport.ports import PortError

PROVIDER: Final = "openai-responses"
"""The ``provider_metadata`` key of a ``reasoning`` item this API made: ``{"id": "rs_…",
"encrypted_content": …}`` (the content only when the API gave it)."""

ENCRYPTED_REASONING: Final = "reasoning.encrypted_content"

PASS_THROUGH: Final = ("temperature", "top_p")
"""``runtime_policy`` keys sent as the API names them; ``max_tokens`` is ``max_output_tokens``
and ``tool_choice`` is reshaped; ``seed`` and ``stop`` have no Responses field."""


SERVER_TOOLS: Final = {
    "web_search": lambda options: {"type": "web_search", **options},
    "file_search": lambda options: {"type": "file_search", **options},
    "code_execution": lambda options: {
        "type": "code_interpreter",
        "container": {"type": "auto"},
        **options,
    },
    "image_generation": lambda options: {"type": "image_generation", **options},
    "mcp": lambda options: {"type": "mcp", **options},
}
"""``runtime_policy.server_tools`` types as the Responses API's built-in tools (options, such
as ``vector_store_ids`` or ``server_url``, laid over the entry)."""


def request_body(
    interaction: CompiledInteraction,
    *,
    model: str,
    stream: bool,
    response_format_mode: ResponseFormatMode,
    store: bool = False,
) -> dict[str, Any]:
    policy = interaction.runtime_policy
    instructions, items = input_items(interaction.messages, store=store)
    body: dict[str, Any] = {"model": model}
    if instructions:
        body["instructions"] = instructions
    body["input"] = items
    body["store"] = store
    reasoning = _reasoning(policy)
    if reasoning is not None:
        body["reasoning"] = reasoning
        body["include"] = [ENCRYPTED_REASONING]
    tools = [_tool(tool) for tool in interaction.tools or ()]
    tools.extend(server_tools_policy(policy, "the OpenAI Responses API", SERVER_TOOLS))
    if tools:
        body["tools"] = tools
    text_format = _text_format(interaction, response_format_mode)
    if text_format is not None:
        body["text"] = {"format": text_format}
    for key in PASS_THROUGH:
        if key in policy:
            body[key] = policy[key]
    if "max_tokens" in policy:
        body["max_output_tokens"] = policy["max_tokens"]
    if "tool_choice" in policy:
        body["tool_choice"] = _tool_choice(policy["tool_choice"])
    prompt_cache_key = cache_key(policy)
    if prompt_cache_key is not None:
        body["prompt_cache_key"] = prompt_cache_key
    if stream:
        body["stream"] = True
    return body


def input_items(
    messages: list[Message], *, store: bool = False
) -> tuple[str, list[dict[str, Any]]]:
    """``(instructions, input items)``: system and developer messages are the request's
    ``instructions`` (joined, in order), every other message one or more input items."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role in ("system", "developer"):
            text = text_content(message, PARTS.provider, index)
            if text:
                instructions.append(text)
            continue
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": text_content(message, PARTS.provider, index),
                }
            )
            continue
        if message.role == "assistant":
            items += reasoning_items(message.reasoning, store=store)
        if message.content or message.role == "user":
            items.append(message_item(messages, index))
        for call in message.tool_calls or ():
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": arguments_text(call.arguments),
                }
            )
    return "\n\n".join(instructions), items


PARTS = PartRules(
    provider="the OpenAI Responses API",
    image_types=frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"}),
    file_types=frozenset({"application/pdf", "text/*"}),
)
"""What a Responses user message takes: ``input_image`` (an https or ``data:`` URL) and
``input_file`` (``file_data`` as a ``data:`` URL, or ``file_url``): PDFs and text files."""


def message_item(messages: list[Message], index: int) -> dict[str, Any]:
    """A user or assistant message as a ``message`` input item: the one place a message's
    content is written for this API."""
    message = messages[index]
    content: str | list[dict[str, Any]]
    if isinstance(message.content, str):
        content = message.content
    elif message.role != "user":
        content = text_content(message, PARTS.provider, index)
    else:
        content = [_part(part) for part in message_parts(messages, index, PARTS)]
    return {"type": "message", "role": message.role, "content": content}


def _part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, ImagePart):
        return {"type": "input_image", "image_url": data_url(part), "detail": "auto"}
    wire: dict[str, Any] = {"type": "input_file"}
    if part.url is not None:
        wire["file_url"] = part.url
    else:
        wire["file_data"] = data_url(part)
    wire["filename"] = part.filename or f"file.{part.media_type.split('/')[1]}"
    return wire


def reasoning_items(
    parts: list[ReasoningPart] | None, *, store: bool = False
) -> list[dict[str, Any]]:
    """An assistant turn's reasoning as the ``reasoning`` items the API made, in order: the
    item's id, its ``encrypted_content`` unmodified (what the model reasons from, with nothing
    stored at the provider), and its text as the summary. Only items this API made go back —
    reasoning from another provider, a part without an id, and, unless ``store``, a part
    without encrypted content (an id names nothing when nothing is stored) are left out."""
    items: list[dict[str, Any]] = []
    for part in parts or ():
        mine = (part.provider_metadata or {}).get(PROVIDER)
        if not isinstance(mine, dict):
            continue
        item_id = mine.get("id")
        if not isinstance(item_id, str) or not item_id:
            continue
        summary: list[JsonValue] = (
            [{"type": "summary_text", "text": part.text}] if part.text else []
        )
        item: dict[str, Any] = {"type": "reasoning", "id": item_id, "summary": summary}
        encrypted = mine.get("encrypted_content")
        if isinstance(encrypted, str) and encrypted:
            item["encrypted_content"] = encrypted
        elif not store:
            continue
        items.append(item)
    return items


def _reasoning(policy: dict[str, Any]) -> dict[str, Any] | None:
    """``runtime_policy.reasoning`` as the ``reasoning`` field: its ``effort`` as it is, its
    ``summary`` (``auto`` unless given; ``null`` asks for none); ``None`` (no field, nothing
    included) when reasoning is not asked for. ``budget_tokens`` has no Responses field."""
    reasoning = reasoning_policy(policy)
    if reasoning is None:
        return None
    fields = {"effort": reasoning.get("effort"), "summary": reasoning.get("summary", "auto")}
    for key, value in fields.items():
        if value is not None and (not isinstance(value, str) or not value):
            raise PortError(
                ErrorCode.DATA_INVALID, f"runtime_policy.reasoning.{key} must be a string"
            )
    return {key: value for key, value in fields.items() if value is not None}


def _text_format(
    interaction: CompiledInteraction, mode: ResponseFormatMode
) -> dict[str, Any] | None:
    if mode == "none" or is_text_schema(interaction.output_schema):
        return None
    if mode == "json_object":  # the Responses API takes no schema beside it
        return {"type": "json_object"}
    return {"type": "json_schema", **json_schema_format(interaction)}


def _tool(tool: ToolSpec) -> dict[str, Any]:
    """A function tool. ``strict: false``: the Responses API makes function tools strict
    unless told otherwise, and a strict tool's schema must fit the strict subset; a tool's
    parameters go as the contract wrote them, as they do for chat completions."""
    return {"type": "function", **tool_declaration(tool), "strict": False}


def _tool_choice(choice: Any) -> Any:
    """Chat completions' ``{"type": "function", "function": {"name": …}}`` is the Responses
    API's ``{"type": "function", "name": …}``; anything else (``auto``, ``required``,
    ``none``, a Responses-shaped choice) goes as it is."""
    if isinstance(choice, dict) and choice.get("type") == "function":
        function = choice.get("function")
        if isinstance(function, dict) and "name" in function and "name" not in choice:
            return {"type": "function", "name": function["name"]}
    return choice
