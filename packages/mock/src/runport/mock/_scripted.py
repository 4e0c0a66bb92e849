"""``ScriptedRuntime``: a runtime adapter that plays a ``Scenario`` (docs/scenarios.md).

It exists so tests, examples and the CLI's default adapter get real streaming behaviour —
deltas, interleaved tool-call fragments, failures after progress, oversize responses — with no
network and no wall clock, byte-identical on every run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, NoReturn

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
    ToolCallDelta,
    Usage,
)
from runport.core import (
    DelayEvent,
    DeltaEvent,
    FailEvent,
    FinishEvent,
    JsonLimitError,
    Scenario,
    ScenarioTurn,
    StreamAssembler,
    ToolCallDeltaEvent,
    UsageEvent,
    build_receipt,
    load_scenario,
)
from runport.ports import PortError, RuntimeAdapter, Sink

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "RuntimeStats", "ScriptedRuntime", "create_adapter"]

DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""docs/streaming-law.md law 8: the bound when neither the runtime nor the request sets one."""


def _package_version() -> str:
    try:
        return metadata.version("runport-mock")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0.1.0"


_DESCRIPTOR = AdapterDescriptor(
    id="runport-mock",
    version=_package_version(),
    capabilities=["streaming", "structured_output", "text", "tool_calls"],
)


@dataclass(frozen=True)
class RuntimeStats:
    """What a runtime has done so far.

    ``attempts`` counts every call — failed and exhausted ones included — so a test can prove
    a retry policy made exactly the calls it should. ``elapsed_ms`` is virtual time: the sum of
    the ``delay`` events played, since a scripted runtime never sleeps.
    """

    attempts: int = 0
    elapsed_ms: int = 0


Emit = Callable[[StreamEvent], None]


def _discard(event: StreamEvent) -> None:
    """The emitter of ``execute``: the same walk as streaming, with nobody listening."""


def _fail(emit: Emit, code: str, message: str, *, retry_after_ms: int | None = None) -> NoReturn:
    """Law 5: the ``Failed`` event and the raised ``PortError`` carry the same code."""
    emit(Failed(code=code, message=message))
    raise PortError(code, message, retry_after_ms=retry_after_ms)


class ScriptedRuntime(RuntimeAdapter):
    """Plays a ``Scenario``: each ``execute`` / ``execute_streaming`` call takes the next turn.

    Both methods walk the turn through one code path (``execute`` with an emitter that drops
    the events), so their receipts are identical by construction (law 2). The scenario is only
    read, never changed, so one scenario can feed many runtimes. Safe to share between threads:
    taking a turn and updating the stats happen under a lock; the turn itself is played on the
    caller's thread with no lock held, so a sink may call ``stats()``.
    """

    def __init__(self, scenario: Scenario, *, max_response_bytes: int | None = None) -> None:
        if not isinstance(scenario, Scenario):
            raise TypeError(f"a ScriptedRuntime plays a Scenario, not {type(scenario).__name__}")
        if max_response_bytes is not None and not _is_byte_count(max_response_bytes):
            raise ValueError(
                f"max_response_bytes must be a non-negative integer, not {max_response_bytes!r}"
            )
        self._scenario = scenario
        self._max_response_bytes = max_response_bytes
        self._lock = threading.Lock()
        self._next_turn = 0
        self._attempts = 0
        self._elapsed_ms = 0

    @classmethod
    def from_scenario(
        cls, path: str | os.PathLike[str], *, max_response_bytes: int | None = None
    ) -> ScriptedRuntime:
        """Load a scenario file (``runport.mock/v1`` or ``templiqx.mock/v1alpha1``) and play it."""
        return cls(load_scenario(path), max_response_bytes=max_response_bytes)

    @property
    def scenario(self) -> Scenario:
        return self._scenario

    def descriptor(self) -> AdapterDescriptor:
        return _DESCRIPTOR

    def stats(self) -> RuntimeStats:
        with self._lock:
            return RuntimeStats(attempts=self._attempts, elapsed_ms=self._elapsed_ms)

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._play(request, _discard)

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        return self._play(request, sink)

    def _play(self, request: ExecutionRequest, emit: Emit) -> ExecutionReceipt:
        limit = self._limit(request)
        with self._lock:
            self._attempts += 1
            number = self._next_turn
            turns = self._scenario.turns
            # A request the runtime cannot use does not move the scenario on: a real adapter
            # refuses it before calling its upstream.
            if isinstance(limit, int) and number < len(turns):
                self._next_turn += 1
        if isinstance(limit, str):
            _fail(emit, ErrorCode.DATA_INVALID, limit)
        if number >= len(turns):
            _fail(
                emit,
                ErrorCode.DATA_INVALID,
                f"scenario exhausted: {self._scenario.id!r} has {len(turns)} turn(s) and all "
                "have been played",
            )
        return self._walk(turns[number], request, emit, limit)

    def _limit(self, request: ExecutionRequest) -> int | str:
        """The byte bound for this call (law 8), or why the request's own bound is unusable."""
        policy = request.interaction.runtime_policy.get(
            "max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES
        )
        if not _is_byte_count(policy):
            return (
                f"runtime_policy.max_response_bytes must be a non-negative integer, not {policy!r}"
            )
        assert isinstance(policy, int)
        if self._max_response_bytes is None:
            return policy
        return min(policy, self._max_response_bytes)

    def _walk(
        self, turn: ScenarioTurn, request: ExecutionRequest, emit: Emit, limit: int
    ) -> ExecutionReceipt:
        elapsed = 0
        played = 0
        assembled = StreamAssembler()
        usage: Usage | None = None

        def bounded(piece: str) -> None:
            nonlocal played
            size = len(piece.encode("utf-8"))
            if played + size > limit:
                _fail(
                    emit,
                    ErrorCode.RUNTIME_RESPONSE_TOO_LARGE,
                    f"the response passed max_response_bytes ({limit} bytes)",
                )
            played += size

        try:
            for event in turn.events:
                if isinstance(event, DeltaEvent):
                    bounded(event.text)
                    delta = Delta(text=event.text)
                    emit(delta)
                    assembled.feed(delta)
                elif isinstance(event, ToolCallDeltaEvent):
                    bounded(event.arguments_fragment)
                    fragment = ToolCallDelta(
                        index=event.index,
                        call_id=event.call_id,
                        name=event.name,
                        arguments_fragment=event.arguments_fragment,
                    )
                    emit(fragment)
                    assembled.feed(fragment)
                elif isinstance(event, DelayEvent):
                    elapsed += event.ms
                elif isinstance(event, UsageEvent):
                    played_usage = Usage(
                        input_tokens=event.input_tokens, output_tokens=event.output_tokens
                    )
                    usage = played_usage if usage is None else usage + played_usage
                elif isinstance(event, FinishEvent):
                    try:
                        receipt = self._receipt(turn, event, request, assembled, usage)
                    except JsonLimitError as error:
                        _fail(emit, error.code, error.message)
                    emit(Complete(receipt=receipt))
                    return receipt
                else:
                    assert isinstance(event, FailEvent)
                    _fail(emit, event.code, event.message, retry_after_ms=event.retry_after_ms)
        finally:
            if elapsed:
                with self._lock:
                    self._elapsed_ms += elapsed
        raise AssertionError("a validated turn always ends in a terminal event")

    def _receipt(
        self,
        turn: ScenarioTurn,
        finish: FinishEvent,
        request: ExecutionRequest,
        assembled: StreamAssembler,
        usage: Usage | None,
    ) -> ExecutionReceipt:
        text = assembled.text
        tool_calls = assembled.tool_calls
        explicit: dict[str, Any] = {}
        if finish.has_output:
            explicit["output"] = finish.output
        elif turn.fixture_output_first:
            # templiqx: a non-null fixture output outranks the deltas.
            if request.fixture_output is not None:
                explicit["output"] = request.fixture_output
        elif text is None and not tool_calls:
            # runport.mock/v1: the fixture stands in only for a turn that said nothing; a turn
            # of tool calls alone keeps `output: null` (docs/wire-types.md).
            explicit["output"] = request.fixture_output
        return build_receipt(
            request,
            adapter=_DESCRIPTOR,
            text=text,
            tool_calls=tool_calls,
            finish_reason=finish.finish_reason,
            usage=usage,
            **explicit,
        )


def _is_byte_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def create_adapter(*, scenario: str | os.PathLike[str] | None = None) -> ScriptedRuntime:
    """The ``runport.adapters`` entry point: ``--adapter mock --scenario FILE``.

    A scripted runtime has nothing to play without a scenario, so there is no silent default.
    """
    if scenario is None:
        raise ValueError("the mock adapter needs a scenario file (--scenario FILE)")
    return ScriptedRuntime.from_scenario(scenario)
