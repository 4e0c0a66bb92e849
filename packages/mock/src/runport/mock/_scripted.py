"""``ScriptedRuntime``: a runtime adapter that plays a ``Scenario`` (docs/scenarios.md).

It exists so tests, examples and the CLI's default adapter get real streaming behaviour —
deltas, interleaved tool-call fragments, failures after progress, oversize responses — with no
network and no wall clock, byte-identical on every run.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Iterator
from typing import Any, Self

from runport.contracts import (
    AdapterDescriptor,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    ReasoningDelta,
    StreamEvent,
    Usage,
)
from runport.core import (
    CitationEvent,
    DeltaEvent,
    FailEvent,
    FileDeltaEvent,
    FinishEvent,
    HeldCache,
    ReasoningDeltaEvent,
    Scenario,
    ScenarioEvent,
    ScenarioTurn,
    ServerToolCallEvent,
    ServerToolResultEvent,
    UsageEvent,
    load_scenario,
)
from runport.mock._function import CAPABILITIES, Counters, RuntimeStats
from runport.mock._turn import VERSION, Turn, byte_size, discard
from runport.ports import PortError, RuntimeAdapter, Sink, check_byte_count

log = logging.getLogger("runport.mock")

__all__ = [
    "DESCRIPTOR",
    "ScenarioDouble",
    "ScenarioPlayer",
    "ScriptedRuntime",
]

DESCRIPTOR = AdapterDescriptor(
    id="runport-mock",
    version=VERSION,
    capabilities=list(CAPABILITIES),
    provider="runport.mock",
)
"""Each runtime's descriptor is this one with ``model`` set to the id of the scenario it plays,
so telemetry names the script that answered (docs/observability.md)."""


@functools.lru_cache(maxsize=256)
def _descriptor(model: str) -> AdapterDescriptor:
    """``DESCRIPTOR`` naming the scenario: made once per scenario id (descriptors are frozen),
    since a batch starts a fresh runtime for every row."""
    return DESCRIPTOR.model_copy(update={"model": model})


def play_scenario_turn(spec: ScenarioTurn, turn: Turn) -> Iterator[StreamEvent]:
    """The events of one scenario turn, in order, up to and including its terminal.

    A generator with no I/O, so the sync and async runtimes deliver the very same events."""
    for event, made in planned(spec):
        if type(made) is tuple:
            out = turn.played(*made)
            yield out
            if out is not made[0]:  # the Failed of a response past its bound
                return
            if type(event) is ReasoningDeltaEvent and event.signature is not None:
                turn.sign(event.signature)
            continue
        if type(made) is Usage:
            turn.add_usage(made)  # usage never ends a turn
            continue
        if event.kind == "delay":
            turn.delay(event.ms)
        elif event.kind == "finish":
            yield turn.finish(
                event.finish_reason, finish=event.finish, **_output(spec, event, turn.request)
            )
        elif event.kind == "delta":
            yield turn.text(event.text)
        elif event.kind == "reasoning_delta":
            yield turn.reasoning(event.text, signature=event.signature)
        elif event.kind == "tool_call_delta":
            yield turn.fragment(
                event.index, event.arguments_fragment, call_id=event.call_id, name=event.name
            )
        elif event.kind == "usage":
            turn.usage(
                event.input_tokens,
                event.output_tokens,
                event.reasoning_tokens,
                cache_read_tokens=event.cache_read_tokens,
                cache_write_tokens=event.cache_write_tokens,
            )
        elif isinstance(
            event, ServerToolCallEvent | ServerToolResultEvent | CitationEvent | FileDeltaEvent
        ):
            yield turn.provided(event.played())
        else:
            assert isinstance(event, FailEvent)
            error = PortError(event.code, event.message, retry_after_ms=event.retry_after_ms)
            yield turn.fail(error)
        if turn.done:
            return


_Made = tuple[Delta | ReasoningDelta, int] | Usage | None
_PLANS: HeldCache[tuple[tuple[ScenarioEvent, _Made], ...]] = HeldCache()


def planned(spec: ScenarioTurn) -> tuple[tuple[ScenarioEvent, _Made], ...]:
    """The turn's events, each delta and usage beside the frozen event it plays as, made once
    per turn: a batch plays one scenario with a fresh runtime per row."""
    found = _PLANS.get(spec)
    if found is None:
        found = _PLANS.put(spec, tuple((event, _made(event)) for event in spec.events))
    return found


def _made(event: ScenarioEvent) -> _Made:
    """What the event plays as, when that can be made ahead; an event built in code that is not
    valid is left to its play, which reports it at its place in the turn."""
    try:
        if isinstance(event, DeltaEvent):
            return Delta(text=event.text), byte_size(event.text)
        if isinstance(event, ReasoningDeltaEvent):
            if event.signature is not None and not (
                isinstance(event.signature, str) and event.signature
            ):
                return None
            return ReasoningDelta(text=event.text), byte_size(event.text)
        if isinstance(event, UsageEvent):
            return Usage(
                input_tokens=event.input_tokens,
                output_tokens=event.output_tokens,
                reasoning_tokens=event.reasoning_tokens,
                cache_read_tokens=event.cache_read_tokens,
                cache_write_tokens=event.cache_write_tokens,
            )
    except (ValueError, TypeError, AttributeError):
        pass
    return None


def _output(spec: ScenarioTurn, finish: FinishEvent, request: ExecutionRequest) -> dict[str, Any]:
    if finish.has_output:
        return {"output": finish.output}
    if spec.fixture_output_first and request.fixture_output is not None:
        # templiqx: a non-null fixture output outranks the deltas.
        return {"output": request.fixture_output}
    # runport.mock/v1: the fixture stands in only for a turn that said nothing (Turn's rule).
    return {}


class ScenarioPlayer:
    """Which turn comes next, and the counters: what the sync and async runtimes share."""

    def __init__(self, scenario: Scenario, max_response_bytes: int | None) -> None:
        if not isinstance(scenario, Scenario):
            raise TypeError(f"a ScriptedRuntime plays a Scenario, not {type(scenario).__name__}")
        self.scenario = scenario
        self.max_response_bytes = check_byte_count(max_response_bytes)
        self.descriptor = _descriptor(scenario.id)
        self.counters = Counters()
        self._next_turn = 0

    def start(self, request: ExecutionRequest) -> tuple[Turn, Iterator[StreamEvent]]:
        """Count the call, take the next turn, and give its events to deliver in order."""
        turn = Turn(request, self.descriptor, self.max_response_bytes)
        turns = self.scenario.turns
        with self.counters.lock:
            self.counters.attempts += 1
            number = self._next_turn
            # A request the runtime cannot use does not move the scenario on: a real adapter
            # refuses it before calling its upstream.
            if turn.error is None and number < len(turns):
                self._next_turn += 1
        if turn.refused is not None:
            log.debug("scenario %s: request refused (%s)", self.scenario.id, turn.refused.code)
            return turn, iter([turn.refused])
        log.debug("scenario %s: playing turn %d of %d", self.scenario.id, number + 1, len(turns))
        if number >= len(turns):
            exhausted = PortError(
                ErrorCode.DATA_INVALID,
                f"scenario exhausted: {self.scenario.id!r} has {len(turns)} turn(s) and all "
                "have been played",
            )
            return turn, iter([turn.fail(exhausted)])
        return turn, play_scenario_turn(turns[number], turn)

    def play(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        """The next turn played into a plain sink: the sync runtime's whole call, and the
        async one's when nobody listens (``discard`` never suspends, so nothing is awaited)."""
        turn, events = self.start(request)
        try:
            for event in events:
                sink(event)
        finally:
            self.counters.add_time(turn)
        return self.outcome(turn)

    @staticmethod
    def outcome(turn: Turn) -> ExecutionReceipt:
        """The played turn's receipt, or its failure raised (after its ``Failed`` went out)."""
        if turn.error is not None:
            raise turn.error
        return turn.receipt()


class ScenarioDouble:
    """What ``ScriptedRuntime`` and ``AsyncScriptedRuntime`` share: construction, the
    scenario, the descriptor and the stats."""

    def __init__(self, scenario: Scenario, *, max_response_bytes: int | None = None) -> None:
        self._player = ScenarioPlayer(scenario, max_response_bytes)

    @classmethod
    def from_scenario(
        cls, path: str | os.PathLike[str], *, max_response_bytes: int | None = None
    ) -> Self:
        """Load a scenario file (``runport.mock/v1`` or ``templiqx.mock/v1alpha1``) and play it."""
        return cls(load_scenario(path), max_response_bytes=max_response_bytes)

    @property
    def scenario(self) -> Scenario:
        return self._player.scenario

    def descriptor(self) -> AdapterDescriptor:
        return self._player.descriptor

    def stats(self) -> RuntimeStats:
        return self._player.counters.stats()


class ScriptedRuntime(ScenarioDouble, RuntimeAdapter):
    """Plays a ``Scenario``: each ``execute`` / ``execute_streaming`` call takes the next turn.

    Both methods walk the turn through one code path (``execute`` with a sink that drops
    the events), so their receipts are identical by construction (law 2). The scenario is only
    read, never changed, so one scenario can feed many runtimes. Safe to share between threads:
    taking a turn and updating the stats happen under a lock; the turn itself is played on the
    caller's thread with no lock held, so a sink may call ``stats()``.
    """

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._player.play(request, discard)

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        return self._player.play(request, sink)
