"""``settle_call`` / ``asettle_call``: one streamed call's terminal event, the way the law
wants it, for an adapter that wraps a client library (an SDK) raising its own exceptions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from runport.contracts import Complete, ExecutionReceipt, Failed, PortError, StreamEvent
from runport.ports._adapter import Sink
from runport.ports._async import AsyncSink, deliver

__all__ = ["asettle_call", "settle_call"]

Caught = type[Exception] | tuple[type[Exception], ...]


def _failure(
    error: BaseException,
    stops: list[BaseException],
    catch: Caught,
    mapped: Callable[[Exception], PortError],
) -> PortError | None:
    """What ``call`` raising ``error`` ends the stream with: ``None`` when the caller stopped
    it (its stop is raised after), the ``PortError`` to send as ``Failed``, else ``error``
    propagates as it is."""
    if stops:
        return None
    if isinstance(error, PortError):
        return error
    if isinstance(error, catch):
        return mapped(error)
    raise error


def _terminal(
    stops: list[BaseException], failure: PortError | None, receipt: ExecutionReceipt | None
) -> Complete | Failed:
    """The terminal event to send; a caller's stop raised instead, with none sent."""
    if stops:
        raise stops[0]
    if failure is not None:
        return Failed(code=failure.code, message=failure.message)
    assert receipt is not None
    return Complete(receipt=receipt)


def _outcome(terminal: Complete | Failed, failure: PortError | None) -> ExecutionReceipt:
    """The receipt of a sent ``Complete``; after a ``Failed``, its ``PortError`` raised
    outside any ``except`` block."""
    if isinstance(terminal, Complete):
        return terminal.receipt
    assert failure is not None
    raise failure


def settle_call(
    sink: Sink,
    call: Callable[[Sink], ExecutionReceipt],
    *,
    catch: Caught,
    mapped: Callable[[Exception], PortError],
) -> ExecutionReceipt:
    """Run ``call`` (which sends its progress to the sink it is given and returns the
    receipt), then end the stream as the streaming law says.

    A receipt: ``Complete`` is sent and the receipt returned. A ``PortError``: ``Failed``
    with its code and message is sent, then that error is raised. An exception of ``catch``
    (the SDK's, the transport's): ``mapped(error)`` gives the ``PortError``, ``Failed`` is
    sent and the ``PortError`` is raised *outside* the ``except`` block, so the library's
    exception, whose text may hold the provider's body or the key, is neither its
    ``__cause__`` nor its ``__context__`` (law 10). What the sink raised (a caller stop)
    propagates unchanged and ends the call without a terminal event, even when the library
    wrapped it (law 6). Anything else propagates as it is.
    """
    stops: list[BaseException] = []

    def forward(event: StreamEvent) -> None:
        try:
            sink(event)
        except BaseException as stop:
            stops.append(stop)
            raise

    failure: PortError | None = None
    receipt: ExecutionReceipt | None = None
    try:
        receipt = call(forward)
    except BaseException as error:
        failure = _failure(error, stops, catch, mapped)
    terminal = _terminal(stops, failure, receipt)
    sink(terminal)
    return _outcome(terminal, failure)


async def asettle_call(
    sink: AsyncSink,
    call: Callable[[AsyncSink], Awaitable[ExecutionReceipt]],
    *,
    catch: Caught,
    mapped: Callable[[Exception], PortError],
) -> ExecutionReceipt:
    """``settle_call``'s twin for an ``AsyncRuntimeAdapter``: ``call`` is awaited and each
    event is delivered (an awaitable sink awaited); a cancellation propagates as it is."""
    stops: list[BaseException] = []

    async def forward(event: StreamEvent) -> None:
        try:
            await deliver(sink, event)
        except BaseException as stop:
            stops.append(stop)
            raise

    failure: PortError | None = None
    receipt: ExecutionReceipt | None = None
    try:
        receipt = await call(forward)
    except BaseException as error:
        failure = _failure(error, stops, catch, mapped)
    terminal = _terminal(stops, failure, receipt)
    await deliver(sink, terminal)
    return _outcome(terminal, failure)
