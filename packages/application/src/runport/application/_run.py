"""``run`` and ``run_stream``: the blocking driver of the run loop (docs/runs.md).

The loop and its decisions live in ``run_plan``; this module only performs its actions: call
the adapter, hand events to the caller, sleep between attempts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from runport.application._envelope import ContractSource
from runport.application._options import RunOptions
from runport.application._plan import Attempt, Wait, steps_for
from runport.application._relay import relay
from runport.application._state import RunResult
from runport.contracts import ExecutionReceipt, StreamEvent
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
    with steps_for(
        contract_or_path, adapter.descriptor(), inputs, context, options, on_event is not None
    ) as steps:
        sleep = steps.sleep or time.sleep
        for action in steps:
            with steps.performing():
                if isinstance(action, Attempt):
                    steps.reply = _attempt(adapter, action, on_event)
                elif isinstance(action, Wait):
                    sleep(action.seconds)
                elif on_event is not None:
                    on_event(action.event)
    return steps.outcome()


def _attempt(
    adapter: RuntimeAdapter, action: Attempt, on_event: EventHandler | None
) -> ExecutionReceipt:
    if on_event is None or action.watch is None:
        return adapter.execute(action.request)
    return adapter.execute_streaming(action.request, relay(action.watch, on_event))
