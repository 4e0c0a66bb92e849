"""Prompt and answer text in the shape the GenAI semantic conventions give
``gen_ai.input.messages`` and ``gen_ai.output.messages``: JSON arrays of messages made of parts.

Only ever called when the user asked for ``capture_content=True``: the text is theirs, and a
trace backend is often read by more people than the prompts were written for.

Reasoning is written as the conventions' ``reasoning`` parts (``{"type": "reasoning",
"content": ...}``), first in its message as the model thought before it answered: only its text —
a redacted block (no text) is left out, and ``provider_metadata`` (signatures, encrypted
reasoning) never, whatever ``capture_content`` says.
"""

from __future__ import annotations

from typing import Any, Final

from runport.contracts import (
    ExecutionReceipt,
    ExecutionRequest,
    Message,
    ReasoningPart,
    ToolCall,
    canonical_json,
)


def _tool_call(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call.call_id, "name": call.name, "arguments": call.arguments}


def _reasoning(parts: list[ReasoningPart] | None) -> list[dict[str, Any]]:
    return [{"type": "reasoning", "content": part.text} for part in parts or () if part.text]


def _parts(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}
        ]
    parts = _reasoning(message.reasoning)
    if message.content:
        parts.append({"type": "text", "content": message.content})
    parts.extend(_tool_call(call) for call in message.tool_calls or ())
    return parts


def input_messages(request: ExecutionRequest) -> str:
    messages = [
        {"role": message.role, "parts": _parts(message)} for message in request.interaction.messages
    ]
    return canonical_json(messages).decode("utf-8")


_OTEL_FINISH: Final = {"tool_calls": "tool_call"}


def finish_word(receipt: ExecutionReceipt) -> str | None:
    """The receipt's ``finish`` (runport's word, adr/0050) as the GenAI conventions spell it
    (``stop``, ``length``, ``content_filter``, ``tool_call``, ``error``; ``pause`` and
    ``other`` as they are); the provider's own word only from an adapter that set no
    ``finish``."""
    finish = receipt.finish or receipt.finish_reason
    return None if finish is None else _OTEL_FINISH.get(finish, finish)


def output_messages(receipt: ExecutionReceipt) -> str:
    """The answer as one assistant message; a structured answer with no text is written as the
    JSON it decoded to, so the output is visible whichever way the adapter produced it."""
    parts = _reasoning(receipt.reasoning)
    if receipt.text is not None:
        parts.append({"type": "text", "content": receipt.text})
    elif receipt.output is not None:
        parts.append({"type": "text", "content": canonical_json(receipt.output).decode("utf-8")})
    parts.extend(_tool_call(call) for call in receipt.tool_calls or ())
    message = {"role": "assistant", "parts": parts, "finish_reason": finish_word(receipt) or ""}
    return canonical_json([message]).decode("utf-8")
