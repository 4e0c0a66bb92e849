"""``settle_call`` / ``asettle_call``: the terminal event of a call that wraps a library, sent
the law's way — ``Complete`` or ``Failed``, the mapped ``PortError`` raised with no trace of
the library's exception, and a caller stop passed through unchanged."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable

import pytest

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    Failed,
    PortError,
    StreamEvent,
)
from runport.ports import AsyncSink, Sink, asettle_call, settle_call

from .port_doubles import answered

SECRET = "sk-library-text-0123456789abcdef"


class LibraryError(Exception):
    """A library's exception: its text holds what the provider sent."""


class Stop(Exception):
    """The caller's way to stop a stream: raised from the sink."""


def mapped(error: Exception) -> PortError:
    return PortError(ErrorCode.RUNTIME_UNAVAILABLE, "the connection failed")


def failing(error: BaseException) -> Callable[[Sink], ExecutionReceipt]:
    def call(sink: Sink) -> ExecutionReceipt:
        sink(Delta(text="half"))
        raise error

    return call


def settled(call: Callable[[Sink], ExecutionReceipt]) -> tuple[list[StreamEvent], BaseException]:
    events: list[StreamEvent] = []
    try:
        settle_call(events.append, call, catch=LibraryError, mapped=mapped)
    except Exception as error:
        return events, error
    raise AssertionError("the call did not raise")


def test_a_receipt_is_completed_and_returned() -> None:
    receipt = answered(AdapterDescriptor(id="sdk", version="1", capabilities=["text"]))
    events: list[StreamEvent] = []

    def call(sink: Sink) -> ExecutionReceipt:
        sink(Delta(text="hi"))
        return receipt

    assert settle_call(events.append, call, catch=LibraryError, mapped=mapped) is receipt
    assert events == [Delta(text="hi"), Complete(receipt=receipt)]


def test_a_library_error_is_mapped_and_raised_with_no_trace_of_it() -> None:
    events, error = settled(failing(LibraryError(f"HTTP 500 {{'key': '{SECRET}'}}")))
    assert isinstance(error, PortError)
    assert error.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert events == [Delta(text="half"), Failed(code=error.code, message=error.message)]
    assert error.__cause__ is None
    assert error.__context__ is None
    assert SECRET not in "".join(traceback.format_exception(error))


def test_a_port_error_is_sent_as_failed_and_raised_itself() -> None:
    own = PortError(ErrorCode.RUNTIME_RESPONSE_TOO_LARGE, "too large")
    events, error = settled(failing(own))
    assert error is own
    assert events[-1] == Failed(code=own.code, message="too large")


def test_what_the_sink_raised_propagates_unchanged_with_no_terminal() -> None:
    stop = Stop()

    def sink(event: StreamEvent) -> None:
        raise stop

    def call(forward: Sink) -> ExecutionReceipt:
        try:
            forward(Delta(text="a"))
        except Stop as inner:  # a library that wraps what a callback raised
            raise LibraryError("wrapped") from inner
        raise AssertionError("the sink raised")

    with pytest.raises(Stop) as raised:
        settle_call(sink, call, catch=LibraryError, mapped=mapped)
    assert raised.value is stop


def test_an_error_outside_catch_propagates_as_it_is() -> None:
    events, error = settled(failing(KeyError("a bug")))
    assert isinstance(error, KeyError)
    assert events == [Delta(text="half")]


def test_the_async_twin_awaits_the_sink_and_maps_the_same_way() -> None:
    seen: list[StreamEvent] = []

    async def sink(event: StreamEvent) -> None:
        await asyncio.sleep(0)
        seen.append(event)

    async def call(forward: AsyncSink) -> ExecutionReceipt:
        result = forward(Delta(text="half"))
        if isinstance(result, Awaitable):
            await result
        raise LibraryError(SECRET)

    async def main() -> BaseException:
        with pytest.raises(PortError) as raised:
            await asettle_call(sink, call, catch=LibraryError, mapped=mapped)
        return raised.value

    error = asyncio.run(main())
    assert error.__context__ is None
    assert seen == [Delta(text="half"), Failed(code=error.code, message=error.message)]
