"""runport's wire types as a Gemini ``generateContent`` request body
(docs/providers-anthropic-gemini.md)."""

from __future__ import annotations

from typing import Any, Final

from runport.contracts import CompiledInteraction, ErrorCode, Message, ToolCall, ToolSpec
from runport.core import is_text_schema, parse_json_text
from runport.ports import PortError

_CONFIG = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_tokens": "maxOutputTokens",
    "seed": "seed",
}
"""``runtime_policy`` keys and the ``generationConfig`` field each becomes."""

PROVIDER: Final = "gemini"
SIGNATURE: Final = "thoughtSignature"
"""A call's ``provider_metadata`` holds ``{"gemini": {"thoughtSignature": …}}`` when its part
carried one; the part that repeats the call in a later turn carries it back."""


def request_body(interaction: CompiledInteraction) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": _contents(interaction.messages)}
    system = [m.content for m in interaction.messages if m.role in ("system", "developer")]
    if system:
        body["systemInstruction"] = {"parts": [{"text": text} for text in system]}
    if interaction.tools:
        body["tools"] = [{"functionDeclarations": [_function(t) for t in interaction.tools]}]
    config: dict[str, Any] = {}
    policy = interaction.runtime_policy
    for key, field in _CONFIG.items():
        if key in policy:
            config[field] = policy[key]
    if "stop" in policy:
        stop = policy["stop"]
        config["stopSequences"] = [stop] if isinstance(stop, str) else stop
    schema = interaction.output_schema
    if not is_text_schema(schema):
        # The JSON Schema field, not the OpenAPI-subset ``responseSchema``: the contract's
        # schema goes as it is, and the answer is validated against it all the same.
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = schema
    if config:
        body["generationConfig"] = config
    return body


def _contents(messages: list[Message]) -> list[dict[str, Any]]:
    """Turns with roles ``user`` and ``model``; tool results are ``functionResponse`` parts
    in a user turn, named after the call they answer. Consecutive turns of one role are one."""
    names: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    for message in messages:
        if message.role in ("system", "developer"):
            continue
        parts: list[dict[str, Any]]
        if message.role == "tool":
            role = "user"
            name = names.get(message.tool_call_id or "")
            if name is None:
                raise PortError(
                    ErrorCode.DATA_INVALID,
                    "a tool result answers a call no earlier assistant turn made "
                    "(Gemini names a function response after its call)",
                )
            parts = [{"functionResponse": {"name": name, "response": _response(message)}}]
        else:
            role = "model" if message.role == "assistant" else "user"
            parts = [{"text": message.content}] if message.content else []
            for call in message.tool_calls or ():
                names[call.call_id] = call.name
                arguments = call.arguments if isinstance(call.arguments, dict) else {}
                part: dict[str, Any] = {"functionCall": {"name": call.name, "args": arguments}}
                signature = _signature(call)
                if signature is not None:
                    part[SIGNATURE] = signature
                parts.append(part)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return contents


def _signature(call: ToolCall) -> str | None:
    mine = (call.provider_metadata or {}).get(PROVIDER)
    signature = mine.get(SIGNATURE) if isinstance(mine, dict) else None
    return signature if isinstance(signature, str) and signature else None


def _response(message: Message) -> dict[str, Any]:
    """A tool result as the object ``functionResponse.response`` must be: a JSON object as it
    is, anything else under ``result``."""
    ok, value = parse_json_text(message.content)
    if ok and isinstance(value, dict):
        return value
    return {"result": value}


def _function(tool: ToolSpec) -> dict[str, Any]:
    wire: dict[str, Any] = {"name": tool.name}
    if tool.description:
        wire["description"] = tool.description
    wire["parametersJsonSchema"] = tool.parameters
    return wire
