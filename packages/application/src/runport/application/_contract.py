"""What every way of calling a contract checks: the contract itself and whether the adapter
offers what it requires, before the call (``checked_interaction``, the one preparation of a
call); the answer against the output schema, after it. One turn (``_envelope``) reports a
problem as a diagnostic; a run (``_plan``, ``_state``) raises it as a ``RunError`` or asks for a
correction."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from runport.contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    Diagnostic,
    ErrorCode,
    ExecutionReceipt,
)
from runport.core import Contract, compile_contract, load_contract, validate_output

ContractSource = Contract | str | os.PathLike[str]


def resolve_contract(contract_or_path: ContractSource) -> Contract:
    if isinstance(contract_or_path, Contract):
        return contract_or_path
    return load_contract(contract_or_path)


def missing_capabilities(required: list[str], descriptor: AdapterDescriptor) -> list[str]:
    offered = set(descriptor.capabilities)
    return [c for c in required if c not in offered]


def capability_diagnostic(missing: list[str], descriptor: AdapterDescriptor) -> Diagnostic:
    return Diagnostic(
        code=ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED,
        message=(
            f"adapter {descriptor.id!r} lacks the capabilities the contract requires: "
            + ", ".join(missing)
        ),
        json_pointer="/capabilities",
    )


class Unsupported(Exception):
    """The adapter lacks a capability the contract requires; ``diagnostic`` says which."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def checked_interaction(
    contract_or_path: ContractSource,
    inputs: Mapping[str, Any] | None,
    context: Mapping[str, Any] | None,
    descriptor: Callable[[], AdapterDescriptor],
) -> CompiledInteraction:
    """A call's preparation, before the adapter is called: the contract resolved and compiled
    with its inputs (``ContractError`` otherwise), then the adapter's descriptor read (only
    then: ``descriptor`` is called after the contract compiled) and the capabilities the
    contract requires checked against it (``Unsupported`` otherwise). What else is raised
    propagates; each caller reports all of it in its own shape."""
    contract = resolve_contract(contract_or_path)
    interaction = compile_contract(contract, inputs=inputs or {}, context=context)
    described = descriptor()
    missing = missing_capabilities(interaction.required_capabilities, described)
    if missing:
        raise Unsupported(capability_diagnostic(missing, described))
    return interaction


def answer_problems(
    output_schema: Mapping[str, Any], receipt: ExecutionReceipt
) -> list[Diagnostic]:
    """Why the contract rejects a turn's answer (its receipt says ``output_schema_valid`` is
    false): the schema's errors, or that the text is no JSON document at all."""
    return validate_output(output_schema, receipt.output) or [not_json()]


def unusable_turn(receipt: ExecutionReceipt) -> Diagnostic | None:
    """Why a turn's end says its answer and tool calls must not be used (docs/runs.md, "per
    finish"), or ``None``. Cut by the token limit (``length``), its calls' arguments and its
    answer may be cut: ``TQX_OUTPUT_TRUNCATED``, never a correction round (the next attempt
    would be cut at the same limit). Paused (``pause``) where nothing continues it, it is not
    finished either. Withheld by the provider (``content_filter``): ``TQX_OUTPUT_REFUSED``,
    never an ok empty answer. Every other end is judged by its answer."""
    finish = receipt.finish
    said = receipt.finish_reason or finish
    if finish == "length":
        code, message = ErrorCode.OUTPUT_TRUNCATED, "the model's turn was cut by its token limit"
    elif finish == "pause":
        code = ErrorCode.OUTPUT_TRUNCATED
        message = "the provider paused the model's turn (a run continues a paused turn)"
    elif finish == "content_filter":
        code, message = ErrorCode.OUTPUT_REFUSED, "the provider withheld the model's answer"
    else:
        return None
    return Diagnostic(
        code=code,
        message=f"{message} (finish_reason {said!r}): its answer and tool calls are not used",
    )


def not_json() -> Diagnostic:
    """The rejection of an answer whose text does not even parse."""
    return Diagnostic(
        code=ErrorCode.OUTPUT_SCHEMA,
        message="the model's text is not a JSON document",
        json_pointer="",
    )
