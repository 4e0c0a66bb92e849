"""The one request, and the receipt an adapter answers it with, that the sync and the async
port's default-streaming tests both run."""

from __future__ import annotations

from runport.contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    ExecutionReceipt,
    ExecutionRequest,
    fingerprint,
)

REQUEST = ExecutionRequest(
    interaction=CompiledInteraction(
        compiler="test",
        contract_id="c",
        contract_version="1.0.0",
        messages=[],
        output_schema={"type": "string"},
    )
)


def answered(adapter: AdapterDescriptor) -> ExecutionReceipt:
    """The receipt ``adapter`` gives for ``REQUEST``: the schema-valid text ``"hi"``."""
    return ExecutionReceipt(
        adapter=adapter,
        request_fingerprint=fingerprint(REQUEST.interaction),
        output_fingerprint=fingerprint("hi"),
        output="hi",
        output_schema_valid=True,
        text="hi",
    )
