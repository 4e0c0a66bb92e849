"""A Gemini API runtime adapter, streamed over SSE, as a codec on runport's HTTP layer
(docs/providers-anthropic-gemini.md)."""

from runport.gemini._adapter import (
    DEFAULT_BASE_URL,
    GeminiAdapter,
    create_adapter,
    create_async_adapter,
)
from runport.gemini._async_adapter import AsyncGeminiAdapter

__all__ = [
    "DEFAULT_BASE_URL",
    "AsyncGeminiAdapter",
    "GeminiAdapter",
    "create_adapter",
    "create_async_adapter",
]
