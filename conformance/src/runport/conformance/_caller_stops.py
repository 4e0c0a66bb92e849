"""What the caller-stop checks share — a sink that raises (law 6) and, for async adapters, a
cancelled task: where to stop, and what must hold after the stop."""

from __future__ import annotations

from typing import Any, Final

from runport.conformance._base import ConformanceBase
from runport.conformance._cases import RESUME_CASE, Case
from runport.conformance._harness import Harness
from runport.conformance._observe import Outcome, broken
from runport.conformance._upstream import ScriptedUpstream, Upstream

__all__ = ["MAX_POSITIONS", "after_stop", "stop_plan"]

MAX_POSITIONS: Final = 12
"""Streams longer than this are stopped at their ends and middle, not at every event."""


def stop_plan(
    suite: ConformanceBase, law: int | str, case: Case, h: Harness
) -> tuple[Outcome, list[int], Upstream, Any]:
    """For the caller-stop checks (a raising sink, a cancelled task): a probe call, the
    event positions to stop at, and an adapter on an upstream that plays the case, then
    a resume turn, once per position."""
    probe_upstream = h.upstream([case])
    probe_adapter = h.adapter(probe_upstream)
    suite._requires(case)
    probe = h.stream(probe_adapter, probe_upstream, case.request())
    count = len(probe.events)
    if count == 0:
        broken(law, case.name, "the call sent no event at all", outcome=probe)
    positions = list(range(count))
    if count > MAX_POSITIONS:
        positions = sorted({0, 1, 2, count // 2, count - 2, count - 1})
    plan: list[Case] = []
    for _ in positions:
        plan += [case, RESUME_CASE]
    upstream = h.upstream(plan, pacing="every")
    return probe, positions, upstream, h.adapter(upstream)


def after_stop(
    law: int | str,
    case: Case,
    h: Harness,
    upstream: Upstream,
    adapter: Any,
    before: int,
    where: str,
) -> None:
    """After a stopped call: the HTTP response was closed, and the next call works."""
    if isinstance(upstream, ScriptedUpstream) and len(upstream.requests) > before:
        record = upstream.requests[before].settle()
        if record.ended_early and record.client_closed is False:
            broken(
                law,
                case.name,
                f"{where}; the HTTP response was not closed (the upstream still held an "
                "open connection)",
            )
    after = h.stream(adapter, upstream, RESUME_CASE.request())
    if after.receipt is None or after.receipt.text != "Hello, world.":
        broken(
            law,
            case.name,
            f"{where}; the next call on the same adapter did not play the next turn",
            outcome=after,
        )
