"""A Gemini API runtime adapter, streamed over SSE, as a codec on runport's HTTP layer
(docs/providers-anthropic-gemini.md)."""

from runport.gemini._adapter import (
    DEFAULT_BASE_URL,
    GeminiAdapter,
)
from runport.gemini._async_adapter import AsyncGeminiAdapter
from runport.gemini._setup import (
    create_adapter,
    create_async_adapter,
    create_async_vertex_adapter,
    create_vertex_adapter,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "AsyncGeminiAdapter",
    "GeminiAdapter",
    "create_adapter",
    "create_async_adapter",
    "create_async_vertex_adapter",
    "create_vertex_adapter",
]
