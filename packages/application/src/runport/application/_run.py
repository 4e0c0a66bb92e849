"""``run`` and ``run_stream``: the blocking driver of the run loop (docs/runs.md).

The decisions live in ``RunState``; this module only calls the adapter, hands events to the
caller and sleeps between attempts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from runport.application._envelope import ContractSource
from runport.application._options import RunOptions, settings
from runport.application._state import (
    GiveUp,
    RunResult,
    RunState,
    TurnWatch,
    start_run,
)
from runport.contracts import ExecutionReceipt, ExecutionRequest, StreamEvent
from runport.ports import RuntimeAdapter

if TYPE_CHECKING:
    from typing_extensions import Unpack

EventHandler = Callable[[StreamEvent], None]


def run(
    contract_or_path: ContractSource,
    adapter: RuntimeAdapter,
    *,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """Drive model turns until a schema-valid answer: tools run, corrections asked, retryable
    failures retried (docs/runs.md; ``RunOptions`` lists the keywords). Raises
    :class:`RunError` with the partial evidence otherwise."""
    return _drive(contract_or_path, adapter, inputs, context, options, None)


def run_stream(
    contract_or_path: ContractSource,
    adapter: RuntimeAdapter,
    *,
    on_event: EventHandler,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """``run``, with every event of every turn handed to ``on_event`` as it arrives.

    A turn that fails before any event reached the caller is retried like an unstreamed one;
    once something was shown, the failure stands (nothing the caller saw is replayed), and a
    retried attempt's ``Failed`` is never shown. An exception raised by ``on_event`` ends the
    run as ``RunError(stage="model", code="TQX_CALLER_STOPPED")``.
    """
    return _drive(contract_or_path, adapter, inputs, context, options, on_event)


def _drive(
    contract_or_path: ContractSource,
    adapter: RuntimeAdapter,
    inputs: Mapping[str, Any] | None,
    context: Mapping[str, Any] | None,
    options: RunOptions,
    on_event: EventHandler | None,
) -> RunResult:
    chosen = settings(options)
    state = start_run(contract_or_path, adapter.descriptor(), inputs, context, chosen)
    sleep = chosen.sleep or time.sleep
    while True:
        request = state.next_request()
        attempt = 0
        while True:
            attempt += 1
            watch = None if on_event is None else TurnWatch()
            try:
                receipt = _attempt(adapter, request, on_event, watch)
                break
            except Exception as error:
                decision = state.turn_failed(error, attempt, watch)
                if isinstance(decision, GiveUp):
                    if decision.event is not None and on_event is not None:
                        _show_final(on_event, decision, state)
                    raise decision.error from error
                sleep(decision.seconds)
        result = state.after_turn(receipt)
        if result is not None:
            return result


def _attempt(
    adapter: RuntimeAdapter,
    request: ExecutionRequest,
    on_event: EventHandler | None,
    watch: TurnWatch | None,
) -> ExecutionReceipt:
    if on_event is None or watch is None:
        return adapter.execute(request)

    def sink(event: StreamEvent) -> None:
        if watch.passes(event):
            try:
                on_event(event)
            except Exception as error:
                watch.stopped = error
                raise

    return adapter.execute_streaming(request, sink)


def _show_final(on_event: EventHandler, decision: GiveUp, state: RunState) -> None:
    assert decision.event is not None
    try:
        on_event(decision.event)
    except Exception as stop:
        raise state.stopped(stop, decision.error.partial.text) from stop
