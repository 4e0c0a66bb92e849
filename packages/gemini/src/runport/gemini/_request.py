"""runport's wire types as a Gemini ``generateContent`` request body
(docs/providers-anthropic-gemini.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from runport.contracts import (
    CompiledInteraction,
    ContentPart,
    ErrorCode,
    Message,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolSpec,
)
from runport.core import is_text_schema, parse_json_text
from runport.http import (
    PartRules,
    joined_turns,
    message_parts,
    reasoning_policy,
    sampling_settings,
    server_tools_policy,
    text_content,
    tool_declaration,
)
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
"""A call's (or a thought's) ``provider_metadata`` holds ``{"gemini": {"thoughtSignature": …}}``
when its part carried one; the part that repeats it in a later turn carries it back."""


SERVER_TOOLS: Final = {
    "web_search": lambda options: {"google_search": options},
    "code_execution": lambda options: {"code_execution": options},
    "url_context": lambda options: {"url_context": options},
}
"""``runtime_policy.server_tools`` types as Gemini's built-in tools (options inside each)."""


def request_body(interaction: CompiledInteraction) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": joined_turns(_turns(interaction.messages), "parts")}
    system = [
        text_content(message, PARTS.provider, index)
        for index, message in enumerate(interaction.messages)
        if message.role in ("system", "developer")
    ]
    if system:
        body["systemInstruction"] = {"parts": [{"text": text} for text in system]}
    tools: list[dict[str, Any]] = []
    if interaction.tools:
        tools.append({"functionDeclarations": [_function(t) for t in interaction.tools]})
    tools.extend(server_tools_policy(interaction.runtime_policy, "Gemini", SERVER_TOOLS))
    if tools:
        body["tools"] = tools
    policy = interaction.runtime_policy
    config = sampling_settings(policy, _CONFIG, stop="stopSequences")
    thinking = _thinking_config(policy)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    schema = interaction.output_schema
    if not is_text_schema(schema):
        # The JSON Schema field, not the OpenAPI-subset ``responseSchema``: the contract's
        # schema goes as it is, and the answer is validated against it all the same.
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = schema
    if config:
        body["generationConfig"] = config
    return body


def _thinking_config(policy: dict[str, Any]) -> Any:
    """``generationConfig.thinkingConfig``: ``runtime_policy.thinking_config`` as it is (the
    API's own shape), else ``runtime_policy.reasoning`` — ``true`` or an object — as
    ``includeThoughts: true`` (so thoughts stream), with its ``budget_tokens`` as
    ``thinkingBudget`` and its ``effort`` as ``thinkingLevel`` (Gemini 3); ``None`` (no field)
    when neither asks for thoughts."""
    if "thinking_config" in policy:
        return policy["thinking_config"]
    reasoning = reasoning_policy(policy)
    if reasoning is None:
        return None
    config: dict[str, Any] = {"includeThoughts": True}
    budget = reasoning.get("budget_tokens")
    if budget is not None:
        if type(budget) is not int or budget < -1:
            raise PortError(
                ErrorCode.DATA_INVALID,
                "runtime_policy.reasoning.budget_tokens must be an integer (-1: dynamic)",
            )
        config["thinkingBudget"] = budget
    effort = reasoning.get("effort")
    if effort is not None:
        if not isinstance(effort, str) or not effort:
            raise PortError(
                ErrorCode.DATA_INVALID, "runtime_policy.reasoning.effort must be a word"
            )
        config["thinkingLevel"] = effort
    return config


def _thoughts(reasoning: list[ReasoningPart] | None) -> list[dict[str, Any]]:
    """An assistant turn's reasoning as the thought parts Gemini made, in their order, each
    with its signature: Gemini's own (signed, or unsigned thought summaries); reasoning another
    provider made is left out."""
    parts: list[dict[str, Any]] = []
    for reasoning_part in reasoning or ():
        metadata = reasoning_part.provider_metadata
        mine = (metadata or {}).get(PROVIDER)
        if metadata is not None and not isinstance(mine, dict):
            continue
        signature = mine.get(SIGNATURE) if isinstance(mine, dict) else None
        if not reasoning_part.text and not signature:
            continue
        part: dict[str, Any] = {"text": reasoning_part.text, "thought": True}
        if isinstance(signature, str) and signature:
            part[SIGNATURE] = signature
        parts.append(part)
    return parts


def _turns(messages: list[Message]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Turns as ``(role, parts)`` with roles ``user`` and ``model``, for ``joined_turns``;
    tool results are ``functionResponse`` parts in a user turn, named after the call they
    answer, and carrying its id when the call has one to send (``_sent_id``)."""
    calls: dict[str, tuple[str, str | None]] = {}  # a call's call_id: its name, its sent id
    for index, message in enumerate(messages):
        if message.role in ("system", "developer"):
            continue
        parts: list[dict[str, Any]]
        if message.role == "user" and not isinstance(message.content, str):
            role = "user"
            parts = [_part(part) for part in message_parts(messages, index, PARTS)]
        elif message.role == "tool":
            role = "user"
            answered = calls.get(message.tool_call_id or "")
            if answered is None:
                raise PortError(
                    ErrorCode.DATA_INVALID,
                    "a tool result answers a call no earlier assistant turn made "
                    "(Gemini names a function response after its call)",
                )
            name, sent_id = answered
            result: dict[str, Any] = {
                "name": name,
                "response": _response(text_content(message, PARTS.provider, index)),
            }
            if sent_id is not None:
                result["id"] = sent_id
            parts = [{"functionResponse": result}]
        else:
            role = "model" if message.role == "assistant" else "user"
            parts = _thoughts(message.reasoning) if role == "model" else []
            text = text_content(message, PARTS.provider, index)
            if text:
                parts.append({"text": text})
            for position, call in enumerate(message.tool_calls or ()):
                sent_id = _sent_id(call, position)
                calls[call.call_id] = (call.name, sent_id)
                arguments = call.arguments if isinstance(call.arguments, dict) else {}
                function_call: dict[str, Any] = {"name": call.name, "args": arguments}
                if sent_id is not None:
                    function_call["id"] = sent_id
                part: dict[str, Any] = {"functionCall": function_call}
                signature = _signature(call)
                if signature is not None:
                    part[SIGNATURE] = signature
                parts.append(part)
        yield role, parts


def _sent_id(call: ToolCall, position: int) -> str | None:
    """The id a call goes back with (and its result): the one Gemini gave it — Gemini 3 and
    Vertex AI match a function response to its call by id. A call that came without one was
    given ``call_{index}`` by the turn builder (its index: its place in the turn), and goes
    back without one, as it came."""
    return None if call.call_id == f"call_{position}" else call.call_id


def _signature(call: ToolCall) -> str | None:
    mine = (call.provider_metadata or {}).get(PROVIDER)
    signature = mine.get(SIGNATURE) if isinstance(mine, dict) else None
    return signature if isinstance(signature, str) and signature else None


PARTS = PartRules(
    provider="Gemini",
    image_types=frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"}),
    file_types=frozenset({"application/pdf", "text/*"}),
    max_request_data_chars=20 * 1000 * 1000,
)
"""What a Gemini user turn takes: images (no GIF) and PDF or text documents, as ``inlineData``
(20 MB of base64 a request) or as ``fileData`` by URI."""


def _part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"text": part.text}
    if part.url is not None:
        return {"fileData": {"mimeType": part.media_type, "fileUri": part.url}}
    return {"inlineData": {"mimeType": part.media_type, "data": part.data}}


def _response(content: str) -> dict[str, Any]:
    """A tool result as the object ``functionResponse.response`` must be: a JSON object as it
    is, anything else under ``result``."""
    ok, value = parse_json_text(content)
    if ok and isinstance(value, dict):
        return value
    return {"result": value}


def _function(tool: ToolSpec) -> dict[str, Any]:
    return tool_declaration(tool, "parametersJsonSchema")
