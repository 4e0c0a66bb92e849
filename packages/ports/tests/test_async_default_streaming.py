"""The async port's default ``execute_streaming``: one terminal event, plain or awaitable sinks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

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
from runport.ports import AsyncRuntimeAdapter, PortError

from .port_doubles import REQUEST, answered

DESCRIPTOR = AdapterDescriptor(id="async-execute-only", version="1", capabilities=["text"])
RECEIPT = answered(DESCRIPTOR)


class AsyncExecuteOnly(AsyncRuntimeAdapter):
    def __init__(self, outcome: ExecutionReceipt | PortError) -> None:
        self.outcome = outcome

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        await asyncio.sleep(0)
        if isinstance(self.outcome, PortError):
            raise self.outcome
        return self.outcome


def _sinks() -> list[
    tuple[str, list[StreamEvent], Callable[[StreamEvent], Awaitable[None] | None]]
]:
    plain: list[StreamEvent] = []
    awaited: list[StreamEvent] = []

    async def slow(event: StreamEvent) -> None:
        await asyncio.sleep(0)
        awaited.append(event)

    return [("plain", plain, plain.append), ("awaitable", awaited, slow)]


@pytest.mark.parametrize("which", ["plain", "awaitable"])
def test_success_sends_one_complete_with_the_returned_receipt(which: str) -> None:
    name, seen, sink = next(s for s in _sinks() if s[0] == which)
    receipt = asyncio.run(AsyncExecuteOnly(RECEIPT).execute_streaming(REQUEST, sink))
    assert receipt == RECEIPT
    assert seen == [Complete(receipt=RECEIPT)], name


@pytest.mark.parametrize("which", ["plain", "awaitable"])
def test_failure_sends_one_failed_then_reraises(which: str) -> None:
    _, seen, sink = next(s for s in _sinks() if s[0] == which)
    error = PortError(ErrorCode.RUNTIME_UNAVAILABLE, "down", retry_after_ms=5)
    with pytest.raises(PortError) as caught:
        asyncio.run(AsyncExecuteOnly(error).execute_streaming(REQUEST, sink))
    assert caught.value is error
    assert seen == [Failed(code="TQX_RUNTIME_UNAVAILABLE", message="down")]


def test_a_sink_exception_propagates_unchanged() -> None:
    class Stop(Exception):
        pass

    def sink(event: StreamEvent) -> None:
        raise Stop

    with pytest.raises(Stop):
        asyncio.run(AsyncExecuteOnly(RECEIPT).execute_streaming(REQUEST, sink))


def test_a_missing_method_is_caught_at_construction() -> None:
    class NoExecute(AsyncRuntimeAdapter):
        def descriptor(self) -> AdapterDescriptor:
            return DESCRIPTOR

    with pytest.raises(TypeError):
        NoExecute()  # type: ignore[abstract]
