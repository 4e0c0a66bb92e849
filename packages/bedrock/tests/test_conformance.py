"""The Bedrock adapters pass the whole conformance suite: the Converse pair on the
``bedrock-converse`` protocol (ConverseStream's eventstream), the Anthropic pair on
``bedrock-anthropic`` (Claude's events in ``chunk`` messages) — an exception message mid-answer
and a message with a wrong CRC among the faults — over real HTTP to the suite's loopback
upstream (docs/conformance.md)."""

from __future__ import annotations

from runport.bedrock import (
    AsyncBedrockAnthropicAdapter,
    AsyncBedrockConverseAdapter,
    BedrockAnthropicAdapter,
    BedrockConverseAdapter,
)
from runport.conformance import (
    AsyncRuntimeAdapterConformance,
    RuntimeAdapterConformance,
    Upstream,
)
from runport.conformance.providers import wired
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter


class TestBedrockConverseAdapter(RuntimeAdapterConformance):
    protocol = "bedrock-converse"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return BedrockConverseAdapter(**wired(upstream))


class TestAsyncBedrockConverseAdapter(AsyncRuntimeAdapterConformance):
    protocol = "bedrock-converse"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncBedrockConverseAdapter(**wired(upstream))


class TestBedrockAnthropicAdapter(RuntimeAdapterConformance):
    protocol = "bedrock-anthropic"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return BedrockAnthropicAdapter(**wired(upstream))


class TestAsyncBedrockAnthropicAdapter(AsyncRuntimeAdapterConformance):
    protocol = "bedrock-anthropic"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncBedrockAnthropicAdapter(**wired(upstream))
