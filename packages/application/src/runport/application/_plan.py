"""The run loop, written once: ``run_plan`` yields steps, its drivers perform them.

The plan is a generator speaking in values: it yields a step (``Attempt``, ``Wait``, ``Show``)
and is sent back what came of it — the receipt, ``None``, or ``Raised`` with what performing
it raised — until its last step, ``Finished``, carries the result. ``run``/``run_stream`` and
``arun``/``arun_stream`` (``_run``) differ only in how they perform a step (call or await the
adapter, the sink, the wait), so they make every decision the same way; the decisions
themselves are ``RunState``'s (``_state``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from runport.application._approvals import opened, refuse_stray_approvals, resume
from runport.application._contract import ContractSource, Unsupported, checked_interaction
from runport.application._errors import RunError, RunPartial, Stage
from runport.application._history import repair_history
from runport.application._options import RunOptions, Sleep, ToolLike, settings
from runport.application._partial import snapshots_for
from runport.application._relay import TurnWatch
from runport.application._state import (
    Await,
    Awaited,
    Between,
    Retry,
    RunResult,
    RunState,
    log,
)
from runport.application._tools import Tool, as_tool
from runport.contracts import (
    AdapterDescriptor,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
)
from runport.core import ContractError
from runport.ports import error_type

__all__ = [
    "Attempt",
    "Awaited",
    "Finished",
    "Invoke",
    "Outcome",
    "Plan",
    "Raised",
    "RunCall",
    "Show",
    "Step",
    "Wait",
    "planned",
]

_INPUT_CODES = frozenset(
    {ErrorCode.VALUE_REQUIRED, ErrorCode.VALUE_SCHEMA, ErrorCode.VALUE_UNKNOWN}
)


@dataclass(frozen=True, slots=True)
class RunCall:
    """One run as its caller asked for it: the public functions' arguments, the adapter and
    the event handler aside (the drivers hold those)."""

    contract_or_path: ContractSource
    inputs: Mapping[str, Any] | None
    context: Mapping[str, Any] | None
    options: RunOptions
    partial_output: bool = False


@dataclass(frozen=True)
class Attempt:
    """Step: call the adapter with ``request`` — streamed through ``watch`` when one is given —
    and send back the receipt (or ``Raised``)."""

    request: ExecutionRequest
    watch: TurnWatch | None


@dataclass(frozen=True)
class Wait:
    """Step: wait ``seconds`` before the next attempt, with ``sleep`` (``None``: the driver's
    own wait); send back ``None`` (or ``Raised``)."""

    seconds: float
    sleep: Sleep | None


@dataclass(frozen=True)
class Show:
    """Step: hand ``event`` to the caller's event handler — a turn's held-back ``Failed``, or
    what the run adds between turns; send back ``None`` (or ``Raised``)."""

    event: Failed | Between


@dataclass(frozen=True)
class Invoke:
    """Step: await ``awaitable`` (an async tool's, see ``RunState.call_tool``) and send back
    ``Awaited`` with its value (or ``Raised``)."""

    awaitable: Awaitable[Any]


@dataclass(frozen=True)
class Finished:
    """The plan's last step: the run's ``result``. Nothing is sent back."""

    result: RunResult


@dataclass(frozen=True)
class Raised:
    """What performing a step raised (an ``Exception``; a cancellation is never sent back)."""

    error: Exception


Step = Attempt | Wait | Show | Invoke | Finished
Outcome = ExecutionReceipt | Awaited | Raised | None
Plan = Generator[Step, Outcome, None]


def run_plan(state: RunState, streamed: bool, partial_output: bool = False) -> Plan:
    """The run loop, once: it yields what to do and is sent what came of it.

    The sync and async drivers only perform the steps, so both make every decision the
    same way — which turn comes next, whether a failure is retried, what the caller sees.
    Streamed, the caller is also shown what happens between turns (``ToolResult``,
    ``AnswerRejected``, ``ToolApprovalRequest``) and, with ``partial_output``, each attempt's
    answer as it parses. A resumed run first answers its decided calls; a round that paused
    for a person ends the run with the paused result.
    """
    schema = state.interaction.output_schema
    between = state.resumed
    while True:
        try:
            send = getattr(between, "send", None)
            back: Any = None
            while True:
                try:
                    event = next(between) if send is None else send(back)
                except StopIteration:
                    break
                back = None
                if isinstance(event, Await):
                    back = yield Invoke(event.awaitable)
                    continue
                if streamed:
                    shown = yield Show(event)
                    if isinstance(shown, Raised):
                        raise state.stopped(shown.error, None) from shown.error
        finally:  # a stop between events closes a generator tool at once, not when collected
            close = getattr(between, "close", None)
            if close is not None:
                close()
        if state.paused is not None:
            state.scope.succeeded(state.paused.usage, len(state.paused.receipts))
            yield Finished(state.paused)
            return
        request = state.next_request()
        attempt = 0
        while True:
            attempt += 1
            watch = TurnWatch(snapshots_for(schema, partial_output)) if streamed else None
            outcome = yield Attempt(request, watch)
            if isinstance(outcome, ExecutionReceipt):
                break
            assert isinstance(outcome, Raised)
            decision = state.turn_failed(outcome.error, attempt, watch)
            if isinstance(decision, Retry):
                log.warning(
                    "attempt %d of a turn of %s failed with %s; retrying in %.3f s",
                    attempt,
                    request.interaction.contract_id,
                    decision.code,
                    decision.seconds,
                )
                state.scope.retry(attempt, decision.code, decision.seconds)
                waited = yield Wait(decision.seconds, state.options.sleep)
                if isinstance(waited, Raised):
                    raise waited.error
                continue
            if decision.event is not None:
                shown = yield Show(decision.event)
                if isinstance(shown, Raised):
                    stop = shown.error
                    raise state.stopped(stop, decision.error.partial.text) from stop
            raise decision.error from outcome.error
        after = state.after_turn(outcome)
        if isinstance(after, RunResult):
            state.scope.succeeded(after.usage, len(after.receipts))
            yield Finished(after)
            return
        between = after


def start_run(call: RunCall, descriptor: AdapterDescriptor) -> RunState:
    """Compile the contract and check the adapter before any call (``checked_interaction``;
    ``RunError`` otherwise)."""
    options = settings(call.options)
    paused = None
    try:
        if options.continuation is None:
            refuse_stray_approvals(options)
            interaction = checked_interaction(
                call.contract_or_path, call.inputs, call.context, lambda: descriptor
            )
        else:
            paused = opened(call.contract_or_path, descriptor, call.inputs, call.context, options)
            interaction = paused.interaction
    except ContractError as error:
        first = error.diagnostics[0]
        stage: Stage = "input" if first.code in _INPUT_CODES else "compile"
        raise RunError(
            stage,
            first.code,
            RunPartial(),
            str(error),
            diagnostics=tuple(error.diagnostics),
        ) from error
    except Unsupported as unsupported:
        diagnostic = unsupported.diagnostic
        raise RunError(
            "compile", diagnostic.code, RunPartial(), diagnostic.message, diagnostics=(diagnostic,)
        ) from None
    implementations = _implementations(options.tools)
    offered = {spec.name: spec for spec in interaction.tools or []}
    for tool in implementations.values():
        offered.setdefault(tool.name, tool.spec())
    repaired, warnings = repair_history(options.history or ())
    state = RunState(interaction, implementations, offered, repaired, warnings, options)
    if paused is not None:
        resume(state, paused)
    return state


def _implementations(tools: Sequence[ToolLike]) -> dict[str, Tool]:
    """The run's tools by name; two under one name are refused before anything runs
    (``TQX_TOOL_NAME_CLASH``): which one a call means could not be told."""
    implementations: dict[str, Tool] = {}
    for tool in map(as_tool, tools):
        if tool.name in implementations:
            raise RunError(
                "input",
                ErrorCode.TOOL_NAME_CLASH,
                RunPartial(),
                f"two tools given to the run are named {tool.name!r}: rename one (an MCP "
                "server's tools take a prefix=, see mcp_tools)",
            )
        implementations[tool.name] = tool
    return implementations


@contextmanager
def planned(call: RunCall, descriptor: AdapterDescriptor, streamed: bool) -> Iterator[Plan]:
    """The checked run's plan, for a driver to walk inside the block: settings resolved,
    contract compiled, adapter checked. The run's observer is told that the run started and —
    however the block ends, cancellation included — how it ended, so both drivers report a run
    the same way (the plan itself reports a success, as it finishes)."""
    state = start_run(call, descriptor)
    interaction = state.interaction
    scope = state.scope = state.options.observer.run_started(
        interaction.contract_id, interaction.contract_version, descriptor, streamed=streamed
    )
    plan = run_plan(state, streamed, call.partial_output)
    try:
        yield plan
    except RunError as error:
        scope.failed(error.code)
        raise
    except (asyncio.CancelledError, KeyboardInterrupt):
        scope.failed(ErrorCode.CALLER_STOPPED)
        raise
    except BaseException as error:
        scope.failed(error_type(error))
        raise
    finally:
        plan.close()
