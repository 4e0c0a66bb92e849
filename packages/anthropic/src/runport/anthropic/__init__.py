"""An Anthropic Messages API runtime adapter, streamed over SSE, as a codec on runport's HTTP
layer (docs/providers-anthropic-gemini.md)."""

from runport.anthropic._adapter import (
    DEFAULT_BASE_URL,
    DEFAULT_MAX_TOKENS,
    AnthropicMessagesAdapter,
)
from runport.anthropic._async_adapter import AsyncAnthropicMessagesAdapter
from runport.anthropic._codec import ANTHROPIC_VERSION, MessagesEvents
from runport.anthropic._request import ANSWER_TOOL, messages_body
from runport.anthropic._setup import (
    create_adapter,
    create_async_adapter,
    create_async_vertex_adapter,
    create_vertex_adapter,
)

__all__ = [
    "ANSWER_TOOL",
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "AnthropicMessagesAdapter",
    "AsyncAnthropicMessagesAdapter",
    "MessagesEvents",
    "create_adapter",
    "create_async_adapter",
    "create_async_vertex_adapter",
    "create_vertex_adapter",
    "messages_body",
]
