"""``astream`` and ``astream_run``: one streamed turn, or a whole streamed run, as an async
iterator (docs/async.md).

Both are the same thing over a different call: the call pushes its events into a sink, the
caller pulls them with ``async for``, and ``EventDriver`` joins the two; only what the call is
(``aexecute_contract`` or ``arun_stream``) and what it returns (the envelope, the run's
result) differ.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from runport.application._contract import ContractSource
from runport.application._driver import EventDriver
from runport.application._execute import aexecute_contract
from runport.application._options import RunOptions
from runport.application._relay import AsyncRunSink
from runport.application._run import arun_stream
from runport.application._state import RunResult
from runport.contracts import Message, OperationEnvelope, RunEvent
from runport.ports import AsyncRuntimeAdapter

if TYPE_CHECKING:
    from typing import Self

    from typing_extensions import Unpack

R = TypeVar("R")

_Call = Callable[[AsyncRunSink], Awaitable[R]]


class _Pulled(Generic[R]):
    """A call's events as an async iterator, inside ``async with``; what the call returned
    afterwards (``_returned``). Leaving the block before the last event is a caller stop: the
    call's task is cancelled, which makes the adapter close its upstream."""

    _name = "astream"

    def __init__(self, call: _Call[R]) -> None:
        self._driver: EventDriver[RunEvent, R] = EventDriver(call)
        self._entered = False

    async def __aenter__(self) -> Self:
        if self._entered:
            raise RuntimeError(f"an {self._name}(...) block can be entered only once")
        self._entered = True
        await self._driver.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self._driver.stop()

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        self._running()
        return self._driver.__aiter__()  # the driver's own generator: nothing of ours between

    async def __anext__(self) -> RunEvent:
        self._running()
        return await self._driver.__anext__()

    def _returned(self, nothing: str) -> R:
        self._running()
        try:
            return self._driver.result()
        except RuntimeError:
            raise RuntimeError(nothing) from None

    def _running(self) -> None:
        if not self._entered:
            name = self._name
            raise RuntimeError(f"use {name}(...) as `async with {name}(...) as events:`")


class EventStream(_Pulled[OperationEnvelope]):
    """The value of ``async with astream(...)``: iterate it for the turn's events, then read
    ``envelope``.

    The turn is driven by the iteration (``EventDriver``): each step of the ``async for``
    resumes the turn where its sink's await left it, so a slow consumer holds the adapter
    back, and a turn whose events need no waiting costs no task switch per event. The turn
    runs as a task of its own, so its deadline cancels the turn, never the consumer. An event
    is kept from the moment the turn handed it over, so one whose wait the adapter's deadline
    cut off is still yielded, in order: the iterator yields exactly the envelope's
    ``stream_events`` (and, with ``partial_output``, the ``OutputSnapshot`` after each
    ``Delta`` that made one, or before the ``Complete`` of an answer only its end completes).
    Leaving the ``async with`` block before the last event is a caller stop: the turn's task
    is cancelled, which makes the adapter close its upstream, and there is no envelope.
    """

    @property
    def envelope(self) -> OperationEnvelope:
        """The envelope ``aexecute_contract`` returns for this turn, ``stream_events``
        included; there is none before the last event, nor after leaving early."""
        return self._returned("the stream was not read to its end, so the turn has no envelope")


class RunStream(_Pulled[RunResult]):
    """The value of ``async with astream_run(...)``: iterate it for the run's events — every
    turn's, and what the run adds between them — then read ``result``.

    A run that fails raises its ``RunError`` from the ``async for``, after the last event it
    showed (a ``Failed``, or an ``AnswerRejected`` with ``correcting`` false). Leaving the
    block before the last event is a caller stop: the run's task is cancelled, which makes
    the adapter close its upstream, and there is no result.
    """

    _name = "astream_run"

    @property
    def result(self) -> RunResult:
        """The ``RunResult`` ``arun_stream`` returns for this run; there is none before the
        last event, nor after leaving early (and a failed run raises its ``RunError``)."""
        return self._returned("the run was not read to its end, so it has no result")


def astream(
    contract_or_path: ContractSource,
    adapter: AsyncRuntimeAdapter,
    *,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    history: Sequence[Message] | None = None,
    partial_output: bool = False,
) -> EventStream:
    """Stream one turn: ``async with astream(contract, adapter, inputs=…) as events:``
    ``async for event in events: …``, then ``events.envelope``.

    ``inputs=None`` means no inputs; ``history`` and ``partial_output`` are
    ``aexecute_contract``'s. Leaving the block before the last event is a caller stop.
    """

    def turn(sink: AsyncRunSink) -> Awaitable[OperationEnvelope]:
        return aexecute_contract(
            contract_or_path,
            adapter,
            inputs=inputs,
            context=context,
            on_event=sink,
            history=history,
            partial_output=partial_output,
        )

    return EventStream(turn)


def astream_run(
    contract_or_path: ContractSource,
    adapter: AsyncRuntimeAdapter,
    *,
    inputs: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    partial_output: bool = False,
    **options: Unpack[RunOptions],
) -> RunStream:
    """Stream a run: ``async with astream_run(contract, adapter, inputs=…, tools=…,
    history=…) as events:`` ``async for event in events: …``, then ``events.result``.

    The events are ``arun_stream``'s, the result is what it returns, and the keywords are its
    own (``RunOptions``: ``tools``, ``history``, the budgets, …). Leaving the block before the
    last event is a caller stop.
    """

    def whole_run(sink: AsyncRunSink) -> Awaitable[RunResult]:
        return arun_stream(
            contract_or_path,
            adapter,
            on_event=sink,
            inputs=inputs,
            context=context,
            partial_output=partial_output,
            **options,
        )

    return RunStream(whole_run)
