"""``to_async`` and ``to_sync``: one kind of adapter used where the other is expected
(docs/async.md)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

from runport.contracts import AdapterDescriptor, ExecutionReceipt, ExecutionRequest, StreamEvent
from runport.ports import AsyncRuntimeAdapter, AsyncSink, RuntimeAdapter, Sink, deliver


class BridgeUsageError(RuntimeError):
    """A bridged adapter used where it cannot work (``to_sync`` inside a running loop)."""


class CallerGone(Exception):
    """Raised into a bridged sync adapter's sink once its async caller was cancelled: a
    caller stop, so the adapter closes its upstream and returns."""


class _Handoff:
    """Events from the worker thread to the caller's task, one at a time.

    The worker waits on each event's reply, so it reads no further than the event being
    delivered (backpressure); ``abandon`` answers every waiting reply with ``CallerGone``.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[tuple[StreamEvent, concurrent.futures.Future[None]]] = (
            asyncio.Queue()
        )
        self._lock = threading.Lock()
        self._pending: set[concurrent.futures.Future[None]] = set()
        self._gone = False

    def thread_sink(self, event: StreamEvent) -> None:
        reply: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._lock:
            if self._gone:
                raise CallerGone("the async caller is gone")
            self._pending.add(reply)
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, (event, reply))
        except RuntimeError:  # the loop is closed
            self.answer(reply, CallerGone("the event loop is closed"))
        reply.result()

    def answer(self, reply: concurrent.futures.Future[None], error: BaseException | None) -> None:
        with self._lock:
            self._pending.discard(reply)
            if reply.done():
                return
            if error is None:
                reply.set_result(None)
            else:
                reply.set_exception(error)

    def abandon(self) -> None:
        with self._lock:
            self._gone = True
            pending, self._pending = self._pending, set()
        for reply in pending:
            if not reply.done():
                reply.set_exception(CallerGone("the async caller was cancelled"))


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark an abandoned worker's outcome as seen (it is nobody's to raise any more)."""
    if not future.cancelled():
        future.exception()


class _Threaded(AsyncRuntimeAdapter):
    def __init__(self, adapter: RuntimeAdapter) -> None:
        self.adapter = adapter

    def descriptor(self) -> AdapterDescriptor:
        return self.adapter.descriptor()

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        worker = asyncio.ensure_future(asyncio.to_thread(self.adapter.execute, request))
        try:
            return await asyncio.shield(worker)
        except asyncio.CancelledError:
            worker.add_done_callback(_retrieve)
            raise

    async def aclose(self) -> None:
        """The wrapped adapter's ``close()``, on a worker thread (it may wait on sockets)."""
        close = getattr(self.adapter, "close", None)
        if callable(close):
            await asyncio.to_thread(close)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        handoff = _Handoff(asyncio.get_running_loop())
        worker = asyncio.ensure_future(
            asyncio.to_thread(self.adapter.execute_streaming, request, handoff.thread_sink)
        )
        try:
            while True:
                getter = asyncio.ensure_future(handoff.queue.get())
                try:
                    await asyncio.wait({getter, worker}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not getter.done():
                        getter.cancel()
                if not getter.done() or getter.cancelled():
                    return await worker
                event, reply = getter.result()
                try:
                    await deliver(sink, event)
                except asyncio.CancelledError:
                    raise
                except BaseException as error:
                    handoff.answer(reply, error)
                    await asyncio.wait({worker})
                    _retrieve(worker)
                    raise
                handoff.answer(reply, None)
        except asyncio.CancelledError:
            handoff.abandon()
            worker.add_done_callback(_retrieve)
            raise


def to_async(adapter: RuntimeAdapter) -> AsyncRuntimeAdapter:
    """``adapter`` on the event loop: each call runs on a worker thread and its events are
    delivered to the caller's task in order, one at a time (the worker waits for each).

    Cancelling the caller stops delivery at once; the worker's next event then fails with a
    caller stop, so the adapter closes its upstream — but a read already blocked in the
    worker cannot be interrupted, so the upstream closes when that read returns (at the
    latest at the adapter's own read timeout).
    """
    if not isinstance(adapter, RuntimeAdapter):
        raise TypeError(f"to_async needs a RuntimeAdapter, not {type(adapter).__name__}")
    return _Threaded(adapter)


class _OnLoop(RuntimeAdapter):
    def __init__(self, adapter: AsyncRuntimeAdapter) -> None:
        self.adapter = adapter

    def descriptor(self) -> AdapterDescriptor:
        return self.adapter.descriptor()

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        _outside_a_loop()
        return asyncio.run(self.adapter.execute(request))

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        _outside_a_loop()
        return asyncio.run(self.adapter.execute_streaming(request, sink))

    def close(self) -> None:
        """The wrapped adapter's ``aclose()`` on a fresh event loop (a plain ``close()`` as
        it is), as every call of this bridge runs."""
        _outside_a_loop()
        aclose = getattr(self.adapter, "aclose", None)
        if callable(aclose):
            asyncio.run(aclose())
            return
        close = getattr(self.adapter, "close", None)
        if callable(close):
            close()


def _outside_a_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise BridgeUsageError(
        "an adapter made by to_sync(...) was called inside a running event loop, which it "
        "would block: await the async adapter itself there"
    )


def to_sync(adapter: AsyncRuntimeAdapter) -> RuntimeAdapter:
    """``adapter`` as a blocking ``RuntimeAdapter``: each call runs on a fresh event loop in
    the calling thread, so the sink is called on the caller's thread, in order.

    Call it only where no event loop is running (``BridgeUsageError`` otherwise). Each call
    gets its own loop, so an async adapter must not keep loop-bound state (a client made
    inside an earlier call) between calls.
    """
    if not isinstance(adapter, AsyncRuntimeAdapter):
        raise TypeError(f"to_sync needs an AsyncRuntimeAdapter, not {type(adapter).__name__}")
    return _OnLoop(adapter)
