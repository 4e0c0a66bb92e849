"""The bridges keep the law: the sync suite run through ``to_sync`` over the async doubles,
and through a ``to_sync(to_async(...))`` round trip (a worker thread and a loop in between)."""

from __future__ import annotations

from runport.application import AsyncFallback, to_async, to_sync
from runport.conformance import RuntimeAdapterConformance, Upstream
from runport.mock import AsyncScriptedRuntime, ScriptedRuntime
from runport.ports import RuntimeAdapter


class TestToSyncOverAsyncScripted(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return to_sync(AsyncScriptedRuntime(upstream.scenario))


class TestRoundTripThroughAWorkerThread(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return to_sync(to_async(ScriptedRuntime(upstream.scenario)))


class TestAsyncFallbackOfOne(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return to_sync(AsyncFallback([AsyncScriptedRuntime(upstream.scenario)]))
