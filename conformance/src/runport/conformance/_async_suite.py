"""``AsyncRuntimeAdapterConformance``: the same standard tests for an ``AsyncRuntimeAdapter``,
plus what only the event loop has — cancellation and an awaitable sink.

Every case of the sync suite runs unchanged: the harness runs each call as a task on an event
loop it owns, so the checks are the sync suite's own. Two groups are added: the calling task
cancelled after each event in turn (docs/streaming-law.md: a cancellation is a caller stop),
and backpressure (a sink that returns an awaitable is awaited before the adapter goes on).
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from runport.conformance._base import over, select_all
from runport.conformance._black_box_tests import BlackBoxTests
from runport.conformance._caller_stops import MAX_POSITIONS, after_stop, served_again, stop_plan
from runport.conformance._cases import Case
from runport.conformance._harness import Harness
from runport.conformance._observe import broken
from runport.conformance._upstream import ScriptedUpstream, Upstream
from runport.ports import AsyncRuntimeAdapter

__all__ = ["AsyncRuntimeAdapterConformance"]


class AsyncRuntimeAdapterConformance(BlackBoxTests):
    """The conformance suite for an ``AsyncRuntimeAdapter``: subclass it as ``Test…``, set
    ``protocol``, implement ``make_adapter(upstream)`` returning the async adapter.

    Everything ``RuntimeAdapterConformance`` says holds (protocols, upstreams, flags, the
    override guard). ``make_adapter`` is a plain method: the adapter must bind to no event loop
    when constructed; every call runs on one loop per test, and an adapter with an
    ``aclose()`` (or an async ``close()``) is closed on it when the test ends.
    """

    _runport_async: ClassVar[bool] = True

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        """A fresh async adapter wired to ``upstream`` (see the class docstring)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_adapter(upstream)")

    @over(select_all)
    def test_cancellation_at_every_event(self, case: Case, conformance_harness: Harness) -> None:
        """The calling task is cancelled after each event in turn: ``CancelledError`` comes
        back, nothing more is sent, the HTTP response is closed, and the adapter serves the
        next call."""
        h = conformance_harness
        probe, positions, upstream, adapter = stop_plan(self, "cancellation", case, h)
        count = len(probe.events)
        previous = None
        for position in positions:
            before = len(upstream.requests) if isinstance(upstream, ScriptedUpstream) else 0
            outcome = h.stream(adapter, upstream, case.request(), cancel_at=position)
            kind = probe.events[position].kind
            where = f"the task was cancelled after event #{position} ({kind})"
            if outcome.hung:
                broken("cancellation", case.name, f"{where}; the call never returned")
            served_again("cancellation", case, probe, outcome, where, previous)
            last = position == count - 1
            if not isinstance(outcome.error, asyncio.CancelledError) and not last:
                broken(
                    "cancellation",
                    case.name,
                    f"{where}, but the cancellation did not propagate: the call {outcome.ending()}",
                    outcome=outcome,
                )
            if outcome.after_stop:
                broken(
                    "cancellation",
                    case.name,
                    f"{where}; the adapter sent more after it",
                    seen=outcome.after_stop,
                    expected=[],
                )
            after_stop(
                "cancellation",
                case,
                h,
                upstream,
                adapter,
                before,
                where,
                resume=position == positions[-1],
            )
            previous = where

    @over(lambda case: not case.fails and len(case.progress()) <= MAX_POSITIONS)
    def test_backpressure(self, case: Case, conformance_harness: Harness) -> None:
        """A sink that returns an awaitable for every event: the adapter awaits each before it
        delivers the next (a slow consumer holds a fast upstream back), and the call keeps the
        law as before."""
        h = conformance_harness
        upstream = h.upstream([case], pacing="off")
        adapter = h.adapter(upstream)
        self._requires(case)
        outcome = h.stream(adapter, upstream, case.request(), awaiting=True)
        if outcome.unawaited:
            broken(
                "backpressure",
                case.name,
                f"the sink returned an awaitable for event #{outcome.unawaited[0]} and the "
                "adapter went on without awaiting it",
                seen=outcome.events,
                outcome=outcome,
            )
        expected = list(self._expected(case))
        if outcome.receipt is None or outcome.progress != expected:
            broken(
                "backpressure",
                case.name,
                "with an awaitable sink the call did not deliver the upstream's progress and "
                "return its receipt",
                seen=outcome.progress,
                expected=expected,
                outcome=outcome,
            )
