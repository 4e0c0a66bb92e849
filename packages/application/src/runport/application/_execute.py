"""``execute_contract`` and its event-loop twin ``aexecute_contract``: one turn, reported as an
envelope (docs/runs.md, docs/async.md).

Both build the request with the same ``prepare`` and the envelope with the same ``Call``; only
how the adapter and the sink are called differs, so for the same upstream
``await aexecute_contract(...) == execute_contract(...)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from runport.application._contract import ContractSource
from runport.application._envelope import Call, prepare, with_history
from runport.application._relay import arelay, arelay_kept, relay
from runport.contracts import (
    Diagnostic,
    ErrorCode,
    ExecutionRequest,
    Failed,
    Message,
    OperationEnvelope,
)
from runport.ports import (
    AsyncRuntimeAdapter,
    AsyncSink,
    RuntimeAdapter,
    Sink,
    deliver,
    deliver_terminal,
)


def execute_contract(
    contract_or_path: ContractSource,
    adapter: RuntimeAdapter,
    *,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    on_event: Sink | None = None,
    fixture_output: JsonValue = None,
    history: Sequence[Message] | None = None,
    partial_output: bool = False,
) -> OperationEnvelope:
    """Compile a contract, run one turn on ``adapter`` and report it as an envelope (docs/runs.md).

    Every failure it can name — contract, input, capability, runtime, output schema, an
    adapter that breaks the port's rules — comes back as a not-ok envelope with a coded
    diagnostic, never raised; inputs and capabilities are checked before the adapter is
    called. With ``on_event`` the turn is streamed, every event the adapter sent is kept in
    ``stream_events``, and the stream always ends in exactly one terminal event; an exception
    raised by ``on_event`` itself propagates unchanged. With ``partial_output`` and a
    structured answer, ``on_event`` also receives an ``OutputSnapshot`` after each ``Delta``
    that changed the answer parsed so far (type it for ``RunEvent``); the envelope is the same
    with or without them. ``history`` is an earlier conversation, placed and repaired as a
    run's is (each repair a ``TQX_HISTORY_REPAIRED`` warning).
    """
    prepared = prepare(contract_or_path, adapter, inputs, context, fixture_output)
    if isinstance(prepared, OperationEnvelope):
        return prepared
    prepared, notes = with_history(prepared, history)
    call = Call(prepared, on_event is not None, partial_output, notes)
    try:
        if on_event is None:
            receipt = adapter.execute(prepared)
        else:
            receipt = adapter.execute_streaming(prepared, relay(call, on_event))
    except Exception as error:
        envelope, owed = call.failed(error)
        if owed is not None and on_event is not None:
            on_event(owed)
        return envelope
    return call.succeeded(receipt)


async def aexecute_contract(
    contract_or_path: ContractSource,
    adapter: AsyncRuntimeAdapter,
    *,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    on_event: AsyncSink | None = None,
    fixture_output: JsonValue = None,
    history: Sequence[Message] | None = None,
    partial_output: bool = False,
) -> OperationEnvelope:
    """``execute_contract`` on an async adapter: the same envelope for the same upstream.

    ``on_event`` may return an awaitable; it is awaited before the adapter reads further.
    Cancelling the calling task is a caller stop: ``CancelledError`` propagates.
    """
    prepared = prepare(contract_or_path, adapter, inputs, context, fixture_output)
    if isinstance(prepared, OperationEnvelope):
        return prepared
    prepared, notes = with_history(prepared, history)
    return await aexecute_request(prepared, adapter, on_event, partial_output, notes)


async def aexecute_request(
    request: ExecutionRequest,
    adapter: AsyncRuntimeAdapter,
    on_event: AsyncSink | None = None,
    partial_output: bool = False,
    notes: Sequence[Diagnostic] = (),
) -> OperationEnvelope:
    """``aexecute_contract`` after ``prepare``: for a caller (the batch) that needs the
    request itself before the call, so the contract is compiled once."""
    call = Call(request, on_event is not None, partial_output, notes)
    try:
        if on_event is None:
            receipt = await adapter.execute(request)
        else:
            kept = call.events
            if kept is not None and call.partial is None:
                sink = arelay_kept(call, kept, on_event)
            else:
                sink = arelay(call, on_event)
            receipt = await adapter.execute_streaming(request, sink)
    except Exception as error:
        envelope, owed = call.failed(error)
        if owed is not None and on_event is not None:
            await show_terminal(on_event, owed)
        return envelope
    return call.succeeded(receipt)


async def show_terminal(on_event: AsyncSink, failed: Failed) -> None:
    """The caller's terminal ``Failed``, sent after the adapter's call ended. After a timeout
    the call's time is spent — and the sink may be what spent it, held by an await that never
    returns — so it is awaited for ``TERMINAL_GRACE_S`` at most; any other ending is awaited
    as the sink takes."""
    if failed.code == ErrorCode.RUNTIME_TIMEOUT:
        await deliver_terminal(on_event, failed, 0.0)
    else:
        await deliver(on_event, failed)
