"""A traced adapter passes the conformance suite whenever the adapter it wraps does: the
decorator must not bend the streaming law, whether it records to an SDK or to the no-op API."""

from __future__ import annotations

from runport.conformance import RuntimeAdapterConformance, Upstream
from runport.mock import ScriptedRuntime
from runport.otel import Traced
from runport.ports import RuntimeAdapter

from .otel_doubles import Recorded

# One pipeline for the whole suite: the suite makes adapters in its own fixtures, and spans
# kept in memory cost nothing it checks.
PIPELINE = Recorded.start()


class TestTracedScriptedRuntimeRecording(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        PIPELINE.spans.clear()
        return Traced(
            ScriptedRuntime(upstream.scenario), capture_content=True, **PIPELINE.providers
        )


class TestTracedScriptedRuntimeWithoutSdk(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return Traced(ScriptedRuntime(upstream.scenario))
