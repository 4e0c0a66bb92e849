"""runport's wire types as a chat-completions request body."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import JsonValue

from runport.contracts import (
    CompiledInteraction,
    ContentPart,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
)
from runport.core import is_text_schema, strict_schema
from runport.http import PartRules, cache_key, data_url, function_tool, message_parts, text_content

ResponseFormatMode = Literal["json_schema", "json_object", "none"]
"""How a structured contract asks for JSON: OpenAI's ``json_schema`` (the default; strict when
the schema fits OpenAI's strict subset, see ``strict_schema``),
``json_object`` with the schema beside it (llama.cpp, and servers that refuse ``json_schema``),
or nothing (the schema is then only checked on the receipt)."""

RESPONSE_FORMAT_MODES: tuple[ResponseFormatMode, ...] = ("json_schema", "json_object", "none")


def as_response_format_mode(value: str) -> ResponseFormatMode:
    for mode in RESPONSE_FORMAT_MODES:
        if value == mode:
            return mode
    raise ValueError(
        f"the response format mode must be one of {', '.join(RESPONSE_FORMAT_MODES)}, not {value!r}"
    )


_SWITCHES = {"true": True, "1": True, "yes": True, "on": True,
             "false": False, "0": False, "no": False, "off": False}  # fmt: skip


def as_switch(value: bool | str | None, name: str) -> bool | None:
    """A yes/no keyword: a ``bool``, ``None`` (the adapter decides), or, from an environment
    variable, ``true``/``false`` (``1``/``0``, ``yes``/``no``, ``on``/``off``; empty is unset)."""
    if value is None or type(value) is bool:
        return value
    if isinstance(value, str):
        if not value.strip():
            return None
        switch = _SWITCHES.get(value.strip().lower())
        if switch is not None:
            return switch
    raise ValueError(f"{name} must be true or false (or unset), not {value!r}")


ReasoningField = Literal["reasoning_content", "reasoning"]
"""The field an assistant message's reasoning text is sent back in, for a server that wants
it (``send_reasoning_as``): DeepSeek's thinking mode wants ``reasoning_content`` back on a
tool-call turn. By default no reasoning text is sent back: DeepSeek's ``deepseek-reasoner``
answers 400 to a ``reasoning_content`` in its input, and a server that knows no such field
may refuse it (adr/0031-reasoning-sent-back-per-dialect.md)."""

REASONING_FIELDS: tuple[ReasoningField, ...] = ("reasoning_content", "reasoning")


def as_reasoning_field(value: str | None) -> ReasoningField | None:
    if value is None or value == "":
        return None
    for field in REASONING_FIELDS:
        if value == field:
            return field
    raise ValueError(
        f"send_reasoning_as must be one of {', '.join(REASONING_FIELDS)} (or unset), not {value!r}"
    )


CallIdRule = Literal["any", "nine_alphanumerics"]
"""What the tool-call ids sent back must look like: ``any`` (as they came), or
``nine_alphanumerics``, Mistral's rule (``[A-Za-z0-9]{9}``, else a 400): an id that breaks it
goes out as nine letters and digits derived from it, the same in the assistant's call and in
the tool's answer, so the pair still matches."""

CALL_ID_RULES: tuple[CallIdRule, ...] = ("any", "nine_alphanumerics")

_NINE_ALPHANUMERICS = re.compile(r"[A-Za-z0-9]{9}")
_ALPHANUMERICS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def as_call_id_rule(value: str) -> CallIdRule:
    for rule in CALL_ID_RULES:
        if value == rule:
            return rule
    raise ValueError(f"call_ids must be one of {', '.join(CALL_ID_RULES)}, not {value!r}")


def sent_call_id(call_id: str, rule: CallIdRule) -> str:
    """``call_id`` as the server's ``rule`` takes it: unchanged when it fits, else nine
    alphanumerics from its SHA-256 (one id always maps to one, distinct ids to distinct ones
    but for a chance of about one in 10^16 per pair)."""
    if rule == "any" or _NINE_ALPHANUMERICS.fullmatch(call_id):
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode("utf-8")).digest()[:8], "big")
    digits = []
    for _ in range(9):
        number, digit = divmod(number, 62)
        digits.append(_ALPHANUMERICS[digit])
    return "".join(digits)


PASS_THROUGH = ("temperature", "top_p", "max_tokens", "seed", "stop", "tool_choice")
"""``runtime_policy`` keys sent as the API names them; the others are runport's own."""

_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")


def request_body(
    interaction: CompiledInteraction,
    *,
    model: str,
    stream: bool,
    response_format_mode: ResponseFormatMode,
    send_reasoning_as: ReasoningField | None = None,
    include_usage: bool = True,
    call_ids: CallIdRule = "any",
) -> dict[str, Any]:
    """The body; streamed, it asks for the usage chunk (``stream_options.include_usage``)
    unless ``include_usage`` is false: Mistral refuses the field (422), and so do Azure API
    versions before 2024-09-01 (400)."""
    messages = interaction.messages
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            _message(messages, index, send_reasoning_as, call_ids) for index in range(len(messages))
        ],
    }
    if interaction.tools:
        body["tools"] = [function_tool(tool) for tool in interaction.tools]
    response_format = _response_format(interaction, response_format_mode)
    if response_format is not None:
        body["response_format"] = response_format
    policy = interaction.runtime_policy
    for key in PASS_THROUGH:
        if key in policy:
            body[key] = policy[key]
    prompt_cache_key = cache_key(policy)
    if prompt_cache_key is not None:
        body["prompt_cache_key"] = prompt_cache_key
    if stream:
        body["stream"] = True
        if include_usage:
            body["stream_options"] = {"include_usage": True}
    return body


PARTS = PartRules(
    provider="OpenAI chat completions",
    image_types=frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"}),
    file_types=frozenset({"application/pdf"}),
    file_urls=False,
)
"""What a chat completions user turn takes: images as ``image_url`` (an https or ``data:``
URL), PDFs as ``file`` with ``file_data`` (the API has no file URL)."""


def _content(messages: list[Message], index: int) -> str | list[dict[str, Any]]:
    message = messages[index]
    if isinstance(message.content, str):
        return message.content
    if message.role != "user":
        return text_content(message, PARTS.provider, index)
    return [_part(part) for part in message_parts(messages, index, PARTS)]


def _part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        return {"type": "image_url", "image_url": {"url": data_url(part)}}
    subtype = part.media_type.split("/")[1]
    filename = part.filename or f"file.{subtype}"
    return {"type": "file", "file": {"filename": filename, "file_data": data_url(part)}}


def _message(
    messages: list[Message],
    index: int,
    send_reasoning_as: ReasoningField | None,
    call_ids: CallIdRule = "any",
) -> dict[str, Any]:
    message = messages[index]
    wire: dict[str, Any] = {"role": message.role, "content": _content(messages, index)}
    if message.reasoning and message.role == "assistant":
        _reasoning_back(wire, message.reasoning, send_reasoning_as)
    if message.tool_calls:
        # Content stays a string ("" when the turn had none): llama.cpp answers HTTP 500 to
        # `content: null` beside tool calls, and OpenAI accepts "".
        wire["tool_calls"] = [
            {
                "id": sent_call_id(call.call_id, call_ids),
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_text(call.arguments)},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = sent_call_id(message.tool_call_id, call_ids)
    return wire


def _reasoning_back(
    wire: dict[str, Any], parts: list[ReasoningPart], send_reasoning_as: ReasoningField | None
) -> None:
    """An assistant turn's reasoning, as each dialect takes it back (ADR 0031): OpenRouter's
    ``reasoning_details`` entries always, as they came (OpenRouter asks for them; they exist
    only where it sent them); the reasoning text only in the field ``send_reasoning_as``
    names, when one is named."""
    details: list[JsonValue] = []
    for part in parts:
        kept = (part.provider_metadata or {}).get("openrouter")
        if type(kept) is dict:
            entries = kept.get("reasoning_details")
            if type(entries) is list:
                details.extend(entries)
    if details:
        wire["reasoning_details"] = details
    if send_reasoning_as is not None:
        text = "".join(part.text for part in parts)
        if text:
            wire[send_reasoning_as] = text


def arguments_text(arguments: Any) -> str:
    """Arguments go back as the JSON text the API carries them in.

    A string is the model's own text that did not parse (docs/wire-types.md keeps it as a JSON
    string), so it is sent back verbatim: the model sees what it wrote.
    """
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def _response_format(
    interaction: CompiledInteraction, mode: ResponseFormatMode
) -> dict[str, Any] | None:
    schema = interaction.output_schema
    if mode == "none" or is_text_schema(schema):
        return None
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": json_schema_format(interaction)}


def json_schema_format(interaction: CompiledInteraction) -> dict[str, Any]:
    """A structured contract's schema as OpenAI's ``json_schema`` format (chat completions'
    ``response_format.json_schema``, the Responses API's ``text.format``): strict when the
    schema fits OpenAI's strict subset (``strict_schema``), else sent as it is, and not
    promised."""
    schema = interaction.output_schema
    name = _SCHEMA_NAME.sub("_", interaction.contract_id)[:64] or "output"
    strict = strict_schema(schema)
    if strict is None:
        return {"name": name, "schema": schema, "strict": False}
    return {"name": name, "schema": strict, "strict": True}
