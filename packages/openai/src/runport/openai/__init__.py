"""OpenAI's APIs as runtime adapters, streamed over SSE: chat completions, for any
OpenAI-compatible server and for Azure OpenAI's deployments (docs/providers.md), and the
Responses API (docs/providers-openai-responses.md)."""

from runport.openai._adapter import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT,
    OpenAIChatAdapter,
)
from runport.openai._async_adapter import AsyncOpenAIChatAdapter
from runport.openai._azure import (
    DEFAULT_AZURE_API_VERSION,
    AsyncAzureOpenAIChatAdapter,
    AzureOpenAIChatAdapter,
    EntraTokenAuth,
    TokenProvider,
)
from runport.openai._entra import COGNITIVE_SERVICES_SCOPE, DEFAULT_AUTHORITY, EntraCredential
from runport.openai._request import CallIdRule, ResponseFormatMode
from runport.openai._responses import (
    AsyncOpenAIResponsesAdapter,
    OpenAIResponsesAdapter,
)
from runport.openai._setup import (
    create_adapter,
    create_async_adapter,
    create_async_azure_adapter,
    create_async_responses_adapter,
    create_azure_adapter,
    create_responses_adapter,
)

__all__ = [
    "COGNITIVE_SERVICES_SCOPE",
    "DEFAULT_AUTHORITY",
    "DEFAULT_AZURE_API_VERSION",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_TIMEOUT",
    "AsyncAzureOpenAIChatAdapter",
    "AsyncOpenAIChatAdapter",
    "AsyncOpenAIResponsesAdapter",
    "AzureOpenAIChatAdapter",
    "CallIdRule",
    "EntraCredential",
    "EntraTokenAuth",
    "OpenAIChatAdapter",
    "OpenAIResponsesAdapter",
    "ResponseFormatMode",
    "TokenProvider",
    "create_adapter",
    "create_async_adapter",
    "create_async_azure_adapter",
    "create_async_responses_adapter",
    "create_azure_adapter",
    "create_responses_adapter",
]
