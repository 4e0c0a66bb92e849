"""Both Responses API adapters pass the whole conformance suite on the ``openai-responses``
protocol, over real HTTP to the suite's loopback upstream (docs/conformance.md)."""

from __future__ import annotations

from runport.conformance import (
    AsyncRuntimeAdapterConformance,
    RuntimeAdapterConformance,
    Upstream,
)
from runport.conformance.providers import wired
from runport.openai import AsyncOpenAIResponsesAdapter, OpenAIResponsesAdapter
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter


class TestOpenAIResponsesAdapter(RuntimeAdapterConformance):
    protocol = "openai-responses"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return OpenAIResponsesAdapter(**wired(upstream))


class TestAsyncOpenAIResponsesAdapter(AsyncRuntimeAdapterConformance):
    protocol = "openai-responses"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncOpenAIResponsesAdapter(**wired(upstream))
