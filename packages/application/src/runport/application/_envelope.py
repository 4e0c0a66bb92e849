"""One turn as an envelope: the request ``execute_contract`` and ``aexecute_contract`` send
(``prepare``) and how the call's ending becomes the envelope (``Call``). The two functions
share both (``_execute``) and differ only in how they call the adapter and the sink."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from runport.application._contract import (
    ContractSource,
    Unsupported,
    answer_problems,
    checked_interaction,
    unusable_turn,
)
from runport.application._history import place_history, repair_history
from runport.application._partial import snapshots_for
from runport.application._relay import failure_message
from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Diagnostic,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    Message,
    OperationEnvelope,
    StreamEvent,
)
from runport.core import ContractError
from runport.ports import AsyncRuntimeAdapter, PortError, RuntimeAdapter

OPERATION = "execute_contract"

_log = logging.getLogger("runport.application")


def failure_diagnostic(error: PortError) -> Diagnostic:
    hint = None
    if error.retry_after_ms is not None:
        hint = f"the upstream asked to retry after {error.retry_after_ms} ms"
    return Diagnostic(code=error.code, message=failure_message(error), help=hint)


def receipt_diagnostics(
    receipt: ExecutionReceipt, output_schema: Mapping[str, Any]
) -> list[Diagnostic]:
    """What a finished turn's receipt says to the caller: a turn that cannot be used (cut,
    paused or withheld), schema failures and pending tools."""
    unusable = unusable_turn(receipt)
    if unusable is not None:
        return [unusable]
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
        return answer_problems(output_schema, receipt)
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


def prepare(
    contract_or_path: ContractSource,
    adapter: RuntimeAdapter | AsyncRuntimeAdapter,
    inputs: Mapping[str, Any] | None,
    context: Mapping[str, Any] | None,
    fixture_output: JsonValue,
) -> ExecutionRequest | OperationEnvelope:
    """The request to send, or the envelope of a call that must not be made.

    Contract, input and capability problems are found here (``checked_interaction``), before
    the adapter is called; anything else a contract file or an adapter's descriptor throws is
    reported, not raised.
    """
    described: list[AdapterDescriptor] = []

    def descriptor() -> AdapterDescriptor:
        try:
            found = adapter.descriptor()
        except Exception as error:
            raise _DescriptorRaised(error) from error
        described.append(found)
        return found

    try:
        interaction = checked_interaction(contract_or_path, inputs, context, descriptor)
    except ContractError as error:
        return _envelope(list(error.diagnostics))
    except Unsupported as error:
        return _envelope([error.diagnostic])
    except _DescriptorRaised as raised:
        return _envelope(
            [
                _unexpected(
                    ErrorCode.RUNTIME_INVALID_RESPONSE, "the adapter's descriptor()", raised.error
                )
            ]
        )
    except Exception as error:
        if described:  # past the contract and the descriptor: not a problem to report
            raise
        return _envelope(
            [_unexpected(ErrorCode.CONTRACT_INVALID, "loading the contract", error, say=True)]
        )
    return ExecutionRequest(interaction=interaction, fixture_output=fixture_output)


class _DescriptorRaised(Exception):
    """What the adapter's ``descriptor()`` raised (``error``), told apart from the contract's
    own problems."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def with_history(
    request: ExecutionRequest, history: Sequence[Message] | None
) -> tuple[ExecutionRequest, list[Diagnostic]]:
    """``request`` with an earlier conversation placed as a run places it (after the
    contract's leading system/developer messages), repaired first; each repair is a warning
    the envelope carries (``TQX_HISTORY_REPAIRED``)."""
    if not history:
        return request, []
    repaired, warnings = repair_history(history)
    interaction = request.interaction
    messages = place_history(list(interaction.messages), repaired)
    placed = request.model_copy(
        update={"interaction": interaction.model_copy(update={"messages": messages})}
    )
    notes = [
        Diagnostic(code=ErrorCode.HISTORY_REPAIRED, severity="warning", message=warning)
        for warning in warnings
    ]
    return placed, notes


def _unexpected(code: str, where: str, error: BaseException, *, say: bool = False) -> Diagnostic:
    """A coded diagnostic for an exception nothing else named. Only a local file's problem is
    quoted (``say``); an adapter's exception text may hold what an upstream wrote."""
    said = f": {str(error)[:300]}" if say else ""
    return Diagnostic(code=code, message=f"{where} raised {type(error).__name__}{said}")


class Call:
    """One ``execute_contract`` call after ``prepare``: the events the caller saw, the
    caller's own exception, and how the call's ending becomes an envelope. The sync and async
    functions share it; they differ only in how they call the adapter and the sink."""

    def __init__(
        self,
        request: ExecutionRequest,
        streamed: bool,
        partial_output: bool = False,
        notes: Sequence[Diagnostic] = (),
    ) -> None:
        self.request = request
        self.notes = list(notes)
        self.events: list[StreamEvent] | None = [] if streamed else None
        self.stopped: BaseException | None = None
        self.partial = (
            snapshots_for(request.interaction.output_schema, partial_output) if streamed else None
        )

    @property
    def ended(self) -> bool:
        events = self.events
        return events is not None and bool(events) and isinstance(events[-1], Complete | Failed)

    def passes(self, event: StreamEvent) -> bool:
        """Keep every event the adapter sent (all of them pass). The snapshots the caller is
        also handed are made from these events, so the envelope does not keep them."""
        assert self.events is not None
        self.events.append(event)
        return True

    def succeeded(self, receipt: ExecutionReceipt) -> OperationEnvelope:
        diagnostics = receipt_diagnostics(receipt, self.request.interaction.output_schema)
        return _envelope([*diagnostics, *self.notes], receipt, self.events)

    def failed(self, error: Exception) -> tuple[OperationEnvelope, Failed | None]:
        """The envelope of a call that raised, and the ``Failed`` the caller is still owed
        (an adapter that raised without a terminal event). Re-raises the caller's own
        exception."""
        if self.stopped is not None and error is self.stopped:
            raise error  # the caller's own exception, even a PortError, is not a runtime failure
        if isinstance(error, PortError):
            diagnostic = failure_diagnostic(error)
        else:
            # The text may carry what an upstream wrote: the operator's log gets it, the
            # caller gets the code and the exception's type.
            _log.error(
                "the adapter raised %s instead of a PortError", type(error).__name__, exc_info=error
            )
            diagnostic = _unexpected(
                ErrorCode.RUNTIME_INVALID_RESPONSE, "the adapter (not a PortError)", error
            )
        owed = None
        if self.events is not None and not self.ended:
            owed = Failed(code=diagnostic.code, message=diagnostic.message)
            self.passes(owed)
        return _envelope([diagnostic, *self.notes], events=self.events), owed
