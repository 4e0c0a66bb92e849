"""``Fallback`` passes the conformance suite, with one member and with a failing first member."""

from __future__ import annotations

from runport.application import Fallback
from runport.conformance import RuntimeAdapterConformance, Upstream
from runport.contracts import ExecutionRequest
from runport.mock import Emitter, FunctionRuntime, ScriptedRuntime
from runport.ports import PortError, RuntimeAdapter


def always_unavailable(request: ExecutionRequest, emit: Emitter) -> None:
    raise PortError("TQX_RUNTIME_UNAVAILABLE", "this member is down")


class TestFallbackOfOne(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return Fallback([ScriptedRuntime(upstream.scenario)])


class TestFallbackOfTwo(RuntimeAdapterConformance):
    """Every call fails over from a member that is down before it shows anything; the
    caller must never see that member's ``Failed``."""

    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return Fallback([FunctionRuntime(always_unavailable), ScriptedRuntime(upstream.scenario)])
