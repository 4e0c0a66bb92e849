"""Law 7 for a composite adapter (capability ``composite``, e.g. a fallback): trying another
member is its job, so instead of one upstream request per call the check is that no member is
tried once the caller saw progress, that the caller sees one terminal event, and that a failed
member's ``Failed`` never reaches it."""

from __future__ import annotations

from typing import Any

from runport.conformance._base import ConformanceBase
from runport.conformance._cases import Case, sentinel_case
from runport.conformance._checks import grammar_problem
from runport.conformance._harness import Harness
from runport.conformance._observe import broken
from runport.conformance._upstream import ScriptedUpstream, Upstream
from runport.contracts import Failed
from runport.ports import PortError

__all__ = ["check_composite"]


def check_composite(
    suite: ConformanceBase, case: Case, h: Harness, upstream: Upstream, adapter: Any
) -> None:
    """Law 7 for a composite: it may try another member only while nothing of the failed
    one reached the caller; the caller sees exactly one terminal event, and never a failed
    member's ``Failed``."""
    if not isinstance(upstream, ScriptedUpstream):
        upstream = h.upstream([case] * 8)  # every member, at any turn, plays the case
        adapter = h.adapter(upstream)
    before = len(upstream.requests) if isinstance(upstream, ScriptedUpstream) else 0
    outcome = h.stream(adapter, upstream, case.request())
    events = outcome.events
    shown = [i for i, event in enumerate(events[:-1]) if isinstance(event, Failed)]
    if shown:
        broken(
            7,
            case.name,
            f"composite: a failed member's Failed reached the caller (event #{shown[0]}); "
            "the caller must see only the composite's one terminal event",
            seen=events,
            outcome=outcome,
        )
    problem = grammar_problem(outcome)
    if problem:
        broken(7, case.name, f"composite: {problem}", seen=events, outcome=outcome)
    expected = list(suite._expected(case))
    seen = outcome.progress
    if len(seen) > len(expected) and seen[: len(expected)] == expected:
        broken(
            7,
            case.name,
            "composite: moved on to another member after a progress event reached the "
            "caller (the progress was played again)",
            seen=seen,
            expected=expected,
            outcome=outcome,
        )
    if isinstance(upstream, ScriptedUpstream):
        for record in upstream.requests[before + 1 :]:
            if record.seen_at_start:
                broken(
                    7,
                    case.name,
                    f"composite: upstream request #{record.number} began after "
                    f"{record.seen_at_start} progress event(s) reached the caller — no "
                    "member may be tried once the caller saw progress",
                    seen=events,
                    outcome=outcome,
                )
    if not isinstance(outcome.error, PortError):
        broken(7, case.name, "composite: the call did not fail with a PortError", outcome=outcome)
    if isinstance(upstream, ScriptedUpstream):
        after = h.execute(adapter, sentinel_case().request(), upstream=upstream)
        if after.receipt is None or after.receipt.text != "sentinel":
            broken(
                7,
                case.name,
                "composite: the next call did not get the next scripted turn",
                outcome=after,
            )
    plain = h.execute(adapter, case.request(), upstream=upstream)
    if not isinstance(plain.error, PortError):
        broken(7, case.name, "composite: execute did not fail with a PortError", outcome=plain)
