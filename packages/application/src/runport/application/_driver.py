"""``EventDriver``: a call that reports to a sink, read as an iterator of what it reports.

``astream`` and ``astream_run`` are calls whose events the caller pulls, while the call itself
pushes them into a sink (``aexecute_contract(..., on_event=sink)``, ``arun_stream(...)``). The
call runs in a task of its own that hands each event over and waits until the iterator took
it, so a slow consumer holds the adapter back. An event is kept from the moment it is handed
over, so one whose wait the adapter's deadline cut off is still returned, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["EventDriver"]

E = TypeVar("E")
R = TypeVar("R")


class EventDriver(Generic[E, R]):
    """Runs ``call(sink)`` and returns what it sends to ``sink``, one ``next()`` at a time.

    ``start()`` once, then ``next()`` until it raises ``StopAsyncIteration``; ``result()`` is
    then what the call returned (an error it raised is raised by the last ``next()`` and by
    ``result()``). ``stop()`` before that is a caller stop: the call's task is cancelled.
    """

    def __init__(
        self, call: Callable[[Callable[[E], Awaitable[None] | None]], Awaitable[R]]
    ) -> None:
        self._call = call
        self._pending: deque[tuple[E, asyncio.Future[None]]] = deque()
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[R] | None = None  # the call's own task
        self._finished = False

    async def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("the driver was already started")
        self._task = asyncio.ensure_future(self._call(self._hand_over))

    def __aiter__(self) -> EventDriver[E, R]:
        return self

    async def __anext__(self) -> E:
        """The call's next event; ``StopAsyncIteration`` once it ended and all are read."""
        task = self._running()
        if self._finished:
            raise StopAsyncIteration
        while not self._pending and not task.done():
            self._arrived.clear()
            arrival = asyncio.ensure_future(self._arrived.wait())
            try:
                await asyncio.wait({arrival, task}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                arrival.cancel()
        if self._pending:
            event, taken = self._pending.popleft()
            if not taken.done():
                taken.set_result(None)
            return event
        self._finished = True
        task.result()  # what the call raised surfaces here
        raise StopAsyncIteration

    def result(self) -> R:
        """What the call returned; ``RuntimeError`` while it runs, or once stopped."""
        task = self._running()
        if not task.done() or task.cancelled():
            raise RuntimeError("the call has not returned")
        return task.result()

    async def stop(self) -> None:
        """A caller stop: the call's task is cancelled and awaited until it ends."""
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _hand_over(self, event: E) -> None:
        """The call's sink: keep ``event`` for the iterator, then wait until it is taken."""
        taken = asyncio.get_running_loop().create_future()
        self._pending.append((event, taken))
        self._arrived.set()
        await taken

    def _running(self) -> asyncio.Task[R]:
        if self._task is None:
            raise RuntimeError("the driver was not started")
        return self._task
