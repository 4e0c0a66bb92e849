"""runport's conformance suite: the streaming law (docs/streaming-law.md), checked on scripted
upstreams.

Subclass ``RuntimeAdapterConformance`` (or, for an ``AsyncRuntimeAdapter``,
``AsyncRuntimeAdapterConformance``) in a ``Test…`` class, set ``protocol`` and implement
``make_adapter(upstream)``; or call ``check_stream(events, receipt)`` on a stream of your own.
See docs/conformance.md.

Each public name is imported from its module on first use (``_HOMES`` says which module holds
it; the ``TYPE_CHECKING`` block says the same to type checkers and editors). The pytest plugin
this package registers lives inside it, so an eager import here would load the whole suite —
pytest fixtures, hypothesis, every protocol — into every test run on a machine where the
package is installed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runport.conformance._async_suite import AsyncRuntimeAdapterConformance
    from runport.conformance._cases import (
        CASES,
        Call,
        Case,
        Cite,
        Fault,
        Generated,
        ServerTool,
        Text,
        Thought,
        UsageStep,
    )
    from runport.conformance._checks import StreamViolation, check_stream
    from runport.conformance._harness import Harness
    from runport.conformance._observe import CallerStop
    from runport.conformance._protocols import PROTOCOLS
    from runport.conformance._rewrites import calls_in_blocks, calls_whole
    from runport.conformance._run import run_conformance
    from runport.conformance._sync_suite import RuntimeAdapterConformance
    from runport.conformance._upstream import (
        BlackBoxUpstream,
        ConformanceUsageError,
        ScenarioUpstream,
        ScriptedUpstream,
        Upstream,
    )
    from runport.conformance._wire_protocol import (
        Frame,
        Refusal,
        Transcript,
        WireContext,
        WireProtocol,
        WireRequest,
        json_bytes,
    )

__all__ = [
    "CASES",
    "PROTOCOLS",
    "AsyncRuntimeAdapterConformance",
    "BlackBoxUpstream",
    "Call",
    "CallerStop",
    "Case",
    "Cite",
    "ConformanceUsageError",
    "Fault",
    "Frame",
    "Generated",
    "Harness",
    "Refusal",
    "RuntimeAdapterConformance",
    "ScenarioUpstream",
    "ScriptedUpstream",
    "ServerTool",
    "StreamViolation",
    "Text",
    "Thought",
    "Transcript",
    "Upstream",
    "UsageStep",
    "WireContext",
    "WireProtocol",
    "WireRequest",
    "calls_in_blocks",
    "calls_whole",
    "check_stream",
    "json_bytes",
    "run_conformance",
]

_HOMES = {
    "AsyncRuntimeAdapterConformance": "_async_suite",
    "StreamViolation": "_checks",
    "check_stream": "_checks",
    "CASES": "_cases",
    "Call": "_cases",
    "Case": "_cases",
    "Fault": "_cases",
    "Cite": "_cases",
    "Generated": "_cases",
    "ServerTool": "_cases",
    "Text": "_cases",
    "Thought": "_cases",
    "UsageStep": "_cases",
    "PROTOCOLS": "_protocols",
    "calls_in_blocks": "_rewrites",
    "calls_whole": "_rewrites",
    "Frame": "_wire_protocol",
    "Refusal": "_wire_protocol",
    "Transcript": "_wire_protocol",
    "WireContext": "_wire_protocol",
    "WireProtocol": "_wire_protocol",
    "WireRequest": "_wire_protocol",
    "json_bytes": "_wire_protocol",
    "CallerStop": "_observe",
    "run_conformance": "_run",
    "Harness": "_harness",
    "RuntimeAdapterConformance": "_sync_suite",
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
