"""A run's result (docs/runs.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeVar

from pydantic import JsonValue

from runport.application._define import output_as
from runport.application._json import JSONResult
from runport.contracts import ClientToolCall, ExecutionReceipt, Message, ToolApprovalRequest, Usage

__all__ = ["RunResult"]

T = TypeVar("T")


@dataclass(frozen=True)
class RunResult(JSONResult):
    """The canonical outcome of a run; equal for ``run`` and ``run_stream`` on the same upstream.
    ``model_dump_json()`` writes it as events are written (``model_validate_json`` reads it).

    A run that paused for a person (docs/runs.md, "A person in the loop") has ``status``
    ``"paused"``, no output, the calls awaiting a decision in ``pending`` and the sealed
    ``continuation`` that resumes it: ``run(..., continuation=…, approvals=…)``. A call to a
    client tool (``Tool.client``) is pending as a ``ClientToolCall``, answered by
    ``tool_results=`` (docs/runs.md, "Client tools")."""

    output: JsonValue
    output_schema_valid: bool
    receipts: tuple[ExecutionReceipt, ...]
    messages: tuple[Message, ...]
    usage: Usage
    warnings: tuple[str, ...] = ()
    status: Literal["complete", "paused"] = "complete"
    pending: tuple[ToolApprovalRequest | ClientToolCall, ...] = ()
    continuation: str | None = None

    def output_as(self, kind: type[T]) -> T:
        """The answer as an instance of ``kind`` (the contract's output type: a pydantic model,
        ``str``, …), so a caller gets a typed value without re-parsing JSON."""
        return output_as(self.output, kind)
