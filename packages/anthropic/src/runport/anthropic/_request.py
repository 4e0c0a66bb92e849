"""runport's wire types as a Messages API request body (docs/providers-anthropic-gemini.md).

Structured output goes through a forced tool whose input is the answer (ADR 0019): the
Messages API has it on every model, and its input streams as ``input_json_delta`` fragments,
which the codec passes on as the answer's text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from runport.contracts import (
    CompiledInteraction,
    ContentPart,
    ErrorCode,
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    ServerToolCall,
    ServerToolResult,
    TextPart,
    ToolSpec,
)
from runport.core import is_text_schema
from runport.http import (
    PartRules,
    joined_turns,
    message_parts,
    own_server_tools,
    reasoning_policy,
    server_tools_policy,
    text_content,
    tool_declaration,
)
from runport.ports import PortError

PROVIDER: Final = "anthropic"
"""The ``provider_metadata`` key of a reasoning block this API made: ``{"type": "thinking",
"signature": …}`` or ``{"type": "redacted_thinking", "data": …}``."""

EFFORT_BUDGETS: Final = {"low": 1024, "medium": 2048, "high": 4096}
"""``runtime_policy.reasoning.effort`` as a thinking budget (LiteLLM's figures; 1024 is the
API's least budget)."""

ANSWER_TOOL: Final = "runport_answer"
"""The forced tool a structured answer is given through; a contract may not name a tool so."""

_ANSWER_DESCRIPTION: Final = (
    "Give your final answer by calling this tool: its input is the answer, "
    "shaped by the input schema."
)


SERVER_TOOLS: Final = {
    "web_search": lambda options: {
        "type": "web_search_20250305",
        "name": "web_search",
        **options,
    },
    "web_fetch": lambda options: {"type": "web_fetch_20250910", "name": "web_fetch", **options},
    "code_execution": lambda options: {
        "type": "code_execution_20250825",
        "name": "code_execution",
        **options,
    },
}
"""``runtime_policy.server_tools`` types as the Messages API's server tools (their options,
``max_uses``, ``allowed_domains``, …, laid over the entry)."""


def answer_tool_in_use(interaction: CompiledInteraction) -> bool:
    """Whether this interaction's answer comes as the input of ``ANSWER_TOOL``: a structured
    contract whose schema is an object (a tool's input is one); any other schema is asked
    for in text and checked on the receipt."""
    schema = interaction.output_schema
    return not is_text_schema(schema) and schema.get("type") == "object"


def request_body(
    interaction: CompiledInteraction, *, model: str, max_tokens: int, stream: bool
) -> dict[str, Any]:
    policy = interaction.runtime_policy
    body: dict[str, Any] = {"model": model, "max_tokens": policy.get("max_tokens", max_tokens)}
    thinking = _thinking(policy, body["max_tokens"])
    system = [
        (text_content(message, PARTS.provider, index), message)
        for index, message in enumerate(interaction.messages)
        if message.role in ("system", "developer")
    ]
    if any(_has_breakpoint(message) for _, message in system):
        # A breakpoint needs blocks: text blocks per system message, marked where asked.
        body["system"] = [
            block
            for index, message in enumerate(interaction.messages)
            if message.role in ("system", "developer")
            for block in _text_blocks(message, index)
        ]
    elif system:
        body["system"] = "\n\n".join(text for text, _ in system)
    body["messages"] = joined_turns(_turns(interaction.messages))
    tools = [_tool(tool) for tool in interaction.tools or ()]
    server_tools = server_tools_policy(policy, PARTS.provider, SERVER_TOOLS)
    if answer_tool_in_use(interaction):
        if any(tool["name"] == ANSWER_TOOL for tool in tools):
            raise PortError(
                ErrorCode.DATA_INVALID,
                f"a contract tool may not be named {ANSWER_TOOL!r}: the adapter gives "
                "structured answers through a tool of that name",
            )
        tools.append(
            {
                "name": ANSWER_TOOL,
                "description": _ANSWER_DESCRIPTION,
                "input_schema": interaction.output_schema,
            }
        )
        # Extended thinking accepts only an automatic tool choice.
        if thinking is not None:
            body["tool_choice"] = {"type": "auto"}
        elif len(tools) == 1 and not server_tools:
            # (with server tools the answer tool is not forced: they could never run)
            body["tool_choice"] = {"type": "tool", "name": ANSWER_TOOL}
        else:
            body["tool_choice"] = {"type": "any"}
    tools.extend(server_tools)
    if tools:
        body["tools"] = tools
    for key in ("temperature", "top_p", "top_k"):
        if key in policy:
            body[key] = policy[key]
    if thinking is not None:
        body["thinking"] = thinking
    if "stop" in policy:
        stop = policy["stop"]
        body["stop_sequences"] = [stop] if isinstance(stop, str) else stop
    if stream:
        body["stream"] = True
    return body


def _thinking(policy: dict[str, Any], max_tokens: Any) -> Any:
    """The ``thinking`` field: ``runtime_policy.thinking`` as it is (the API's own shape), else
    ``runtime_policy.reasoning`` — an object with ``budget_tokens`` or ``effort`` (``low``,
    ``medium``, ``high``; ``medium`` when neither is given) — as ``{"type": "enabled",
    "budget_tokens": …}``; ``None`` (no field) when neither asks for thinking."""
    if "thinking" in policy:
        return policy["thinking"]
    reasoning = reasoning_policy(policy)
    if reasoning is None:
        return None
    budget = reasoning.get("budget_tokens")
    if budget is None:
        effort = reasoning.get("effort", "medium")
        if effort not in EFFORT_BUDGETS:
            raise PortError(
                ErrorCode.DATA_INVALID,
                "runtime_policy.reasoning.effort must be one of low, medium, high",
            )
        budget = EFFORT_BUDGETS[effort]
    if type(budget) is not int or budget < 1:
        raise PortError(
            ErrorCode.DATA_INVALID,
            "runtime_policy.reasoning.budget_tokens must be a positive integer",
        )
    if type(max_tokens) is int and budget >= max_tokens:
        raise PortError(
            ErrorCode.DATA_INVALID,
            f"a thinking budget of {budget} tokens must be below max_tokens ({max_tokens})",
        )
    return {"type": "enabled", "budget_tokens": budget}


def _reasoning_blocks(reasoning: list[ReasoningPart] | None) -> list[dict[str, Any]]:
    """An assistant turn's reasoning as the blocks the API made, in their order, unmodified.
    Only blocks this API made go back (a ``thinking`` block with its signature, a
    ``redacted_thinking`` block with its data): the API refuses a thinking block without its
    signature, so reasoning from another provider, or unsigned, is left out."""
    blocks: list[dict[str, Any]] = []
    for part in reasoning or ():
        mine = (part.provider_metadata or {}).get(PROVIDER)
        if not isinstance(mine, dict):
            continue
        kind = mine.get("type")
        if kind == "thinking":
            signature = mine.get("signature")
            if isinstance(signature, str) and signature:
                blocks.append({"type": "thinking", "thinking": part.text, "signature": signature})
        elif kind == "redacted_thinking":
            data = mine.get("data")
            if isinstance(data, str) and data:
                blocks.append({"type": "redacted_thinking", "data": data})
    return blocks


def _server_tool_blocks(
    tools: list[ServerToolCall | ServerToolResult] | None,
) -> list[dict[str, Any]]:
    """An assistant turn's server tools as the blocks the API made, in their order: a call
    as its ``server_tool_use`` (or ``mcp_tool_use``) block, a result as its ``*_tool_result``
    block with ``content`` as it came (``encrypted_content`` intact) — the API wants them back
    to continue the conversation. Server tools another provider ran are left out."""
    blocks: list[dict[str, Any]] = []
    for tool, mine in own_server_tools(tools, PROVIDER):
        if isinstance(tool, ServerToolCall):
            blocks.append({**mine, "id": tool.call_id, "name": tool.name, "input": tool.input})
        else:
            blocks.append({**mine, "tool_use_id": tool.call_id, "content": tool.output})
    return blocks


def _turns(messages: list[Message]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Conversation turns as ``(role, blocks)``, for ``joined_turns``; system turns went to
    ``system``. Tool results are ``tool_result`` blocks in a user turn (the API wants every
    result of an assistant turn in the user turn right after it). An assistant turn's reasoning
    opens its content, before its text and ``tool_use`` blocks, as the API requires when
    thinking is enabled; its server tool blocks follow the reasoning."""
    for index, message in enumerate(messages):
        if message.role in ("system", "developer"):
            continue
        if message.role == "tool":
            role = "user"
            result: str | list[dict[str, Any]] = text_content(message, PARTS.provider, index)
            if _has_breakpoint(message, parts_only=True) and result:
                result = _text_blocks(message, index, whole=False)
            call_id = message.tool_call_id or ""
            blocks: list[dict[str, Any]] = [
                {"type": "tool_result", "tool_use_id": call_id, "content": result}
            ]
        elif message.role == "user" and not isinstance(message.content, str):
            role = "user"
            blocks = [_cached(_block(part), part) for part in message_parts(messages, index, PARTS)]
        else:
            role = message.role
            blocks = []
            if role == "assistant":
                blocks = _reasoning_blocks(message.reasoning)
                blocks.extend(_server_tool_blocks(message.server_tools))
            blocks.extend(_text_blocks(message, index, whole=False))
            for call in message.tool_calls or ():
                arguments = call.arguments if isinstance(call.arguments, dict) else {}
                blocks.append(
                    {"type": "tool_use", "id": call.call_id, "name": call.name, "input": arguments}
                )
        if blocks:
            blocks[-1] = _cached(blocks[-1], message)
        yield role, blocks


PARTS = PartRules(
    provider="the Anthropic Messages API",
    image_types=frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"}),
    file_types=frozenset({"application/pdf", "text/plain"}),
    max_data_chars=5 * 1024 * 1024,
)
"""What a Messages API user turn takes: ``image`` blocks and PDF or plain-text ``document``
blocks, by their bytes (base64) or, a PDF or an image, by URL; an image's base64 at most 5 MB."""


def _cached(block: dict[str, Any], marked: Message | ContentPart) -> dict[str, Any]:
    """``block`` with a ``cache_control`` breakpoint when ``marked`` (a message or a part)
    asks for one (a message's breakpoint goes on its last block; ADR 0051)."""
    if not marked.cache:
        return block
    control: dict[str, Any] = {"type": "ephemeral"}
    if marked.cache_ttl is not None:
        control["ttl"] = marked.cache_ttl
    return {**block, "cache_control": control}


def _has_breakpoint(message: Message, *, parts_only: bool = False) -> bool:
    """Whether ``message`` (or, ``parts_only``, one of its parts) is a cache breakpoint."""
    if message.cache and not parts_only:
        return True
    return not isinstance(message.content, str) and any(part.cache for part in message.content)


def _text_blocks(message: Message, index: int, *, whole: bool = True) -> list[dict[str, Any]]:
    """A text-only turn's text as ``text`` blocks: one, or, where a part is a cache
    breakpoint, one per stretch of text that ends at a marked part, that block marked. Empty
    text makes no block (the API refuses one); ``whole``: the message's own breakpoint on the
    last block (else the caller marks the turn's last block)."""
    text_content(message, PARTS.provider, index)  # refuses an image or a file here
    content = message.content
    parts = [TextPart(text=content)] if isinstance(content, str) else content
    blocks: list[dict[str, Any]] = []
    pending = ""
    for part in parts:
        assert isinstance(part, TextPart)
        pending += part.text
        if part.cache:
            if pending:
                blocks.append(_cached({"type": "text", "text": pending}, part))
            elif blocks:  # an empty marked part marks the text before it
                blocks[-1] = _cached(blocks[-1], part)
            pending = ""
    if pending:
        blocks.append({"type": "text", "text": pending})
    if whole and blocks:
        blocks[-1] = _cached(blocks[-1], message)
    return blocks


def _block(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    source: dict[str, Any]
    if part.url is not None:
        source = {"type": "url", "url": part.url}
    else:
        source = {"type": "base64", "media_type": part.media_type, "data": part.data}
    if isinstance(part, ImagePart):
        return {"type": "image", "source": source}
    if part.media_type == "text/plain":
        source = _plain_text(part)
    document: dict[str, Any] = {"type": "document", "source": source}
    if part.filename is not None:
        document["title"] = part.filename
    return document


def _plain_text(part: FilePart) -> dict[str, Any]:
    """A text/plain document goes as its text (the API's ``text`` source)."""
    if part.url is not None:
        raise PortError(
            ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED,
            f"{PARTS.provider} takes a text/plain document by its bytes, not by URL",
        )
    try:
        text = part.raw().decode("utf-8")
    except UnicodeDecodeError:
        raise PortError(
            ErrorCode.DATA_INVALID, "a text/plain file part is not UTF-8 text"
        ) from None
    return {"type": "text", "media_type": "text/plain", "data": text}


def _tool(tool: ToolSpec) -> dict[str, Any]:
    return tool_declaration(tool, "input_schema")


def messages_body(interaction: CompiledInteraction, *, max_tokens: int) -> dict[str, Any]:
    """The Messages API body for ``interaction`` with neither ``model`` nor ``stream``, for a
    host that names the model and the streaming elsewhere (Amazon Bedrock's InvokeModel, in
    its path): the messages, system, tools, thinking and the policy's settings as
    ``AnthropicMessagesAdapter`` sends them; ``max_tokens`` unless the policy names its own.
    A request the Messages API cannot carry is ``PortError`` (``TQX_DATA_INVALID``)."""
    body = request_body(interaction, model="", max_tokens=max_tokens, stream=False)
    del body["model"]
    return body
