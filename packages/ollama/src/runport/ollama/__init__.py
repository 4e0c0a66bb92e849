"""An Ollama runtime adapter for the native ``/api/chat`` API, streamed as newline-delimited
JSON, as a codec on runport's HTTP layer (docs/providers.md)."""

from runport.ollama._adapter import DEFAULT_BASE_URL, OllamaChatAdapter
from runport.ollama._async_adapter import AsyncOllamaChatAdapter
from runport.ollama._setup import create_adapter, create_async_adapter

__all__ = [
    "DEFAULT_BASE_URL",
    "AsyncOllamaChatAdapter",
    "OllamaChatAdapter",
    "create_adapter",
    "create_async_adapter",
]
