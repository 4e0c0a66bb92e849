"""An OpenAI-compatible chat-completions runtime adapter, streamed over SSE (docs/providers.md)."""

from runport.openai._adapter import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT,
    OpenAIChatAdapter,
    create_adapter,
    create_async_adapter,
)
from runport.openai._async_adapter import AsyncOpenAIChatAdapter
from runport.openai._request import ResponseFormatMode

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_TIMEOUT",
    "AsyncOpenAIChatAdapter",
    "OpenAIChatAdapter",
    "ResponseFormatMode",
    "create_adapter",
    "create_async_adapter",
]
