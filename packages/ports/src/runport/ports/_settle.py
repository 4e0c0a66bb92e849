"""``settle_call`` / ``asettle_call``: one streamed call's terminal event, the way the law
wants it, for an adapter that wraps a client library (an SDK) raising its own exceptions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from runport.contracts import Complete, ExecutionReceipt, Failed, PortError, StreamEvent
from runport.ports._adapter import Sink
from runport.ports._async import AsyncSink, deliver

__all__ = ["asettle_call", "settle_call"]

Caught = type[Exception] | tuple[type[Exception], ...]


class _Settling:
    """How one call ends, whichever way its events travel: the caller's stop (what the sink
    raised), else the ``PortError`` the call failed with, else its receipt."""

    def __init__(self, catch: Caught, mapped: Callable[[Exception], PortError]) -> None:
        self.catch = catch
        self.mapped = mapped
        self.stop: BaseException | None = None
        self.failure: PortError | None = None
        self.receipt: ExecutionReceipt | None = None

    def stopped(self, stop: BaseException) -> None:
        """The sink raised ``stop``: the first such is the caller's stop."""
        if self.stop is None:
            self.stop = stop

    def raised(self, error: BaseException) -> None:
        """``call`` raised ``error``: after a caller's stop it is that stop's echo; a
        ``PortError`` or an exception of ``catch`` is the failure to send; anything else
        propagates as it is."""
        if self.stop is not None:
            return
        if isinstance(error, PortError):
            self.failure = error
        elif isinstance(error, self.catch):
            self.failure = self.mapped(error)
        else:
            raise error

    def terminal(self) -> Complete | Failed:
        """The terminal event to send; a caller's stop raised instead, with none sent."""
        if self.stop is not None:
            raise self.stop
        if self.failure is not None:
            return Failed(code=self.failure.code, message=self.failure.message)
        assert self.receipt is not None
        return Complete(receipt=self.receipt)

    def outcome(self) -> ExecutionReceipt:
        """After the terminal is sent: the receipt, or the ``PortError`` raised outside any
        ``except`` block."""
        if self.failure is not None:
            raise self.failure
        assert self.receipt is not None
        return self.receipt


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
    settling = _Settling(catch, mapped)

    def forward(event: StreamEvent) -> None:
        try:
            sink(event)
        except BaseException as stop:
            settling.stopped(stop)
            raise

    try:
        settling.receipt = call(forward)
    except BaseException as error:
        settling.raised(error)
    sink(settling.terminal())
    return settling.outcome()


async def asettle_call(
    sink: AsyncSink,
    call: Callable[[AsyncSink], Awaitable[ExecutionReceipt]],
    *,
    catch: Caught,
    mapped: Callable[[Exception], PortError],
) -> ExecutionReceipt:
    """``settle_call``'s twin for an ``AsyncRuntimeAdapter``: ``call`` is awaited and each
    event is delivered (an awaitable sink awaited); a cancellation propagates as it is."""
    settling = _Settling(catch, mapped)

    async def forward(event: StreamEvent) -> None:
        try:
            await deliver(sink, event)
        except BaseException as stop:
            settling.stopped(stop)
            raise

    try:
        settling.receipt = await call(forward)
    except BaseException as error:
        settling.raised(error)
    await deliver(sink, settling.terminal())
    return settling.outcome()
