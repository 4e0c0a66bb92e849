"""A run's token usage as the frontend protocols write it (camelCase, the AI SDK's and
AG-UI's own spelling); a count the receipts left out is left out here too (ADR 0051)."""

from __future__ import annotations

from pydantic import JsonValue

from runport.contracts import Usage

__all__ = ["token_usage"]


def token_usage(usage: Usage) -> dict[str, JsonValue]:
    """``inputTokens`` counts every input token, cached or not; ``cacheReadTokens`` and
    ``cacheWriteTokens`` are parts of it, written only when the provider reported them."""
    entry: dict[str, JsonValue] = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.input_tokens + usage.output_tokens,
    }
    if usage.reasoning_tokens:
        entry["reasoningTokens"] = usage.reasoning_tokens
    if usage.cache_read_tokens:
        entry["cacheReadTokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        entry["cacheWriteTokens"] = usage.cache_write_tokens
    return entry
