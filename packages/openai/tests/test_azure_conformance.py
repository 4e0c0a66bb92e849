"""Each Azure OpenAI mode passes the conformance suite on the ``azure-openai-chat`` protocol,
over real HTTP to a loopback upstream that checks what Azure checks (the deployment's path,
``api-version``, the ``api-key`` or an Entra ID bearer, ``stream_options`` against the
version) and answers with Azure's content-filter results on every chunk."""

from __future__ import annotations

from runport.conformance import (
    PROTOCOLS,
    AsyncRuntimeAdapterConformance,
    RuntimeAdapterConformance,
    Upstream,
)
from runport.openai import AsyncAzureOpenAIChatAdapter, AzureOpenAIChatAdapter
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter

AzureOpenAIChat = type(PROTOCOLS["azure-openai-chat"])
"""The suite's emulation of an Azure resource, here told which tokens it takes."""
ENTRA_TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.conformance-entra-token.c2lnbmF0dXJl"


class TestAzureOpenAIChatAdapter(RuntimeAdapterConformance):
    protocol = "azure-openai-chat"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return AzureOpenAIChatAdapter(
            base_url=upstream.base_url,
            model=upstream.model,
            api_key=upstream.api_key,
            timeout=upstream.read_timeout,
        )


class TestAsyncAzureOpenAIChatAdapter(AsyncRuntimeAdapterConformance):
    protocol = "azure-openai-chat"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncAzureOpenAIChatAdapter(
            base_url=upstream.base_url,
            model=upstream.model,
            api_key=upstream.api_key,
            timeout=upstream.read_timeout,
        )


class TestAsyncAzureOnTheV1EndpointWithAnEntraToken(AsyncRuntimeAdapterConformance):
    """The v1 endpoint (``/openai/v1/chat/completions``, no deployment in the path) and the
    Entra ID mode: no key, the token from an async provider, signed in by ``EntraTokenAuth``;
    the upstream takes no other bearer and no key."""

    protocol = AzureOpenAIChat(api_keys=(), tokens=(ENTRA_TOKEN,))

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        async def token() -> str:
            return ENTRA_TOKEN

        return AsyncAzureOpenAIChatAdapter(
            base_url=upstream.base_url,
            model=upstream.model,
            api_version="v1",
            token_provider=token,
            timeout=upstream.read_timeout,
        )
