"""``EventDriver``: a call that reports to a sink, read as an iterator of what it reports.

``astream`` is a turn and ``astream_run`` a run whose events the caller pulls; the call itself
pushes them into a sink (``aexecute_contract(..., on_event=sink)``, ``arun_stream(...)``).
The driver joins the two without a queue or a task switch per event: the caller's
``next()`` resumes the call where its sink's await left it, in the caller's own step, and the
call runs until it hands over its next event — which ``next()`` returns — or until it must
wait for something (a network read, a worker thread). Only then does the call go on in a task
of its own, which waits for it and steps it on, and ``next()`` awaits that task's next event.
So a turn whose events come without waiting (the scripted mock, a read that carried many
frames) costs no loop round trip per event.

The call always sees one task as its own, the driver's ``task``, whichever of the two steps
it: ``asyncio.current_task()`` names it during the caller's steps too (the loop's record of
the running task is switched for the step, as asyncio's own ``Task`` does around each step of
its coroutine), and every step runs in the task's context. A deadline the call keeps
(``asyncio.timeout``, an anyio cancel scope) therefore cancels the call's task, never the
caller: when it passes while the caller holds an event, the sink's await is cancelled in the
task, and the call fails or ends as it would with any awaited sink. The caller's stop
(``stop()``) cancels that task the same way.

An event is kept from the moment it is handed over, so one whose await was cut off is still
returned, in order. The sink's await returns when the caller asks for the next event:
backpressure, with nothing read ahead.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import sys
import types
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine, Generator
from typing import Any, Final, Generic, TypeVar

__all__ = ["HELD", "EventDriver", "HandOver"]

E = TypeVar("E")
R = TypeVar("R")

_Task = asyncio.Task[Any]
_Swap = Callable[[asyncio.AbstractEventLoop, _Task | None], _Task | None]

_enter_task: Callable[[asyncio.AbstractEventLoop, asyncio.Task[Any]], None] | None = getattr(
    asyncio.tasks, "_enter_task", None
)
_leave_task: Callable[[asyncio.AbstractEventLoop, asyncio.Task[Any]], None] | None = getattr(
    asyncio.tasks, "_leave_task", None
)
_current_tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = getattr(
    asyncio.tasks, "_current_tasks", None
)


_RECORD: Final = (
    _current_tasks if sys.version_info < (3, 12) and isinstance(_current_tasks, dict) else None
)
"""Python 3.11's record of the running task per loop: the dict ``_enter_task``,
``_leave_task`` and ``current_task`` read and write (3.12 on offer ``_swap_current_task``).
The caller's steps switch it in place: what those two functions do, with no call."""


def _swap_in_record(loop: asyncio.AbstractEventLoop, task: _Task | None) -> _Task | None:
    record = _RECORD
    assert record is not None
    previous = record.get(loop)
    if task is None:
        record.pop(loop, None)
    else:
        record[loop] = task
    return previous


def _swap_by_enter_and_leave(
    loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None
) -> asyncio.Task[Any] | None:
    assert _enter_task is not None
    assert _leave_task is not None
    previous = asyncio.current_task(loop)
    if previous is not None:
        _leave_task(loop, previous)
    if task is not None:
        _enter_task(loop, task)
    return previous


def _swap_function() -> _Swap | None:
    swap: _Swap | None = getattr(asyncio.tasks, "_swap_current_task", None)  # 3.12 on
    if swap is not None:
        return swap
    if _RECORD is not None:
        return _swap_in_record
    if _enter_task is not None and _leave_task is not None:
        return _swap_by_enter_and_leave
    return None


_swap: Final = _swap_function()
"""Makes a task the loop's running one and returns the one it was (``None``: none): what
asyncio's own ``Task`` does around each step of its coroutine. ``None`` when asyncio offers no
such switch; then every step is the task's, which is correct and only slower."""


class _HandOverSignal:
    """What a held call yields up to its driver: the event is already kept."""

    __slots__ = ()


_HAND_OVER = _HandOverSignal()


class HandOver:
    """What the driver's sink returns when the call must wait for the caller: awaiting it
    yields ``_HAND_OVER`` up to the driver once and returns ``None``. One instance serves every
    hand-over, and its ``__await__`` runs no Python frame (a tuple iterator does the yield), so
    a held event costs no coroutine; awaited by anything but the driver's own steps it is a bad
    yield, as the async port's rule about the sink's task says. Its only raise is what the
    driver throws in at it: the cancellation of the call's task."""

    __slots__ = ()

    # a partial is no method: called with no arguments, it makes the one-item iterator
    __await__ = functools.partial(iter, (_HAND_OVER,))


HELD: Final = HandOver()
"""The sink's answer to an event the caller did not take at once."""


class _Pass:
    """Awaiting it in the task passes one of the call's own yields (a future, or asyncio's
    bare yield) on to the task, and the outcome back: ``yield from`` for a held coroutine."""

    __slots__ = ("yielded",)

    def __init__(self, yielded: object) -> None:
        self.yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield self.yielded)


class _TaskStart(Coroutine[Any, Any, None]):
    """The call's task's coroutine. A task cancelled before its first step never runs its
    coroutine's code, which would leave the call (already stepped by the caller) unclosed;
    this one starts the task's loop with that cancellation, to throw it into the call. Once
    the task's loop ended it lets go of the driver: the task and the driver hold each other,
    and a turn's envelope, events and adapter are then freed as soon as their reader drops
    them, not by the cyclic collector."""

    def __init__(self, driver: EventDriver[Any, Any]) -> None:
        self._driver: EventDriver[Any, Any] | None = driver
        self._coro: Coroutine[Any, Any, None] | None = None

    def send(self, value: Any) -> Any:
        coro = self._coro
        if coro is None:
            coro = self._coro = self._started(None)
        try:
            return coro.send(value)
        except BaseException:
            self._driver = None
            raise

    def throw(self, error: Any, *_: Any) -> Any:
        if not isinstance(error, BaseException):
            error = error()
        try:
            if self._coro is None:
                self._coro = self._started(error)
                return self._coro.send(None)
            return self._coro.throw(error)
        except BaseException:
            self._driver = None
            raise

    def close(self) -> None:
        self._driver = None
        if self._coro is not None:
            self._coro.close()

    def _started(self, first: BaseException | None) -> Coroutine[Any, Any, None]:
        driver = self._driver
        assert driver is not None
        return driver._run_task(first)

    def __await__(self) -> Generator[Any, None, None]:
        raise TypeError("the driver's task coroutine is not awaitable")


_END = object()  # _step: the call returned or raised
_HELD = object()  # _step: the call handed an event over
_PARK = object()  # the task: wait for an order
_RESUME = object()  # the task: step the call on at once


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
        self._coro: Coroutine[Any, Any, R] | None = None
        self._pending: deque[E] = deque()
        self._keep = self._pending.append
        self._context = contextvars.copy_context()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        # What the parked task is told: _END, or one of the call's yields to wait for.
        self._order: asyncio.Future[object] | None = None
        self._unclaimed: object = None  # a yield the task was not told of (see _step_inline)
        self._waiter: asyncio.Future[None] | None = None  # the caller, waiting for the task
        self._events: AsyncGenerator[E, None] | None = None  # what the caller iterates
        self._wanted = False  # the caller is in __anext__, waiting for an event
        self._held = False  # the call is at a hand-over, or not started: the caller may step it
        self._done = False
        self._raised = False
        self._stopping = False
        self._result: R | None = None
        self._error: BaseException | None = None

    @property
    def task(self) -> asyncio.Task[None]:
        """The call's task, the one it runs as."""
        if self._task is None:
            raise RuntimeError("the driver was not started")
        return self._task

    async def start(self) -> None:
        """Make the call's task; it parks until the call must wait. The first ``next()``
        needs no loop turn: the task's first step may come after it."""
        if self._task is not None:
            raise RuntimeError("the driver was already started")
        loop = self._loop = asyncio.get_running_loop()
        self._order = loop.create_future()
        self._held = True
        self._task = loop.create_task(_TaskStart(self), context=self._context)

    def __aiter__(self) -> AsyncIterator[E]:
        """The events, as an async generator: ``async for`` over one resumes no Python
        frame of ours but its own, which costs less per event than an ``__anext__``
        coroutine made for every event."""
        events = self._events
        if events is None:
            events = self._events = self._iterate()
        return events

    async def __anext__(self) -> E:
        """The call's next event; ``StopAsyncIteration`` once it ended and all are read."""
        return await self.__aiter__().__anext__()

    async def _iterate(self) -> AsyncGenerator[E, None]:
        pending = self._pending
        swap = _swap
        record = _RECORD  # 3.11: switched in place, cheaper than two calls of ``swap``
        run = self._context.run
        hand_over = _HAND_OVER
        send: Callable[[None], object] | None = None  # the call's, once it is made
        while True:
            while pending:
                yield pending.popleft()
            if self._done:
                if self._error is not None and not self._raised:
                    self._raised = True
                    raise self._error
                return
            order = self._order
            if order is None:
                raise RuntimeError("the driver was not started")
            self._wanted = True
            if self._held and not order.done():
                if send is None and self._coro is not None:
                    send = self._coro.send
                if send is None or swap is None:
                    if swap is None:
                        order.set_result(_RESUME)  # the task steps it
                    else:
                        self._step_inline(order)  # the first step
                        continue
                else:
                    # ``_step_inline`` in line, for every step after the first: the call,
                    # resumed at its hand-over, hands over its next event (or two) and is held
                    loop = self._loop
                    assert loop is not None
                    if record is None:
                        caller = swap(loop, self._task)
                    else:
                        caller = record.get(loop)
                        record[loop] = self._task  # type: ignore[assignment]  # start() made it
                    try:
                        yielded = run(send, None)
                    except BaseException as ended:
                        self._settle(order, self._ended(ended))
                    else:
                        if yielded is not hand_over:
                            self._held = False
                            self._settle(order, yielded)
                    finally:
                        if record is None:
                            swap(loop, caller)
                        elif caller is None:
                            record.pop(loop, None)
                        else:
                            record[loop] = caller
                    continue
            assert self._loop is not None
            waiter = self._waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None
                self._wanted = False

    def result(self) -> R:
        """What the call returned; ``RuntimeError`` while it runs, or once stopped."""
        if not self._done or self._stopping:
            raise RuntimeError("the call has not returned")
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]

    async def stop(self) -> None:
        """A caller stop: the call's task is cancelled (whatever the call awaits — its sink
        included — is cancelled), and awaited until it ends."""
        events = self._events
        left = events is not None and getattr(events, "ag_frame", events) is not None
        if left and self._waiter is None:
            # left at a yield: closing it now spares the loop's finalizer a task
            assert events is not None
            await events.aclose()
        task = self._task
        if task is None or task.done():
            return
        if not self._done:
            self._stopping = True
            task.cancel()
        await task

    def _sink(self, event: E) -> Awaitable[None] | None:
        """Keep ``event``. The caller waiting for an event takes it at once, so the call goes
        on; otherwise the call waits in the hand-over until the caller asks for the next."""
        self._keep(event)
        if not self._wanted:
            return HELD
        self._wanted = False
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        return None

    def _step(self, value: object, error: BaseException | None) -> object:
        """Run the call to its next suspension: ``_END``, ``_HELD``, or what it yielded."""
        coro = self._coro
        if coro is None:
            made = self._call(self._sink)
            if type(made) is not types.CoroutineType and not isinstance(made, Coroutine):
                raise TypeError("the driven call must be a coroutine")
            coro = self._coro = made
        try:
            yielded = coro.send(value) if error is None else coro.throw(error)
        except BaseException as ended:
            return self._ended(ended)
        self._held = yielded is _HAND_OVER
        return _HELD if self._held else yielded

    def _ended(self, ended: BaseException | None) -> object:
        """The call returned (``StopIteration``) or raised ``ended``."""
        self._done, self._held = True, False
        if isinstance(ended, StopIteration):
            self._result = ended.value
        else:
            self._error = ended
        return _END

    def _step_inline(self, order: asyncio.Future[object]) -> None:
        """Resume the call in the caller's step, as its own task and in its context (the
        first step, and any where ``_iterate``'s in-line one does not apply)."""
        loop = self._loop
        assert loop is not None
        assert _swap is not None
        caller = _swap(loop, self._task)
        try:
            coro = self._coro
            if coro is None:
                outcome = self._context.run(self._step, None, None)
            else:
                try:
                    yielded = self._context.run(coro.send, None)
                except BaseException as ended:
                    outcome = self._ended(ended)
                else:
                    if yielded is _HAND_OVER:
                        return
                    self._held = False
                    outcome = yielded
        finally:
            _swap(loop, caller)
        if outcome is not _HELD:
            self._settle(order, outcome)

    def _settle(self, order: asyncio.Future[object], outcome: object) -> None:
        """After a step in the caller's: tell the task the call ended (``_END``) or what it
        must wait for."""
        if not order.done():
            order.set_result(outcome)
        elif outcome is not _END:
            # The call cancelled its own task during the step (a cancel scope it keeps): the
            # task wakes to throw that into the call, which waits for ``outcome``.
            self._unclaimed = outcome

    async def _run_task(self, first: BaseException | None) -> None:
        """The call's task: parked while the caller steps the call; it waits for what the
        call waits for and steps it on, and every cancellation it is sent goes to the call
        (``first``: one sent before the task's first step)."""
        loop = self._loop
        assert loop is not None
        waiting: object = _PARK
        if first is not None:
            order = self._order
            assert order is not None
            ordered = order.result() if order.done() and not order.cancelled() else _PARK
            if ordered is _END or self._done:
                return
            if isinstance(ordered, asyncio.Future):
                ordered.cancel()
            self._order = loop.create_future()
            waiting = self._drive(None, first)
        while not self._done:
            if waiting is _RESUME:
                waiting = self._drive(None, None)
                continue
            if waiting is _PARK:
                order = self._order
                assert order is not None
                try:
                    waiting = await order
                except asyncio.CancelledError as cancelled:
                    if self._done:
                        return
                    self._order = loop.create_future()
                    unclaimed, self._unclaimed = self._unclaimed, None
                    if isinstance(unclaimed, asyncio.Future):
                        unclaimed.cancel()
                    waiting = self._drive(None, cancelled)
                    continue
                self._order = loop.create_future()
                if waiting is _END:
                    return
                continue
            try:
                value = await _Pass(waiting)
            except BaseException as error:  # a cancellation, as a Task throws it in
                waiting = self._drive(None, error)
            else:
                waiting = self._drive(value, None)

    def _drive(self, value: object, error: BaseException | None) -> object:
        """Step the call in its task; what the task does next."""
        outcome = self._step(value, error)
        if outcome is _HELD and self._stopping:
            return _RESUME  # nobody reads any more: a hand-over returns at once
        if outcome is _END or outcome is _HELD:
            waiter = self._waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            return _PARK
        return outcome
