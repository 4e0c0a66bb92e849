"""Both Messages API adapters pass the whole conformance suite on the ``anthropic-messages``
protocol, over real HTTP to the suite's loopback upstream (docs/conformance.md)."""

from __future__ import annotations

from runport.anthropic import AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter
from runport.conformance import (
    AsyncRuntimeAdapterConformance,
    RuntimeAdapterConformance,
    Upstream,
)
from runport.conformance.providers import wired
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter


class TestAnthropicMessagesAdapter(RuntimeAdapterConformance):
    protocol = "anthropic-messages"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return AnthropicMessagesAdapter(**wired(upstream))


class TestAsyncAnthropicMessagesAdapter(AsyncRuntimeAdapterConformance):
    protocol = "anthropic-messages"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncAnthropicMessagesAdapter(**wired(upstream))
