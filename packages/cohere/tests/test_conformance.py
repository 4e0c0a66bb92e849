"""Both Cohere adapters pass the whole conformance suite on the ``cohere-chat`` protocol —
typed server-sent events, a ``message-end`` with an ``ERROR`` finish mid-answer among the
faults — over real HTTP to the suite's loopback upstream (docs/conformance.md)."""

from __future__ import annotations

from runport.cohere import AsyncCohereChatAdapter, CohereChatAdapter
from runport.conformance import (
    AsyncRuntimeAdapterConformance,
    RuntimeAdapterConformance,
    Upstream,
)
from runport.conformance.providers import wired
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter


class TestCohereChatAdapter(RuntimeAdapterConformance):
    protocol = "cohere-chat"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return CohereChatAdapter(**wired(upstream))


class TestAsyncCohereChatAdapter(AsyncRuntimeAdapterConformance):
    protocol = "cohere-chat"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncCohereChatAdapter(**wired(upstream))
