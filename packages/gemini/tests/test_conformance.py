"""Both Gemini adapters pass the whole conformance suite on the ``gemini``
protocol, over real HTTP to the suite's loopback upstream (docs/conformance.md)."""

from __future__ import annotations

from runport.conformance import (
    AsyncRuntimeAdapterConformance,
    RuntimeAdapterConformance,
    Upstream,
)
from runport.conformance.providers import wired
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter


class TestGeminiAdapter(RuntimeAdapterConformance):
    protocol = "gemini"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return GeminiAdapter(**wired(upstream))


class TestAsyncGeminiAdapter(AsyncRuntimeAdapterConformance):
    protocol = "gemini"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncGeminiAdapter(**wired(upstream))
