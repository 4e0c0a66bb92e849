"""The async doubles pass the async conformance suite: ``AsyncScriptedRuntime`` plays the
suite's scenario, ``AsyncFunctionRuntime`` a handler that says what the scenario says."""

from __future__ import annotations

from runport.conformance import AsyncRuntimeAdapterConformance, Upstream
from runport.mock import AsyncFunctionRuntime, AsyncScriptedRuntime
from runport.ports import AsyncRuntimeAdapter

from .scenario_handlers import async_scenario_handler


class TestAsyncScriptedRuntime(AsyncRuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncScriptedRuntime(upstream.scenario)


class TestAsyncFunctionRuntime(AsyncRuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncFunctionRuntime(async_scenario_handler(upstream.scenario))
