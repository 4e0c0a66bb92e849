"""runport's wire types as a Converse request body (docs/providers.md, the Bedrock section)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from runport.contracts import (
    CompiledInteraction,
    ContentPart,
    ImagePart,
    Message,
    ReasoningPart,
    ServerToolCall,
    ServerToolResult,
    TextPart,
    ToolSpec,
)
from runport.http import (
    PartRules,
    joined_turns,
    message_parts,
    own_server_tools,
    sampling_settings,
    text_content,
    tool_declaration,
)

PROVIDER: Final = "bedrock"
"""The ``provider_metadata`` key of what Bedrock made and wants back: a reasoning block's
``{"signature": …}`` (or ``{"redactedContent": …}``), a server tool's ``{"type": …}`` (and a
result's ``status``)."""

PARTS = PartRules(
    provider="Amazon Bedrock's Converse API",
    image_types=frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"}),
    file_types=frozenset({"application/pdf", "text/plain", "text/csv", "text/html"}),
    image_urls=False,
    file_urls=False,
    max_data_chars=5 * 1024 * 1024 * 4 // 3 + 4,
)
"""What a Converse user turn takes: images and documents by their bytes (base64 in JSON), an
image at most 3.75 MB and a document 4.5 MB (the API's bounds; the larger is checked here)."""

_INFERENCE: Final = {
    "max_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
}


def request_body(interaction: CompiledInteraction) -> dict[str, Any]:
    """The Converse body (the model goes in the URL, not the body)."""
    policy = interaction.runtime_policy
    body: dict[str, Any] = {"messages": joined_turns(_turns(interaction.messages))}
    system = [
        block
        for index, message in enumerate(interaction.messages)
        if message.role in ("system", "developer")
        for block in _ended(_text_blocks(message, index, empty=True), message)
    ]
    if system:
        body["system"] = system
    inference = sampling_settings(policy, _INFERENCE, stop="stopSequences")
    if inference:
        body["inferenceConfig"] = inference
    if interaction.tools:
        body["toolConfig"] = {"tools": [_tool(tool) for tool in interaction.tools]}
    extra = policy.get("additional_model_request_fields")
    if isinstance(extra, dict):
        body["additionalModelRequestFields"] = extra
    return body


def _turns(messages: list[Message]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Conversation turns as ``(role, blocks)``, for ``joined_turns`` (Converse wants user and
    assistant turns to alternate); system turns went to ``system``. A tool result is a
    ``toolResult`` block in a user turn."""
    for index, message in enumerate(messages):
        if message.role in ("system", "developer"):
            continue
        if message.role == "tool":
            role = "user"
            result = {"text": text_content(message, PARTS.provider, index)}
            blocks: list[dict[str, Any]] = [
                {"toolResult": {"toolUseId": message.tool_call_id or "", "content": [result]}}
            ]
            # a tool result holds no cache point: a part's breakpoint follows the whole result
            blocks += _cache_point(_last_mark(message))
        elif message.role == "user":
            role = "user"
            blocks = [
                block
                for part in message_parts(messages, index, PARTS)
                for block in (_block(part), *_cache_point(part))
            ]
        else:
            role = "assistant"
            blocks = _reasoning_blocks(message.reasoning)
            blocks.extend(_server_tool_blocks(message.server_tools))
            blocks.extend(_text_blocks(message, index))
            for call in message.tool_calls or ():
                arguments = call.arguments if isinstance(call.arguments, dict) else {}
                use = {"toolUseId": call.call_id, "name": call.name, "input": arguments}
                blocks.append({"toolUse": use})
        if blocks:
            yield role, _ended(blocks, message)


def _cache_point(marked: Message | ContentPart | None) -> list[dict[str, Any]]:
    """A ``cachePoint`` block to follow what ``marked`` (a message or a part) ends, when it is
    a cache breakpoint (ADR 0051): Converse caches the request up to the point."""
    if marked is None or not marked.cache:
        return []
    point: dict[str, Any] = {"type": "default"}
    if marked.cache_ttl is not None:
        point["ttl"] = marked.cache_ttl
    return [{"cachePoint": point}]


def _ended(blocks: list[dict[str, Any]], message: Message) -> list[dict[str, Any]]:
    """``blocks`` with the message's own breakpoint after them (one cache point, where a
    part's already ends them)."""
    if blocks and "cachePoint" in blocks[-1]:
        return blocks
    return blocks + _cache_point(message)


def _last_mark(message: Message) -> ContentPart | None:
    """The last of ``message``'s parts that is a cache breakpoint."""
    if isinstance(message.content, str):
        return None
    marked = [part for part in message.content if part.cache]
    return marked[-1] if marked else None


def _text_blocks(message: Message, index: int, *, empty: bool = False) -> list[dict[str, Any]]:
    """A text-only turn's text as ``text`` blocks: one, or, where a part is a cache
    breakpoint, one per stretch of text that ends at a marked part, a ``cachePoint`` after
    it. ``empty``: an empty text is one empty block (a system turn's), else no block."""
    text = text_content(message, PARTS.provider, index)  # refuses an image or a file here
    if isinstance(message.content, str) or not any(part.cache for part in message.content):
        return [{"text": text}] if text or empty else []
    blocks: list[dict[str, Any]] = []
    pending = ""
    for part in message.content:
        assert isinstance(part, TextPart)
        pending += part.text
        if part.cache:
            if pending:
                blocks.append({"text": pending})
            if blocks and "text" in blocks[-1]:  # an empty marked part marks the text before it
                blocks += _cache_point(part)
            pending = ""
    if pending:
        blocks.append({"text": pending})
    return blocks


def _reasoning_blocks(reasoning: list[ReasoningPart] | None) -> list[dict[str, Any]]:
    """An assistant turn's reasoning as Bedrock made it: only blocks of its own go back, a
    signed one with its text and signature, a redacted one with its data (a model with
    reasoning refuses a block without its signature)."""
    blocks: list[dict[str, Any]] = []
    for part in reasoning or ():
        mine = (part.provider_metadata or {}).get(PROVIDER)
        if not isinstance(mine, dict):
            continue
        signature, redacted = mine.get("signature"), mine.get("redactedContent")
        if isinstance(signature, str) and signature:
            text = {"text": part.text, "signature": signature}
            blocks.append({"reasoningContent": {"reasoningText": text}})
        elif isinstance(redacted, str) and redacted:
            blocks.append({"reasoningContent": {"redactedContent": redacted}})
    return blocks


def _server_tool_blocks(
    tools: list[ServerToolCall | ServerToolResult] | None,
) -> list[dict[str, Any]]:
    """An assistant turn's server tools as the blocks Bedrock made, in their order: a call as
    its ``toolUse`` block (``type: server_tool_use``), a result as its ``toolResult`` block
    with its ``type``, ``status`` and content as they came. Server tools another provider ran
    are left out."""
    blocks: list[dict[str, Any]] = []
    for tool, mine in own_server_tools(tools, PROVIDER):
        if isinstance(tool, ServerToolCall):
            use = {"toolUseId": tool.call_id, "name": tool.name, "input": tool.input}
            blocks.append({"toolUse": {**use, "type": mine["type"]}})
        else:
            result = {"toolUseId": tool.call_id, "content": tool.output, **mine}
            blocks.append({"toolResult": result})
    return blocks


def _block(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"text": part.text}
    kind = part.media_type.split("/")[1]
    source = {"bytes": part.data}
    if isinstance(part, ImagePart):
        return {"image": {"format": kind, "source": source}}
    formats = {"plain": "txt", "csv": "csv", "html": "html", "pdf": "pdf"}
    name = part.filename or "document"
    return {"document": {"format": formats[kind], "name": name, "source": source}}


def _tool(tool: ToolSpec) -> dict[str, Any]:
    return {"toolSpec": tool_declaration(tool, "inputSchema", {"json": tool.parameters})}
