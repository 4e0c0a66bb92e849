"""Our reference adapter passes the whole suite on the ``scenario`` protocol."""

from __future__ import annotations

from runport.conformance import RuntimeAdapterConformance, Upstream
from runport.mock import ScriptedRuntime
from runport.ports import RuntimeAdapter


class TestScriptedRuntime(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return ScriptedRuntime(upstream.scenario)
