"""A Cohere runtime adapter for the v2 chat API, streamed as typed server-sent events, as a
codec on runport's HTTP layer (docs/providers.md)."""

from runport.cohere._adapter import DEFAULT_BASE_URL, CohereChatAdapter
from runport.cohere._async_adapter import AsyncCohereChatAdapter
from runport.cohere._setup import create_adapter, create_async_adapter

__all__ = [
    "DEFAULT_BASE_URL",
    "AsyncCohereChatAdapter",
    "CohereChatAdapter",
    "create_adapter",
    "create_async_adapter",
]
