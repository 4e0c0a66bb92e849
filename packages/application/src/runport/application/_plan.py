"""The run loop, written once: ``run_plan`` yields actions, its drivers perform them.

``run``/``run_stream`` and ``arun``/``arun_stream`` differ only in how they perform an action
(call or await the adapter, the sink, the wait), so they make every decision the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from runport.application._envelope import ContractSource
from runport.application._errors import RunError
from runport.application._options import RunOptions, Sleep, settings
from runport.application._relay import TurnWatch
from runport.application._state import Retry, RunResult, RunState, log, start_run
from runport.contracts import (
    AdapterDescriptor,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
)
from runport.ports import error_type

__all__ = ["Action", "Attempt", "Show", "Steps", "Wait", "run_plan", "steps_for"]


@dataclass(frozen=True)
class Attempt:
    """Action: call the adapter with ``request`` (streamed when ``watch`` is given) and send
    the receipt back, or throw back what it raised."""

    request: ExecutionRequest
    watch: TurnWatch | None


@dataclass(frozen=True)
class Wait:
    """Action: wait ``seconds`` before the next attempt."""

    seconds: float


@dataclass(frozen=True)
class Show:
    """Action: hand ``event`` to the caller's event handler (throw back what it raised)."""

    event: Failed


Action = Attempt | Wait | Show


def run_plan(
    state: RunState, streamed: bool
) -> Generator[Action, ExecutionReceipt | None, RunResult]:
    """The run loop, once: it yields what to do and is sent (or thrown) what came of it.

    The sync and async drivers only perform the actions, so both make every decision the
    same way — which turn comes next, whether a failure is retried, what the caller sees.
    """
    while True:
        request = state.next_request()
        attempt = 0
        while True:
            attempt += 1
            watch = TurnWatch() if streamed else None
            try:
                receipt = yield Attempt(request, watch)
            except Exception as error:
                decision = state.turn_failed(error, attempt, watch)
                if isinstance(decision, Retry):
                    log.warning(
                        "attempt %d of a turn of %s failed with %s; retrying in %.3f s",
                        attempt,
                        request.interaction.contract_id,
                        decision.code,
                        decision.seconds,
                    )
                    state.scope.retry(attempt, decision.code, decision.seconds)
                    yield Wait(decision.seconds)
                    continue
                if decision.event is not None:
                    try:
                        yield Show(decision.event)
                    except Exception as stop:
                        raise state.stopped(stop, decision.error.partial.text) from stop
                raise decision.error from error
            assert receipt is not None
            break
        result = state.after_turn(receipt)
        if result is not None:
            return result


class Steps:
    """Walks ``run_plan`` for a driver: ``next()`` gives the action to perform (``None`` once
    the run is over, with ``result`` set); the driver sets ``reply`` or ``failure`` from it.

    Entered around the walk, it tells the run's observer that the run started and how it
    ended, so both drivers report a run the same way, cancellation included.
    """

    def __init__(self, state: RunState, streamed: bool, descriptor: AdapterDescriptor) -> None:
        self._plan = run_plan(state, streamed)
        self._state = state
        self._streamed = streamed
        self._descriptor = descriptor
        self.reply: ExecutionReceipt | None = None
        self.failure: Exception | None = None
        self.result: RunResult | None = None

    def __enter__(self) -> Steps:
        state = self._state
        interaction = state.interaction
        state.scope = state.options.observer.run_started(
            interaction.contract_id,
            interaction.contract_version,
            self._descriptor,
            streamed=self._streamed,
        )
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        scope = self._state.scope
        if error is None:
            assert self.result is not None
            scope.succeeded(self.result.usage, len(self.result.receipts))
        elif isinstance(error, RunError):
            scope.failed(error.code)
        elif isinstance(error, asyncio.CancelledError | KeyboardInterrupt):
            scope.failed(ErrorCode.CALLER_STOPPED)
        else:
            scope.failed(error_type(error))

    @property
    def sleep(self) -> Sleep | None:
        """The caller's ``sleep`` option (``None``: the driver's own wait)."""
        return self._state.options.sleep

    def __iter__(self) -> Iterator[Action]:
        while (action := self.next()) is not None:
            yield action

    @contextmanager
    def performing(self) -> Iterator[None]:
        """Around performing one action: what it raises (an ``Exception``, never a
        cancellation) is thrown back into the plan."""
        try:
            yield
        except Exception as error:
            self.failure = error

    def outcome(self) -> RunResult:
        assert self.result is not None
        return self.result

    def next(self) -> Action | None:
        reply, failure = self.reply, self.failure
        self.reply, self.failure = None, None
        try:
            return self._plan.send(reply) if failure is None else self._plan.throw(failure)
        except StopIteration as finished:
            self.result = finished.value
            return None


def steps_for(
    contract_or_path: ContractSource,
    descriptor: AdapterDescriptor,
    inputs: Mapping[str, Any] | None,
    context: Mapping[str, Any] | None,
    options: RunOptions,
    streamed: bool,
) -> Steps:
    """The checked run both drivers walk: settings resolved, contract compiled, adapter checked."""
    state = start_run(contract_or_path, descriptor, inputs, context, settings(options))
    return Steps(state, streamed, descriptor)
