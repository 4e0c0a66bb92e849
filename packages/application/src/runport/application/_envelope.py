from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from runport.contracts import (
    Diagnostic,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    OperationEnvelope,
    StreamEvent,
)
from runport.core import Contract, ContractError, compile_contract, load_contract, validate_output
from runport.ports import PortError, RuntimeAdapter, Sink

OPERATION = "execute_contract"

ContractSource = Contract | str | os.PathLike[str]


def resolve_contract(contract_or_path: ContractSource) -> Contract:
    if isinstance(contract_or_path, Contract):
        return contract_or_path
    return load_contract(contract_or_path)


def missing_capabilities(required: list[str], adapter: RuntimeAdapter) -> list[str]:
    offered = set(adapter.descriptor().capabilities)
    return [c for c in required if c not in offered]


def capability_diagnostic(missing: list[str], adapter: RuntimeAdapter) -> Diagnostic:
    return Diagnostic(
        code=ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED,
        message=(
            f"adapter {adapter.descriptor().id!r} lacks the capabilities the contract requires: "
            + ", ".join(missing)
        ),
        json_pointer="/capabilities",
    )


def failure_diagnostic(error: PortError) -> Diagnostic:
    hint = None
    if error.retry_after_ms is not None:
        hint = f"the upstream asked to retry after {error.retry_after_ms} ms"
    return Diagnostic(code=error.code, message=error.message, help=hint)


def receipt_diagnostics(
    receipt: ExecutionReceipt, output_schema: Mapping[str, Any]
) -> list[Diagnostic]:
    """What a finished turn's receipt says to the caller: schema failures and pending tools."""
    if receipt.tool_calls:
        return [
            Diagnostic(
                code=ErrorCode.TOOL_CALLS_PENDING,
                severity="warning",
                message=(
                    f"the model asked for {len(receipt.tool_calls)} tool call(s): run the tools "
                    "(or use runport.application.run) to get the answer"
                ),
            )
        ]
    if receipt.output_schema_valid is False:
        problems = validate_output(output_schema, receipt.output)
        return problems or [
            Diagnostic(
                code=ErrorCode.OUTPUT_SCHEMA,
                message="the model's text is not a JSON document",
                json_pointer="",
            )
        ]
    return []


def _envelope(
    diagnostics: list[Diagnostic],
    receipt: ExecutionReceipt | None = None,
    events: list[StreamEvent] | None = None,
) -> OperationEnvelope:
    fingerprints = (
        {"request": receipt.request_fingerprint, "output": receipt.output_fingerprint}
        if receipt is not None
        else {}
    )
    return OperationEnvelope(
        operation=OPERATION,
        ok=not any(d.severity == "error" for d in diagnostics),
        result=receipt,
        diagnostics=diagnostics,
        fingerprints=fingerprints,
        stream_events=events,
    )


def execute_contract(
    contract_or_path: ContractSource,
    adapter: RuntimeAdapter,
    *,
    inputs: Mapping[str, Any],
    context: Mapping[str, Any] | None = None,
    on_event: Sink | None = None,
    fixture_output: JsonValue = None,
) -> OperationEnvelope:
    """Compile a contract, run one turn on ``adapter`` and report it as an envelope (docs/runs.md).

    Every failure it can name — contract, input, capability, runtime, output schema — comes
    back as a not-ok envelope, never raised; inputs and capabilities are checked before the
    adapter is called. With ``on_event`` the turn is streamed and every event the caller saw
    is kept in ``stream_events``; an exception raised by ``on_event`` propagates unchanged.
    """
    try:
        contract = resolve_contract(contract_or_path)
        interaction = compile_contract(contract, inputs=inputs, context=context)
    except ContractError as error:
        return _envelope(list(error.diagnostics))
    missing = missing_capabilities(interaction.required_capabilities, adapter)
    if missing:
        return _envelope([capability_diagnostic(missing, adapter)])
    request = ExecutionRequest(interaction=interaction, fixture_output=fixture_output)
    events: list[StreamEvent] | None = None
    raised: list[BaseException] = []
    try:
        if on_event is None:
            receipt = adapter.execute(request)
        else:
            seen: list[StreamEvent] = []
            events = seen

            def sink(event: StreamEvent) -> None:
                seen.append(event)
                try:
                    on_event(event)
                except BaseException as error:
                    raised.append(error)
                    raise

            receipt = adapter.execute_streaming(request, sink)
    except PortError as error:
        if raised and error is raised[0]:
            raise  # the caller's own exception, even a PortError, is not a runtime failure
        return _envelope([failure_diagnostic(error)], events=events)
    return _envelope(receipt_diagnostics(receipt, interaction.output_schema), receipt, events)
