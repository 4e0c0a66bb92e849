"""Both Gemini adapters pass the whole conformance suite on the ``gemini``
protocol, over real HTTP to the suite's loopback upstream (docs/conformance.md); the sync one
also on ``vertex-gemini``, Vertex AI's project routes and OAuth bearer."""

from __future__ import annotations

from google.oauth2.credentials import Credentials

from runport.conformance import (
    PROTOCOLS,
    AsyncRuntimeAdapterConformance,
    RuntimeAdapterConformance,
    Upstream,
)
from runport.conformance.providers import wired
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter
from runport.http import GoogleAuth
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter


class TestGeminiAdapter(RuntimeAdapterConformance):
    protocol = "gemini"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return GeminiAdapter(**wired(upstream))


class TestAsyncGeminiAdapter(AsyncRuntimeAdapterConformance):
    protocol = "gemini"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncGeminiAdapter(**wired(upstream))


VertexGemini = type(PROTOCOLS["vertex-gemini"])
"""The suite's emulation of Vertex AI's Gemini routes, here told which token it takes."""
VERTEX_TOKEN = "ya29.conformance-vertex-token"


class TestGeminiOnVertex(RuntimeAdapterConformance):
    """Vertex AI's project mode: a project's path (``/v1/projects/…/locations/…/publishers/
    google/models/…``), each request signed by ``GoogleAuth`` with a token the upstream takes
    (google-auth credentials holding it; its refresh is proven in test_vertex.py); the
    upstream refuses any other bearer and express mode's key."""

    protocol = VertexGemini(tokens=(VERTEX_TOKEN,), api_keys=())

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return GeminiAdapter(
            base_url=upstream.base_url,
            model=upstream.model,
            project="conformance-project",
            location="us-central1",
            auth=GoogleAuth(Credentials(token=VERTEX_TOKEN)),  # type: ignore[no-untyped-call]
            timeout=upstream.read_timeout,
        )
