"""The event-loop twins of ``execute_contract``, ``run`` and ``run_stream`` (docs/async.md).

Same parameters, same results: the envelope is built by the same ``prepare``/``Call`` and the
run is the same ``run_plan``; only how the adapter, the sink and the waits are awaited differs.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from runport.application._envelope import Call, ContractSource, prepare
from runport.application._options import RunOptions
from runport.application._plan import Attempt, Wait, steps_for
from runport.application._relay import arelay
from runport.application._state import RunResult
from runport.contracts import (
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    OperationEnvelope,
)
from runport.ports import AsyncRuntimeAdapter, AsyncSink, deliver, deliver_terminal

if TYPE_CHECKING:
    from typing_extensions import Unpack


async def aexecute_contract(
    contract_or_path: ContractSource,
    adapter: AsyncRuntimeAdapter,
    *,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    on_event: AsyncSink | None = None,
    fixture_output: JsonValue = None,
) -> OperationEnvelope:
    """``execute_contract`` on an async adapter: the same envelope for the same upstream.

    ``on_event`` may return an awaitable; it is awaited before the adapter reads further.
    Cancelling the calling task is a caller stop: ``CancelledError`` propagates.
    """
    prepared = prepare(contract_or_path, adapter, inputs, context, fixture_output)
    if isinstance(prepared, OperationEnvelope):
        return prepared
    return await aexecute_request(prepared, adapter, on_event)


async def aexecute_request(
    request: ExecutionRequest, adapter: AsyncRuntimeAdapter, on_event: AsyncSink | None = None
) -> OperationEnvelope:
    """``aexecute_contract`` after ``prepare``: for a caller (the batch) that needs the
    request itself before the call, so the contract is compiled once."""
    call = Call(request, streamed=on_event is not None)
    try:
        if on_event is None:
            receipt = await adapter.execute(request)
        else:
            receipt = await adapter.execute_streaming(request, arelay(call, on_event))
    except Exception as error:
        envelope, owed = call.failed(error)
        if owed is not None and on_event is not None:
            await _show(on_event, owed)
        return envelope
    return call.succeeded(receipt)


async def arun(
    contract_or_path: ContractSource,
    adapter: AsyncRuntimeAdapter,
    *,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """``run`` on an async adapter (retries wait with ``asyncio.sleep`` unless ``sleep`` is
    given). Tools are plain functions, called on the loop."""
    return await _adrive(contract_or_path, adapter, inputs, context, options, None)


async def arun_stream(
    contract_or_path: ContractSource,
    adapter: AsyncRuntimeAdapter,
    *,
    on_event: AsyncSink,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """``run_stream`` on an async adapter; ``on_event`` may return an awaitable."""
    return await _adrive(contract_or_path, adapter, inputs, context, options, on_event)


async def _adrive(
    contract_or_path: ContractSource,
    adapter: AsyncRuntimeAdapter,
    inputs: Mapping[str, Any] | None,
    context: Mapping[str, Any] | None,
    options: RunOptions,
    on_event: AsyncSink | None,
) -> RunResult:
    with steps_for(
        contract_or_path, adapter.descriptor(), inputs, context, options, on_event is not None
    ) as steps:
        sleep = steps.sleep or asyncio.sleep
        for action in steps:
            with steps.performing():
                if isinstance(action, Attempt):
                    steps.reply = await _attempt(adapter, action, on_event)
                elif isinstance(action, Wait):
                    waited = sleep(action.seconds)
                    if inspect.isawaitable(waited):
                        await waited
                elif on_event is not None:
                    await _show(on_event, action.event)
    return steps.outcome()


async def _attempt(
    adapter: AsyncRuntimeAdapter, action: Attempt, on_event: AsyncSink | None
) -> ExecutionReceipt:
    if on_event is None or action.watch is None:
        return await adapter.execute(action.request)
    return await adapter.execute_streaming(action.request, arelay(action.watch, on_event))


async def _show(on_event: AsyncSink, failed: Failed) -> None:
    """The caller's terminal ``Failed``, sent after the adapter's call ended. After a timeout
    the call's time is spent — and the sink may be what spent it, held by an await that never
    returns — so it is awaited for ``TERMINAL_GRACE_S`` at most; any other ending is awaited
    as the sink takes."""
    if failed.code == ErrorCode.RUNTIME_TIMEOUT:
        await deliver_terminal(on_event, failed, 0.0)
    else:
        await deliver(on_event, failed)
