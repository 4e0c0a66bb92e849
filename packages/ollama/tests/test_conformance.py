"""Both Ollama adapters pass the whole conformance suite on the ``ollama`` protocol — NDJSON
lines, an ``{"error": …}`` line mid-answer and a line that is not JSON among the faults — over
real HTTP to the suite's loopback upstream (docs/conformance.md)."""

from __future__ import annotations

from runport.conformance import (
    AsyncRuntimeAdapterConformance,
    RuntimeAdapterConformance,
    Upstream,
)
from runport.conformance.providers import wired
from runport.ollama import AsyncOllamaChatAdapter, OllamaChatAdapter
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter


class TestOllamaChatAdapter(RuntimeAdapterConformance):
    protocol = "ollama"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return OllamaChatAdapter(**wired(upstream))


class TestAsyncOllamaChatAdapter(AsyncRuntimeAdapterConformance):
    protocol = "ollama"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncOllamaChatAdapter(**wired(upstream))
