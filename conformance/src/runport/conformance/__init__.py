"""runport's conformance suite: the streaming law (docs/streaming-law.md), checked on scripted
upstreams.

Subclass ``RuntimeAdapterConformance`` (or, for an ``AsyncRuntimeAdapter``,
``AsyncRuntimeAdapterConformance``) in a ``Test…`` class, set ``protocol`` and implement
``make_adapter(upstream)``; or call ``check_stream(events, receipt)`` on a stream of your own.
See docs/conformance.md. The names below are loaded on first use,
so the pytest plugin this package registers costs nothing in test runs that never touch the
suite.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runport.conformance._async_suite import AsyncRuntimeAdapterConformance
    from runport.conformance._cases import CASES, Case, Fault
    from runport.conformance._checks import StreamViolation, check_stream
    from runport.conformance._harness import Harness
    from runport.conformance._observe import CallerStop
    from runport.conformance._run import run_conformance
    from runport.conformance._suite import RuntimeAdapterConformance
    from runport.conformance._upstream import (
        BlackBoxUpstream,
        ConformanceUsageError,
        ScenarioUpstream,
        ScriptedUpstream,
        Upstream,
    )

__all__ = [
    "CASES",
    "AsyncRuntimeAdapterConformance",
    "BlackBoxUpstream",
    "CallerStop",
    "Case",
    "ConformanceUsageError",
    "Fault",
    "Harness",
    "RuntimeAdapterConformance",
    "ScenarioUpstream",
    "ScriptedUpstream",
    "StreamViolation",
    "Upstream",
    "check_stream",
    "run_conformance",
]

_HOMES = {
    "AsyncRuntimeAdapterConformance": "_async_suite",
    "StreamViolation": "_checks",
    "check_stream": "_checks",
    "CASES": "_cases",
    "Case": "_cases",
    "Fault": "_cases",
    "CallerStop": "_observe",
    "run_conformance": "_run",
    "Harness": "_harness",
    "RuntimeAdapterConformance": "_suite",
    "BlackBoxUpstream": "_upstream",
    "ConformanceUsageError": "_upstream",
    "ScenarioUpstream": "_upstream",
    "ScriptedUpstream": "_upstream",
    "Upstream": "_upstream",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'runport.conformance' has no attribute {name!r}")
    value = getattr(import_module(f"runport.conformance.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
