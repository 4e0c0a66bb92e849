"""runport's wire types as a Cohere v2 ``/v2/chat`` request body (docs/providers.md, the
Cohere section)."""

from __future__ import annotations

from typing import Any, Final

from runport.contracts import (
    CompiledInteraction,
    ErrorCode,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
)
from runport.core import is_text_schema
from runport.http import (
    PartRules,
    data_url,
    encode_json,
    function_tool,
    message_parts,
    reasoning_policy,
    sampling_settings,
    text_content,
)
from runport.ports import PortError

PROVIDER: Final = "cohere"
"""The ``provider_metadata`` key of a reasoning part Cohere made: ``{"type": "thinking"}`` or
``{"type": "tool_plan"}``."""

PARTS = PartRules(
    provider="Cohere's chat API",
    image_types=frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"}),
    file_types=frozenset(),
)
"""What a Cohere user turn takes: images (by URL or as a ``data:`` URL), no files."""

_SETTINGS: Final = {
    "max_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "p",
    "top_k": "k",
    "seed": "seed",
}
"""``runtime_policy`` keys and the body field each becomes."""


def request_body(interaction: CompiledInteraction, *, model: str, stream: bool) -> dict[str, Any]:
    policy = interaction.runtime_policy
    body: dict[str, Any] = {
        "model": model,
        "messages": _messages(interaction.messages),
        "stream": stream,
    }
    body.update(sampling_settings(policy, _SETTINGS, stop="stop_sequences"))
    if interaction.tools:
        body["tools"] = [function_tool(tool) for tool in interaction.tools]
    schema = interaction.output_schema
    if not is_text_schema(schema):
        body["response_format"] = {"type": "json_object", "json_schema": schema}
    thinking = _thinking(policy)
    if thinking is not None:
        body["thinking"] = thinking
    return body


def _thinking(policy: dict[str, Any]) -> dict[str, Any] | None:
    """``thinking``: ``runtime_policy.reasoning`` ``true`` (or an object) as enabled, its
    ``budget_tokens`` as ``token_budget``; ``false`` as disabled; absent, no field."""
    if policy.get("reasoning") is False:
        return {"type": "disabled"}
    reasoning = reasoning_policy(policy)
    if reasoning is None:
        return None
    thinking: dict[str, Any] = {"type": "enabled"}
    budget = reasoning.get("budget_tokens")
    if budget is not None:
        if type(budget) is not int or budget < 1:
            raise PortError(
                ErrorCode.DATA_INVALID,
                "runtime_policy.reasoning.budget_tokens must be a positive number of tokens",
            )
        thinking["token_budget"] = budget
    return thinking


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role in ("system", "developer"):
            wire.append({"role": "system", "content": text_content(message, PARTS.provider, index)})
        elif message.role == "user":
            content = message.content
            if isinstance(content, str):
                wire.append({"role": "user", "content": content})
                continue
            parts = [_part(part) for part in message_parts(messages, index, PARTS)]
            wire.append({"role": "user", "content": parts})
        elif message.role == "tool":
            wire.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": text_content(message, PARTS.provider, index),
                }
            )
        else:
            wire.append(_assistant(message, index))
    return wire


def _assistant(message: Message, index: int) -> dict[str, Any]:
    """An assistant turn: its thinking and text as content, its tool plan and calls beside."""
    entry: dict[str, Any] = {"role": "assistant"}
    content: list[dict[str, Any]] = []
    for part in message.reasoning or ():
        kind = _kind(part)
        if kind == "thinking":
            content.append({"type": "thinking", "thinking": part.text})
        elif kind == "tool_plan" and part.text:
            entry["tool_plan"] = part.text
    text = text_content(message, PARTS.provider, index)
    if text:
        content.append({"type": "text", "text": text})
    if content:
        entry["content"] = content
    calls = message.tool_calls or []
    if calls:
        entry["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": encode_json(call.arguments).decode()},
            }
            for call in calls
        ]
    return entry


def _kind(part: ReasoningPart) -> str | None:
    """``thinking`` or ``tool_plan`` for a part Cohere made; ``None`` for another provider's."""
    mine = (part.provider_metadata or {}).get(PROVIDER)
    kind = mine.get("type") if isinstance(mine, dict) else None
    return kind if isinstance(kind, str) else None


def _part(part: TextPart | Any) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    assert isinstance(part, ImagePart)
    return {"type": "image_url", "image_url": {"url": data_url(part)}}
