"""Both Messages API adapters pass the whole conformance suite on the ``anthropic-messages``
protocol, over real HTTP to the suite's loopback upstream (docs/conformance.md); the sync one
also on ``vertex-anthropic``, Vertex AI's project routes and OAuth bearer."""

from __future__ import annotations

from google.oauth2.credentials import Credentials

from runport.anthropic import AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter
from runport.conformance import (
    PROTOCOLS,
    AsyncRuntimeAdapterConformance,
    RuntimeAdapterConformance,
    Upstream,
)
from runport.conformance.providers import wired
from runport.http import GoogleAuth
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter


class TestAnthropicMessagesAdapter(RuntimeAdapterConformance):
    protocol = "anthropic-messages"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return AnthropicMessagesAdapter(**wired(upstream))


class TestAsyncAnthropicMessagesAdapter(AsyncRuntimeAdapterConformance):
    protocol = "anthropic-messages"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncAnthropicMessagesAdapter(**wired(upstream))


VertexAnthropic = type(PROTOCOLS["vertex-anthropic"])
"""The suite's emulation of Vertex AI's Claude routes, here told which token it takes."""
VERTEX_TOKEN = "ya29.conformance-vertex-token"


class TestAnthropicOnVertex(RuntimeAdapterConformance):
    """Vertex AI's mode: a project's path (``/v1/projects/…/locations/…/publishers/anthropic/
    models/…:streamRawPredict``), the body without ``model`` and with Vertex's
    ``anthropic_version``, no ``x-api-key``, each request signed by ``GoogleAuth`` with a
    token the upstream takes (google-auth credentials holding it; its refresh is proven in
    test_vertex.py); the upstream refuses any other bearer."""

    protocol = VertexAnthropic(tokens=(VERTEX_TOKEN,))

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return AnthropicMessagesAdapter(
            base_url=upstream.base_url,
            model=upstream.model,
            project="conformance-project",
            location="us-east5",
            auth=GoogleAuth(Credentials(token=VERTEX_TOKEN)),  # type: ignore[no-untyped-call]
            timeout=upstream.read_timeout,
        )
