"""``run``/``run_stream`` and their event-loop twins ``arun``/``arun_stream`` (docs/runs.md,
docs/async.md).

The loop and its decisions live in the plan (``_plan``); each driver here only performs its
steps — call or await the adapter, hand events to the caller, wait between attempts — and
sends back what came of each, so for the same upstream ``await arun(...) == run(...)``.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any

from runport.application._contract import ContractSource
from runport.application._execute import show_terminal
from runport.application._options import RunOptions
from runport.application._plan import (
    Attempt,
    Awaited,
    Finished,
    Invoke,
    Outcome,
    Raised,
    RunCall,
    Step,
    Wait,
    planned,
)
from runport.application._relay import AsyncRunSink, RunSink, arelay, relay
from runport.application._state import RunResult
from runport.contracts import Failed
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter, deliver

if TYPE_CHECKING:
    from typing_extensions import Unpack


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
    return _drive(RunCall(contract_or_path, inputs, context, options), adapter, None)


def run_stream(
    contract_or_path: ContractSource,
    adapter: RuntimeAdapter,
    *,
    on_event: RunSink,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    partial_output: bool = False,
    **options: Unpack[RunOptions],
) -> RunResult:
    """``run``, with every event of every turn handed to ``on_event`` as it arrives, and what
    happens between turns: a ``ToolResult`` per call after a turn whose calls ran (in the
    calls' order, before the next turn), an ``AnswerRejected`` after the ``Complete`` of an
    answer the contract rejects. With ``partial_output`` and a structured answer, an
    ``OutputSnapshot`` follows each ``Delta`` that changed the answer parsed so far.

    A turn that fails before any event reached the caller is retried like an unstreamed one;
    once something was shown, the failure stands (nothing the caller saw is replayed), and a
    retried attempt's ``Failed`` is never shown. An exception raised by ``on_event`` ends the
    run as ``RunError(stage="model", code="TQX_CALLER_STOPPED")``.
    """
    call = RunCall(contract_or_path, inputs, context, options, partial_output)
    return _drive(call, adapter, on_event)


async def arun(
    contract_or_path: ContractSource,
    adapter: AsyncRuntimeAdapter,
    *,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """``run`` on an async adapter (retries wait with ``asyncio.sleep`` unless ``sleep`` is
    given). A plain function or generator tool is called on the loop; an async one (or an
    async generator) is awaited there."""
    return await _adrive(RunCall(contract_or_path, inputs, context, options), adapter, None)


async def arun_stream(
    contract_or_path: ContractSource,
    adapter: AsyncRuntimeAdapter,
    *,
    on_event: AsyncRunSink,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    partial_output: bool = False,
    **options: Unpack[RunOptions],
) -> RunResult:
    """``run_stream`` on an async adapter; ``on_event`` may return an awaitable."""
    call = RunCall(contract_or_path, inputs, context, options, partial_output)
    return await _adrive(call, adapter, on_event)


def _drive(call: RunCall, adapter: RuntimeAdapter, on_event: RunSink | None) -> RunResult:
    loop = _ToolLoop()
    try:
        with planned(call, adapter.descriptor(), streamed=on_event is not None) as plan:
            step = next(plan)
            while not isinstance(step, Finished):
                step = plan.send(_perform(adapter, step, on_event, loop))
    finally:
        loop.close()
    return step.result


class _ToolLoop:
    """The sync run's event loop for its async tools, made at the first one and closed with
    the run; an async tool cannot run where this thread's own loop is running (use ``arun``)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, awaitable: Awaitable[Any]) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            raise RuntimeError(
                "an async tool cannot run in run() on a thread whose event loop is running: "
                "use arun()"
            )
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(awaitable)

    def close(self) -> None:
        loop = self._loop
        if loop is not None:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()


def _perform(
    adapter: RuntimeAdapter, step: Step, on_event: RunSink | None, loop: _ToolLoop
) -> Outcome:
    try:
        if isinstance(step, Invoke):
            return Awaited(loop.run(step.awaitable))
        if isinstance(step, Attempt):
            if on_event is None or step.watch is None:
                return adapter.execute(step.request)
            return adapter.execute_streaming(step.request, relay(step.watch, on_event))
        if isinstance(step, Wait):
            (step.sleep or time.sleep)(step.seconds)
        elif on_event is not None and not isinstance(step, Finished):
            on_event(step.event)
    except Exception as error:
        return Raised(error)
    return None


async def _adrive(
    call: RunCall, adapter: AsyncRuntimeAdapter, on_event: AsyncRunSink | None
) -> RunResult:
    with planned(call, adapter.descriptor(), streamed=on_event is not None) as plan:
        step = next(plan)
        while not isinstance(step, Finished):
            step = plan.send(await _aperform(adapter, step, on_event))
    return step.result


async def _aperform(
    adapter: AsyncRuntimeAdapter, step: Step, on_event: AsyncRunSink | None
) -> Outcome:
    try:
        if isinstance(step, Invoke):
            return Awaited(await step.awaitable)
        if isinstance(step, Attempt):
            if on_event is None or step.watch is None:
                return await adapter.execute(step.request)
            return await adapter.execute_streaming(step.request, arelay(step.watch, on_event))
        if isinstance(step, Wait):
            waited = (step.sleep or asyncio.sleep)(step.seconds)
            if inspect.isawaitable(waited):
                await waited
        elif on_event is not None and not isinstance(step, Finished):
            if isinstance(step.event, Failed):
                await show_terminal(on_event, step.event)
            else:
                await deliver(on_event, step.event)
    except Exception as error:
        return Raised(error)
    return None
