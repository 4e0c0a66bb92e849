"""runport's wire types as an Ollama ``/api/chat`` request body (docs/providers.md, the Ollama
section)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from runport.contracts import (
    CompiledInteraction,
    ErrorCode,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCall,
)
from runport.core import is_text_schema
from runport.http import PartRules, function_tool, message_parts, reasoning_policy, text_content
from runport.ports import PortError

PROVIDER: Final = "ollama"
"""The ``provider_metadata`` key of reasoning another provider made: left out of what goes back."""

PARTS = PartRules(
    provider="Ollama",
    image_types=frozenset({"image/png", "image/jpeg", "image/webp"}),
    file_types=frozenset(),
    image_urls=False,
)
"""What an Ollama user turn takes: images by their bytes (base64 in ``images``), no files."""

_OPTIONS: Final = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "seed": "seed",
    "max_tokens": "num_predict",
    "num_ctx": "num_ctx",
}
"""``runtime_policy`` keys and the ``options`` field each becomes."""


def invalid_policy(message: str) -> PortError:
    return PortError(ErrorCode.DATA_INVALID, message)


def request_body(
    interaction: CompiledInteraction,
    *,
    model: str,
    stream: bool,
    options: Mapping[str, Any],
    keep_alive: str | int | None,
) -> dict[str, Any]:
    """The ``/api/chat`` body. ``options`` are the adapter's own (``num_ctx`` among them),
    under what the policy says: its common keys, then ``runtime_policy.options`` as it is."""
    policy = interaction.runtime_policy
    body: dict[str, Any] = {
        "model": model,
        "messages": _messages(interaction.messages),
        "stream": stream,
    }
    if interaction.tools:
        body["tools"] = [function_tool(tool) for tool in interaction.tools]
    schema = interaction.output_schema
    if not is_text_schema(schema):
        body["format"] = schema
    wire = {**options, **_policy_options(policy)}
    if wire:
        body["options"] = wire
    think = _think(policy)
    if think is not None:
        body["think"] = think
    keep = policy.get("keep_alive", keep_alive)
    if keep is not None:
        if not isinstance(keep, str | int) or isinstance(keep, bool):
            raise invalid_policy("runtime_policy.keep_alive must be a duration (5m) or seconds")
        body["keep_alive"] = keep
    return body


def _policy_options(policy: dict[str, Any]) -> dict[str, Any]:
    options = {wire: policy[key] for key, wire in _OPTIONS.items() if key in policy}
    if "stop" in policy:
        stop = policy["stop"]
        options["stop"] = [stop] if isinstance(stop, str) else stop
    given = policy.get("options")
    if given is not None:
        if not isinstance(given, dict):
            raise invalid_policy("runtime_policy.options must be an object of Ollama's options")
        options.update(given)
    return options


def _think(policy: dict[str, Any]) -> bool | str | None:
    """``think``: ``runtime_policy.think`` as it is; else ``reasoning`` ``true`` (or an object)
    as ``true``, its ``effort`` as the level (``"low"``, ``"medium"``, ``"high"``: gpt-oss),
    ``false`` as ``false`` (a thinking model answers without thinking); absent, no field."""
    if "think" in policy:
        think = policy["think"]
        if not isinstance(think, bool | str):
            raise invalid_policy("runtime_policy.think must be true, false or a level")
        return think
    if policy.get("reasoning") is False:
        return False
    reasoning = reasoning_policy(policy)
    if reasoning is None:
        return None
    effort = reasoning.get("effort")
    if effort is None:
        return True
    if not isinstance(effort, str) or not effort:
        raise invalid_policy("runtime_policy.reasoning.effort must be a word")
    return effort


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    """One wire message per message; a tool result names the function it answers
    (``tool_name``), found among the calls earlier assistant turns made."""
    names: dict[str, str] = {}
    wire: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role in ("system", "developer"):
            wire.append({"role": "system", "content": text_content(message, PARTS.provider, index)})
        elif message.role == "user":
            parts = message_parts(messages, index, PARTS)
            entry: dict[str, Any] = {
                "role": "user",
                "content": "".join(p.text for p in parts if isinstance(p, TextPart)),
            }
            images = [p.data for p in parts if isinstance(p, ImagePart) and p.data is not None]
            if images:
                entry["images"] = images
            wire.append(entry)
        elif message.role == "tool":
            entry = {"role": "tool", "content": text_content(message, PARTS.provider, index)}
            name = names.get(message.tool_call_id or "")
            if name is not None:
                entry["tool_name"] = name
            wire.append(entry)
        else:
            entry = {"role": "assistant", "content": text_content(message, PARTS.provider, index)}
            thinking = _thinking(message.reasoning)
            if thinking:
                entry["thinking"] = thinking
            calls = message.tool_calls or []
            for call in calls:
                names[call.call_id] = call.name
            if calls:
                entry["tool_calls"] = [_call(call, n) for n, call in enumerate(calls)]
            wire.append(entry)
    return wire


def _thinking(reasoning: list[ReasoningPart] | None) -> str:
    """An assistant turn's reasoning as Ollama takes it back: the text of every part no other
    provider claims (a part with another provider's metadata is theirs)."""
    return "".join(
        part.text
        for part in reasoning or ()
        if not part.provider_metadata or PROVIDER in part.provider_metadata
    )


def _call(call: ToolCall, position: int) -> dict[str, Any]:
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    wire: dict[str, Any] = {"function": {"name": call.name, "arguments": arguments}}
    if call.call_id != f"call_{position}":
        wire["id"] = call.call_id  # Ollama's own id (newer servers give one), sent back
    return wire
