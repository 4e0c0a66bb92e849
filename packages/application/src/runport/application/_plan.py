"""The run loop, written once: ``run_plan`` yields actions, its drivers perform them.

``run``/``run_stream`` and ``arun``/``arun_stream`` differ only in how they perform an action
(call or await the adapter, the sink, the wait), so they make every decision the same way.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from runport.application._relay import TurnWatch
from runport.application._state import Retry, RunResult, RunState
from runport.contracts import ExecutionReceipt, ExecutionRequest, Failed

__all__ = ["Action", "Attempt", "Show", "Steps", "Wait", "run_plan"]


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
    the run is over, with ``result`` set); the driver sets ``reply`` or ``failure`` from it."""

    def __init__(self, state: RunState, streamed: bool) -> None:
        self._plan = run_plan(state, streamed)
        self.reply: ExecutionReceipt | None = None
        self.failure: Exception | None = None
        self.result: RunResult | None = None

    def next(self) -> Action | None:
        reply, failure = self.reply, self.failure
        self.reply, self.failure = None, None
        try:
            return self._plan.send(reply) if failure is None else self._plan.throw(failure)
        except StopIteration as finished:
            self.result = finished.value
            return None
