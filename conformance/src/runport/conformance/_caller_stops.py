"""What the caller-stop checks share — a sink that raises (law 6) and, for async adapters, a
cancelled task: where to stop, and what must hold after the stop."""

from __future__ import annotations

from typing import Any, Final

from runport.conformance._base import ConformanceBase
from runport.conformance._cases import RESUME_CASE, Case
from runport.conformance._harness import Harness
from runport.conformance._observe import Outcome, broken
from runport.conformance._upstream import ScriptedUpstream, Upstream

__all__ = ["MAX_POSITIONS", "after_stop", "served_again", "stop_plan"]

MAX_POSITIONS: Final = 12
"""Streams longer than this are stopped at their ends and middle, not at every event."""


def stop_plan(
    suite: ConformanceBase, law: int | str, case: Case, h: Harness
) -> tuple[Outcome, list[int], Upstream, Any]:
    """For the caller-stop checks (a raising sink, a cancelled task): the probe (the case's
    shared play, ``_played``), the event positions to stop at, and an adapter on an upstream
    that plays the case once per position, then one resume turn."""
    probe = suite._played(h, case).streamed
    count = len(probe.events)
    if count == 0:
        broken(law, case.name, "the call sent no event at all", outcome=probe)
    positions = list(range(count))
    if count > MAX_POSITIONS:
        positions = sorted({0, 1, 2, count // 2, count - 2, count - 1})
    # each stopped call is the next call after the stop before it (it must play the case as
    # the probe did, up to its own stop); a resume turn follows the last stop
    plan = [case] * len(positions) + [RESUME_CASE]
    upstream = h.upstream(plan, pacing="every")
    return probe, positions, upstream, h.adapter(upstream)


def served_again(
    law: int | str, case: Case, probe: Outcome, outcome: Outcome, where: str, previous: str | None
) -> None:
    """The stopped call ``where`` reached its stop and, when it followed the stop
    ``previous`` on the same adapter, played the case as the probe did up to there: that
    adapter served the next call after a stop."""
    after = "" if previous is None else f" (the call after {previous}, on the same adapter)"
    if outcome.stop is None and outcome.cancelled_at is None:
        broken(
            law,
            case.name,
            f"{where} was never reached{after}: the adapter sent fewer events than before",
            seen=outcome.events,
            expected=probe.events,
        )
    if previous is not None and outcome.progress != probe.progress[: len(outcome.progress)]:
        broken(
            law,
            case.name,
            f"after {previous}, the next call on the same adapter did not play its turn as the "
            "first call did",
            seen=outcome.progress,
            expected=probe.progress,
        )


def after_stop(
    law: int | str,
    case: Case,
    h: Harness,
    upstream: Upstream,
    adapter: Any,
    before: int,
    where: str,
    *,
    resume: bool,
) -> None:
    """After a stopped call: the HTTP response was closed, and (``resume``, after the last
    stop; the next stopped call shows it after the others) the next call works."""
    if isinstance(upstream, ScriptedUpstream) and len(upstream.requests) > before:
        record = upstream.requests[before].settle()
        if record.ended_early and record.client_closed is False:
            broken(
                law,
                case.name,
                f"{where}; the HTTP response was not closed (the upstream still held an "
                "open connection)",
            )
    if not resume:
        return
    after = h.stream(adapter, upstream, RESUME_CASE.request())
    if after.receipt is None or after.receipt.text != "Hello, world.":
        broken(
            law,
            case.name,
            f"{where}; the next call on the same adapter did not play the next turn",
            outcome=after,
        )
