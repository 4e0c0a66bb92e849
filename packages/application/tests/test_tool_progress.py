"""Tool progress: a tool that is a generator shows a ``ToolProgress`` per value it yields, in the
run's stream, and the run's deadline stops one that yields forever."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any

import pytest
from pydantic import TypeAdapter

from runport.application import (
    RunError,
    Tool,
    arun,
    arun_stream,
    astream_run,
    define_contract,
    run,
    run_stream,
)
from runport.contracts import (
    ErrorCode,
    ExecutionRequest,
    RunEvent,
    ToolProgress,
    ToolResult,
)
from runport.mock import AsyncFunctionRuntime, Emitter, FunctionRuntime

CONTRACT = define_contract("progress", user="Copy the files.")


def model(request: ExecutionRequest, emit: Emitter) -> None:
    """Calls ``copy`` once, then answers with what the tool said."""
    messages = request.interaction.messages
    if messages[-1].role == "user":
        emit.tool_call("copy", {"count": 3}, call_id="c1")
    else:
        emit.text(f"done: {messages[-1].content}")


async def amodel(request: ExecutionRequest, emit: Any) -> None:
    """``model`` on the event loop (the async emitter's calls are awaited)."""
    messages = request.interaction.messages
    if messages[-1].role == "user":
        await emit.tool_call("copy", {"count": 3}, call_id="c1")
    else:
        await emit.text(f"done: {messages[-1].content}")


def copy(count: int) -> Generator[dict[str, int], None, str]:
    """Copy files, saying how far it got."""
    for done in range(1, count + 1):
        yield {"copied": done, "of": count}
    return "3 files"  # a generator's return value is its result


def between(events: list[Any]) -> list[Any]:
    return [event for event in events if isinstance(event, ToolProgress | ToolResult)]


EXPECTED = [
    ToolProgress(call_id="c1", data={"copied": 1, "of": 3}),
    ToolProgress(call_id="c1", data={"copied": 2, "of": 3}),
    ToolProgress(call_id="c1", data={"copied": 3, "of": 3}),
    ToolResult(call_id="c1", name="copy", output="3 files"),
]


def test_each_yield_is_shown_before_the_result_and_the_return_value_is_the_result() -> None:
    events: list[RunEvent] = []
    result = run_stream(CONTRACT, FunctionRuntime(model), tools=[copy], on_event=events.append)
    assert between(events) == EXPECTED
    assert result.output == "done: 3 files"
    assert run(CONTRACT, FunctionRuntime(model), tools=[copy]) == result


def test_the_async_runs_show_the_same_progress() -> None:
    async def both() -> tuple[list[Any], list[Any]]:
        pushed: list[RunEvent] = []
        await arun_stream(
            CONTRACT, AsyncFunctionRuntime(amodel), tools=[copy], on_event=pushed.append
        )
        async with astream_run(CONTRACT, AsyncFunctionRuntime(amodel), tools=[copy]) as stream:
            pulled = [event async for event in stream]
        return pushed, pulled

    pushed, pulled = asyncio.run(both())
    assert between(pushed) == EXPECTED
    assert between(pulled) == EXPECTED


def test_a_generator_that_returns_nothing_gives_its_last_yield() -> None:
    def count(count: int) -> Iterator[int]:
        """Count."""
        yield from range(count)

    events: list[RunEvent] = []
    tool = count
    tool.__name__ = "copy"
    result = run_stream(CONTRACT, FunctionRuntime(model), tools=[tool], on_event=events.append)
    assert [event.data for event in events if isinstance(event, ToolProgress)] == [0, 1, 2]
    assert result.output == "done: 2"


class Ticks:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_a_generator_that_yields_forever_is_stopped_by_the_deadline_and_closed() -> None:
    closed: list[bool] = []

    def forever(count: int) -> Iterator[int]:
        """Never done."""
        try:
            n = 0
            while True:
                n += 1
                yield n
        finally:
            closed.append(True)

    forever.__name__ = "copy"
    events: list[RunEvent] = []
    turns: list[int] = []

    def counted(request: ExecutionRequest, emit: Emitter) -> None:
        turns.append(1)
        model(request, emit)

    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT,
            FunctionRuntime(counted),
            tools=[forever],
            on_event=events.append,
            deadline=10,
            clock=Ticks(),
        )
    assert raised.value.code == ErrorCode.RUN_DEADLINE
    assert raised.value.stage == "tool"
    assert "stopped" in raised.value.message
    assert closed == [True]
    shown = [event for event in events if isinstance(event, ToolProgress)]
    assert 0 < len(shown) < 10
    assert [event.data for event in shown] == list(range(1, len(shown) + 1))
    failed = [event for event in events if isinstance(event, ToolResult)]
    assert failed == [ToolResult(call_id="c1", name="copy", error=raised.value.message)]
    assert len(turns) == 1


def test_a_deadline_passed_before_a_model_turn_ends_the_run_there() -> None:
    clock = Ticks()

    def slow_copy(count: int) -> str:
        """Takes an hour, on this clock."""
        clock.now += 3600
        return "copied"

    slow_copy.__name__ = "copy"
    with pytest.raises(RunError) as raised:
        run(CONTRACT, FunctionRuntime(model), tools=[slow_copy], deadline=60, clock=clock)
    assert raised.value.code == ErrorCode.RUN_DEADLINE
    assert raised.value.stage == "model"
    assert len(raised.value.partial.receipts) == 1


def test_a_caller_stop_on_progress_closes_the_generator() -> None:
    closed: list[bool] = []

    def watched(count: int) -> Iterator[int]:
        """Watched."""
        try:
            yield 1
            yield 2
        finally:
            closed.append(True)

    watched.__name__ = "copy"

    def stop(event: RunEvent) -> None:
        if isinstance(event, ToolProgress):
            raise RuntimeError("seen enough")

    with pytest.raises(RunError) as raised:
        run_stream(CONTRACT, FunctionRuntime(model), tools=[watched], on_event=stop)
    assert raised.value.code == ErrorCode.CALLER_STOPPED
    assert closed == [True]


async def acopy(count: int) -> AsyncIterator[dict[str, int]]:
    """``copy`` as an async generator: its last yield is its result."""
    for done in range(1, count + 1):
        await asyncio.sleep(0)
        yield {"copied": done, "of": count}


acopy.__name__ = "copy"
ASYNC_EXPECTED = [
    *EXPECTED[:3],
    ToolResult(call_id="c1", name="copy", output={"copied": 3, "of": 3}),
]


def test_an_async_generator_tool_streams_on_the_runs_loop_and_in_a_sync_run() -> None:
    async def streamed() -> list[Any]:
        events: list[RunEvent] = []
        await arun_stream(
            CONTRACT, AsyncFunctionRuntime(amodel), tools=[acopy], on_event=events.append
        )
        return events

    assert between(asyncio.run(streamed())) == ASYNC_EXPECTED

    async def pulled() -> list[Any]:
        async with astream_run(CONTRACT, AsyncFunctionRuntime(amodel), tools=[acopy]) as stream:
            return [event async for event in stream]

    assert between(asyncio.run(pulled())) == ASYNC_EXPECTED
    events: list[RunEvent] = []
    result = run_stream(CONTRACT, FunctionRuntime(model), tools=[acopy], on_event=events.append)
    assert between(events) == ASYNC_EXPECTED
    assert result.output == 'done: {"copied":3,"of":3}'


def test_an_async_generator_gives_its_result_with_tool_output_unshown() -> None:
    async def copy(count: int) -> AsyncIterator[Any]:
        """Copies, then says so."""
        yield {"copied": 1}
        yield Tool.output("all copied")

    events: list[RunEvent] = []
    result = run_stream(CONTRACT, FunctionRuntime(model), tools=[copy], on_event=events.append)
    assert between(events) == [
        ToolProgress(call_id="c1", data={"copied": 1}),
        ToolResult(call_id="c1", name="copy", output="all copied"),
    ]
    assert result.output == "done: all copied"


def test_an_async_function_tool_is_awaited() -> None:
    async def copy(count: int) -> str:
        """Async."""
        await asyncio.sleep(0)
        return f"{count} copied"

    assert run(CONTRACT, FunctionRuntime(model), tools=[copy]).output == "done: 3 copied"
    result = asyncio.run(arun(CONTRACT, AsyncFunctionRuntime(amodel), tools=[copy]))
    assert result.output == "done: 3 copied"


def test_an_async_tool_that_raises_fails_the_run_with_its_cause() -> None:
    async def copy(count: int) -> str:
        """Broken."""
        raise OSError("disk full")

    with pytest.raises(RunError) as raised:
        asyncio.run(arun(CONTRACT, AsyncFunctionRuntime(amodel), tools=[copy]))
    assert raised.value.code == ErrorCode.TOOL_FAILED
    assert isinstance(raised.value.__cause__, OSError)


def test_an_async_generator_past_the_deadline_is_closed_on_the_loop() -> None:
    closed: list[bool] = []

    async def copy(count: int) -> AsyncIterator[int]:
        """Never done."""
        try:
            n = 0
            while True:
                n += 1
                yield n
        finally:
            closed.append(True)

    async def go() -> None:
        await arun(CONTRACT, AsyncFunctionRuntime(amodel), tools=[copy], deadline=10, clock=Ticks())

    with pytest.raises(RunError) as raised:
        asyncio.run(go())
    assert raised.value.code == ErrorCode.RUN_DEADLINE
    assert closed == [True]


def test_an_async_tool_in_a_sync_run_on_a_running_loop_is_refused() -> None:
    async def copy(count: int) -> str:
        """Async."""
        return "never"

    async def inside() -> None:
        run(CONTRACT, FunctionRuntime(model), tools=[copy])

    with pytest.raises(RunError) as raised:
        asyncio.run(inside())
    assert raised.value.code == ErrorCode.TOOL_FAILED
    assert "use arun()" in str(raised.value.__cause__)


@pytest.mark.parametrize("deadline", [0, -1, True, "10"])
def test_a_deadline_is_a_positive_number_of_seconds(deadline: Any) -> None:
    with pytest.raises(ValueError, match="deadline must be"):
        run(CONTRACT, FunctionRuntime(model), deadline=deadline)


def test_tool_progress_is_a_run_event_on_the_wire() -> None:
    event = ToolProgress(call_id="c1", data={"copied": 1})
    wire = TypeAdapter(RunEvent)
    assert wire.validate_json(event.model_dump_json()) == event
    assert event.model_dump(mode="json") == {
        "kind": "ToolProgress",
        "call_id": "c1",
        "data": {"copied": 1},
    }
