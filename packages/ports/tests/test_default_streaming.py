from __future__ import annotations

import pytest

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
)
from runport.ports import PortError, RuntimeAdapter

from .port_doubles import REQUEST, answered

DESCRIPTOR = AdapterDescriptor(id="execute-only", version="1", capabilities=["text"])


class ExecuteOnly(RuntimeAdapter):
    """An adapter that cannot stream: it relies on the port's default method."""

    def __init__(self, outcome: ExecutionReceipt | PortError) -> None:
        self.outcome = outcome
        self.calls = 0

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        self.calls += 1
        if isinstance(self.outcome, PortError):
            raise self.outcome
        return self.outcome


RECEIPT = answered(DESCRIPTOR)


def test_success_sends_one_complete_carrying_the_returned_receipt() -> None:
    seen: list[StreamEvent] = []
    receipt = ExecuteOnly(RECEIPT).execute_streaming(REQUEST, seen.append)
    assert receipt == RECEIPT
    assert seen == [Complete(receipt=RECEIPT)]


def test_failure_sends_one_failed_then_reraises_the_same_error() -> None:
    error = PortError(ErrorCode.RUNTIME_RATE_LIMITED, "slow down", retry_after_ms=1500)
    seen: list[StreamEvent] = []
    with pytest.raises(PortError) as raised:
        ExecuteOnly(error).execute_streaming(REQUEST, seen.append)
    assert raised.value is error
    assert seen == [Failed(code="TQX_RUNTIME_RATE_LIMITED", message="slow down")]
    assert raised.value.retry_after_ms == 1500


class Stop(Exception):
    pass


@pytest.mark.parametrize("outcome", [RECEIPT, PortError(ErrorCode.RUNTIME_UNAVAILABLE, "reset")])
def test_a_sink_exception_propagates_unchanged(outcome: ExecutionReceipt | PortError) -> None:
    stop = Stop()

    def sink(event: StreamEvent) -> None:
        raise stop

    adapter = ExecuteOnly(outcome)
    with pytest.raises(Stop) as raised:
        adapter.execute_streaming(REQUEST, sink)
    assert raised.value is stop
    assert adapter.calls == 1


def test_an_adapter_missing_a_method_cannot_be_built() -> None:
    class Half(RuntimeAdapter):
        def descriptor(self) -> AdapterDescriptor:
            return DESCRIPTOR

    with pytest.raises(TypeError):
        Half()  # type: ignore[abstract]


def test_port_error_carries_its_parts() -> None:
    error = PortError("TQX_RUNTIME_TIMEOUT", "read timed out", detail="after 5 s")
    assert (error.code, error.message, error.retry_after_ms, error.detail) == (
        "TQX_RUNTIME_TIMEOUT",
        "read timed out",
        None,
        "after 5 s",
    )
    assert str(error) == "TQX_RUNTIME_TIMEOUT: read timed out"
    assert error.retryable
    assert not PortError(ErrorCode.RUNTIME_PERMANENT, "no").retryable
    assert not PortError("TQX_SOMETHING_ELSE", "no").retryable


@pytest.mark.parametrize("code", ["timeout", "TQX-TIMEOUT", "", "tqx_x"])
def test_a_port_error_refuses_a_code_that_is_not_a_stable_code(code: str) -> None:
    with pytest.raises(ValueError, match="TQX_SOME_CODE"):
        PortError(code, "x")
