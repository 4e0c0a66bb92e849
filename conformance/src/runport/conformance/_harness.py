"""``Harness``: one standard test's upstreams, adapters and calls, sync or async.

The standard tests never call an adapter themselves: they ask the harness, which runs the
call (on a worker thread, or as a task on its own event loop for an async adapter), records
it, and then applies the verdicts every test shares — a frame held back (law 4), a stall that
outlived ``upstream.read_timeout`` — so each is stated once, fails its test at once, and a
class that already showed one runs its other tests without paying for it again.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any, Final, NoReturn, Protocol

import pytest

from runport.conformance._cases import Case
from runport.conformance._observe import Outcome, Recorder, broken, first_difference, observe
from runport.conformance._protocols import PROTOCOLS, UnknownProtocol, resolve
from runport.conformance._upstream import (
    READ_TIMEOUT,
    BlackBoxUpstream,
    ConformanceUsageError,
    Pacing,
    RecordedRequest,
    ScenarioUpstream,
    ScriptedUpstream,
    Upstream,
)
from runport.conformance._wire_protocol import WireProtocol
from runport.contracts import Citation, ErrorCode, ExecutionRequest, Failed, ReasoningDelta
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter

__all__ = [
    "READ_TIMEOUT_TEST",
    "Harness",
    "Suite",
    "protocol_of",
]

READ_TIMEOUT_TEST: Final = "test_read_timeout_is_passed_on"

Adapter = RuntimeAdapter | AsyncRuntimeAdapter


def _names() -> str:
    return ", ".join(repr(name) for name in PROTOCOLS) + ", a WireProtocol, or None"


def protocol_of(cls: type) -> WireProtocol | None:
    """The protocol a suite class speaks (its ``protocol``: a built-in's name, a
    ``WireProtocol``, or ``None`` for the black box)."""
    if "protocol" not in {name for klass in cls.__mro__ for name in vars(klass)}:
        raise ConformanceUsageError(f"{cls.__name__} must set protocol = {_names()}")
    try:
        return resolve(getattr(cls, "protocol", None))
    except UnknownProtocol:
        protocol = getattr(cls, "protocol", None)
        raise ConformanceUsageError(
            f"{cls.__name__}.protocol is {protocol!r}; expected {_names()}"
        ) from None


class Suite(Protocol):
    """What the harness needs of the suite class it serves (``ConformanceBase``); the class
    itself keeps what a test found out for its other tests (``_runport_buffers``,
    ``_runport_read_timeout_ignored``)."""

    _runport_capabilities: frozenset[str] | None

    def make_adapter(self, upstream: Upstream) -> Any: ...

    @property
    def supports_streaming(self) -> bool: ...

    @property
    def is_composite(self) -> bool: ...


class Harness:
    """One test's upstreams and adapters; closes every one when the test ends.

    ``asynchronous`` runs every call as a task on an event loop the harness owns (one loop
    thread per test), so the adapter sees one caller thread, as a sync adapter does.
    """

    def __init__(self, suite: Suite, *, asynchronous: bool = False) -> None:
        self.suite = suite
        self.protocol = protocol_of(type(suite))
        self.asynchronous = asynchronous
        self.expiries = 0
        self._upstreams: list[Upstream] = []
        self._adapters: list[Adapter] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        # the threads of one test (the thread-safety smoke's eight) ask for the loop at once:
        # one loop per test, made once, so every adapter is closed on the loop it was used on
        self._loop_lock = threading.Lock()

    # -- upstreams and adapters -----------------------------------------------------------------

    def upstream(
        self,
        plan: Sequence[Case] = (),
        *,
        pacing: Pacing = "last",
        strict: bool = False,
        shared: bool = False,
        read_timeout: float | None = None,
    ) -> Upstream:
        """A fresh upstream that plays ``plan``, one case per adapter call, in order.

        Pacing is switched off once the class was shown to buffer, except for ``strict`` use
        (law 4 itself); ``shared`` is for concurrent calls (never one turn per call)."""
        owner = type(self.suite)
        self.admit(plan)
        upstream: Upstream
        if self.protocol is None:
            upstream = BlackBoxUpstream()
        elif self.protocol.in_process:
            upstream = ScenarioUpstream(plan, protocol=self.protocol)
        else:
            shown = getattr(owner, "_runport_buffers", None) or getattr(
                owner, "_runport_drops", None
            )
            if shown is not None and not strict:  # proven once: not paid for again
                pacing = "off"
            upstream = ScriptedUpstream(
                plan,
                pacing="off" if shared else pacing,
                read_timeout=read_timeout,
                protocol=self.protocol,
            )
            upstream.shared = shared
        self._upstreams.append(upstream)
        return upstream

    def admit(self, plan: Sequence[Case]) -> None:
        """Skip the test, saying why, when the class already showed what ``plan`` would only
        show again: a stall outliving ``upstream.read_timeout``, or dropped reasoning. Asked
        before every upstream is made, and before a kept play is read again."""
        owner = type(self.suite)
        served = self.protocol is not None and not self.protocol.in_process
        if any(case.fault is not None and case.fault.kind == "stall" for case in plan):
            ignored = getattr(owner, "_runport_read_timeout_ignored", None)
            if ignored is not None and served:
                pytest.skip(
                    f"the adapter does not honour upstream.read_timeout ({ignored}); "
                    f"the stall cases wait for that fix — see {READ_TIMEOUT_TEST}"
                )
        drops = getattr(owner, "_runport_drops", None)
        if drops is not None and drops[1] == "reasoning" and any(case.reasons for case in plan):
            pytest.skip(
                f"the adapter dropped reasoning events in case {drops[0]!r} (law 4 failed "
                "there, once); its reasoning cases wait for that fix, or for "
                "supports_reasoning = False"
            )

    def adapter(self, upstream: Upstream) -> Any:
        """A fresh adapter from ``make_adapter``, checked to be of the suite's kind."""
        adapter = self.suite.make_adapter(upstream)
        kind = AsyncRuntimeAdapter if self.asynchronous else RuntimeAdapter
        if not isinstance(adapter, kind):
            pytest.fail(
                f"make_adapter returned a {type(adapter).__name__}; it must return a "
                f"runport.ports.{kind.__name__}",
                pytrace=False,
            )
        self._adapters.append(adapter)
        if self.suite._runport_capabilities is None:
            try:
                capabilities = frozenset(adapter.descriptor().capabilities)
            except Exception:  # the descriptor test reports it; the flags just see nothing
                capabilities = frozenset()
            self.suite._runport_capabilities = capabilities
        if (
            isinstance(upstream, ScriptedUpstream)
            and self.suite.is_composite
            and not upstream.shared
        ):
            upstream.per_call = True
        return adapter

    # -- calls ----------------------------------------------------------------------------------

    def stream(
        self,
        adapter: Any,
        upstream: Upstream,
        request: ExecutionRequest,
        *,
        raise_at: int | None = None,
        cancel_at: int | None = None,
        awaiting: bool = False,
        capture_logs: bool = False,
    ) -> Outcome:
        """One ``execute_streaming`` call with the suite's recording sink, then the shared
        verdicts (a held-back frame, an outlived stall)."""

        def call(sink: Recorder | None) -> Any:
            assert sink is not None
            return adapter.execute_streaming(request, sink)

        pacer = None
        before = 0
        if isinstance(upstream, ScriptedUpstream):
            before = len(upstream.requests)
            if not upstream.shared:
                pacer = upstream.pacer
                upstream.begin_call()
        outcome = observe(
            call,
            streamed=True,
            pacer=pacer,
            raise_at=raise_at,
            cancel_at=cancel_at,
            awaiting=awaiting,
            capture_logs=capture_logs,
            loop=self._event_loop(),
        )
        self._account(outcome)
        if isinstance(upstream, ScriptedUpstream):
            outcome.requests = upstream.requests[before:]
            if not upstream.shared:
                stalled = self._stalled_too_soon(upstream, before, outcome)
                if stalled is not None:  # the same call again, with a ten-second window
                    again = self.upstream(
                        [stalled], pacing=upstream.pacing, read_timeout=READ_TIMEOUT
                    )
                    return self.stream(
                        self.adapter(again),
                        again,
                        request,
                        raise_at=raise_at,
                        cancel_at=cancel_at,
                        awaiting=awaiting,
                        capture_logs=capture_logs,
                    )
        if pacer is not None and isinstance(upstream, ScriptedUpstream):
            self._shared_verdicts(upstream, outcome.requests, outcome)
        return outcome

    def execute(
        self,
        adapter: Any,
        request: ExecutionRequest,
        *,
        upstream: Upstream | None = None,
        capture_logs: bool = False,
    ) -> Outcome:
        """One ``execute`` call (no sink); give the ``upstream`` it talks to, so a composite's
        turn moves on and the shared verdicts apply."""
        before = 0
        if isinstance(upstream, ScriptedUpstream):
            before = len(upstream.requests)
            upstream.begin_call()
        outcome = observe(
            lambda _: adapter.execute(request),
            streamed=False,
            capture_logs=capture_logs,
            loop=self._event_loop(),
        )
        self._account(outcome)
        if isinstance(upstream, ScriptedUpstream):
            outcome.requests = upstream.requests[before:]
            stalled = None if upstream.shared else self._stalled_too_soon(upstream, before, outcome)
            if stalled is not None:  # the same call again, with a ten-second window
                again = self.upstream([stalled], read_timeout=READ_TIMEOUT)
                return self.execute(
                    self.adapter(again), request, upstream=again, capture_logs=capture_logs
                )
            self._shared_verdicts(upstream, outcome.requests, outcome)
        return outcome

    def _stalled_too_soon(
        self, upstream: ScriptedUpstream, before: int, outcome: Outcome
    ) -> Case | None:
        """The stall case to play again when a call on a short read timeout timed out before
        the upstream's frames ahead of the stall could have reached it.

        A stall case's upstream gives the adapter ``STALL_READ_TIMEOUT`` (half a second), so
        every stall case ends soon. On a loaded machine a thread can sleep through that whole
        window — the upstream's before it reads the request or writes the frames, the caller's
        before it reads them — and the timeout fires first: the machine's delay, not the
        adapter's. The events show it: the upstream recorded no request for the call, or the
        sink saw less progress than the upstream sends ahead of the stall. Such a call is
        played once more on its own upstream with ``READ_TIMEOUT`` (ten seconds, the window
        every other frame gets), and that call's outcome is the verdict's. A class whose second
        call also timed out too soon drops progress on a timeout (its own doing): its later
        calls are judged at once, without another ten-second stall.
        """
        owner = type(self.suite)
        if getattr(owner, "_runport_stall_drops", False) or outcome.stop is not None:
            return None
        timeout = ErrorCode.RUNTIME_TIMEOUT
        timed_out = getattr(outcome.error, "code", None) == timeout or any(
            isinstance(event, Failed) and event.code == timeout for event in outcome.terminals
        )
        if not timed_out:
            return None
        records: list[RecordedRequest] = outcome.requests
        case = records[0].source if records else upstream.planned(before)
        if case is None or case.fault is None or case.fault.kind != "stall":
            return None
        if records:
            played = records[0].played
            owed = 0 if played is None or not outcome.streamed else len(played.progress())
            if len(outcome.progress) >= owed:
                return None  # the stall itself timed out, as it should
        if upstream.read_timeout >= READ_TIMEOUT:  # the second call: the adapter's doing
            owner._runport_stall_drops = True  # type: ignore[attr-defined]
            return None
        return case

    def _account(self, outcome: Outcome) -> None:
        if outcome.hung:
            self.expiries += 1

    def _shared_verdicts(
        self, upstream: ScriptedUpstream, records: Sequence[Any], outcome: Outcome
    ) -> None:
        owner = type(self.suite)
        for record in records:
            record.settle()
            if record.protocol_error is not None:
                pytest.fail(
                    f"the protocol {upstream.wire.name!r} could not write case {record.case!r} "
                    f"(a defect in the WireProtocol, not in the adapter):\n{record.protocol_error}",
                    pytrace=False,
                )
            if record.stall_outlived is not None:
                held = f"{record.stall_outlived:g} s"
                owner._runport_read_timeout_ignored = f"a stall outlived it: held {held}"  # type: ignore[attr-defined]
                broken(
                    5,
                    record.case,
                    f"the upstream stalled and the call was still waiting {held} later, far past "
                    f"upstream.read_timeout ({upstream.read_timeout:g} s): pass "
                    "upstream.read_timeout to your adapter in make_adapter (for example "
                    "timeout=upstream.read_timeout), so a stalled upstream fails in time",
                    outcome=outcome,
                )
            if not outcome.streamed or not self.suite.supports_streaming:
                continue
            held_back = record.promptness or record.withheld
            if held_back:
                case = record.played
                expected = [] if case is None else list(case.progress())
                owed, seen = record.held_at or (0, 0)
                if case is not None and outcome.progress[:owed] != expected[:owed]:
                    # what was held for was never delivered, not even late: dropped
                    self._dropped(record.case, outcome, expected)
                owner._runport_buffers = record.case  # type: ignore[attr-defined]
                broken(  # the sequences as they stood when the upstream held the next frame
                    4,
                    record.case,
                    "not prompt: " + "; ".join(held_back),
                    seen=outcome.progress[:seen],
                    expected=None if case is None else case.progress()[:owed],
                    outcome=outcome,
                )

    def _dropped(self, case: str, outcome: Outcome, expected: list[Any]) -> NoReturn:
        """Fail on events the upstream sent and the sink never got, once per cause: the class
        keeps what was dropped, so its later calls run unpaced (no bound to wait out again)
        and, when it was reasoning, its later reasoning cases skip, pointing here."""
        owner = type(self.suite)
        seen = outcome.progress
        at = first_difference(seen, expected)
        lost = expected[at] if at is not None and at < len(expected) else None
        reasoning = isinstance(lost, ReasoningDelta)
        owner._runport_drops = (case, "reasoning" if reasoning else "progress")  # type: ignore[attr-defined]
        advice = (
            "; an adapter that cannot carry reasoning says so: supports_reasoning = False in "
            "the suite class (its reasoning cases then skip)"
            if reasoning
            else ": citations dropped (a Citation per source the upstream cites)"
            if isinstance(lost, Citation)
            else ""
        )
        broken(
            4,
            case,
            "progress events differ from the upstream's, in content or order: what the "
            f"upstream sent never reached the sink (dropped, not held back){advice}",
            seen=seen,
            expected=expected,
            outcome=outcome,
        )

    # -- the event loop (async adapters) ----------------------------------------------------------

    def _event_loop(self) -> asyncio.AbstractEventLoop | None:
        if not self.asynchronous:
            return None
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="runport-conformance-loop", daemon=True
                )
                thread.start()
                self._loop, self._loop_thread = loop, thread
            return self._loop

    def run(self, awaitable: Any, timeout: float = 30.0) -> Any:
        """Await ``awaitable`` on the harness's loop (for an async adapter's ``aclose``)."""
        loop = self._event_loop()
        assert loop is not None
        return asyncio.run_coroutine_threadsafe(awaitable, loop).result(timeout)

    # -- the end --------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the test's adapters (a ``close()`` or, async, an ``aclose()``), then its
        upstreams, then the loop."""
        try:
            for adapter in self._adapters:
                closer = getattr(adapter, "aclose", None) if self.asynchronous else None
                if callable(closer):
                    self.run(closer())
                    continue
                closer = getattr(adapter, "close", None)
                if callable(closer):
                    result = closer()
                    if asyncio.iscoroutine(result):
                        self.run(result)
        finally:
            for upstream in self._upstreams:
                upstream.close()
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._loop.stop)
                if self._loop_thread is not None:
                    self._loop_thread.join(5)
                if not self._loop.is_running():
                    self._loop.close()
