"""Sub-runs: ``Tool.from_contract`` runs a contract as another run's tool — its events nested in
the parent's stream as ``SubRunEvent``, its output the call's result, its usage the parent's."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from runport.application import RunError, Tool, arun_stream, define_contract, run, run_stream
from runport.contracts import (
    Complete,
    Delta,
    ErrorCode,
    ExecutionRequest,
    RunEvent,
    SubRunEvent,
    ToolResult,
    Usage,
)
from runport.mock import AsyncFunctionRuntime, Emitter, FunctionRuntime
from runport.ports import PortError

RESEARCH = define_contract(
    "team.research",
    user="Research {{ inputs.topic }}.",
    inputs={"topic": str},
    description="Research a topic and return notes.",
)
PLAN = define_contract("team.plan", user="Plan a trip.")


def researcher(request: ExecutionRequest, emit: Emitter) -> None:
    """The sub-run's model: one turn of notes on the topic it was given."""
    topic = str(request.interaction.messages[-1].content).removeprefix("Research ")
    emit.text(f"notes on {topic.rstrip('.')}")
    emit.usage(10, 4)


def delegating(tool: str, call_id: str = "p1") -> Any:
    """A model that calls ``tool`` with a topic, then answers with what it said."""

    def model(request: ExecutionRequest, emit: Emitter) -> None:
        messages = request.interaction.messages
        if messages[-1].role != "tool":
            emit.tool_call(tool, {"topic": "rivers"}, call_id=call_id)
        else:
            emit.text(f"plan: {messages[-1].content}")
        emit.usage(100, 20)

    return model


def test_a_sub_runs_events_are_nested_under_the_call_and_its_usage_is_summed() -> None:
    research = Tool.from_contract(RESEARCH, FunctionRuntime(researcher))
    assert research.name == "team_research"
    assert research.description == "Research a topic and return notes."
    assert research.parameters["required"] == ["topic"]
    events: list[RunEvent] = []
    result = run_stream(
        PLAN,
        FunctionRuntime(delegating("team_research")),
        tools=[research],
        on_event=events.append,
    )
    assert result.output == "plan: notes on rivers"
    nested = [event for event in events if isinstance(event, SubRunEvent)]
    assert {event.call_id for event in nested} == {"p1"}
    inner = [event.event for event in nested]
    assert [event.text for event in inner if isinstance(event, Delta)] == ["notes on rivers"]
    assert isinstance(inner[-1], Complete)
    tool_result = next(event for event in events if isinstance(event, ToolResult))
    assert tool_result.output == "notes on rivers"
    assert events.index(tool_result) > events.index(nested[-1])
    assert result.usage == Usage(input_tokens=210, output_tokens=44)
    unstreamed = run(PLAN, FunctionRuntime(delegating("team_research")), tools=[research])
    assert unstreamed.output == result.output
    assert unstreamed.usage == result.usage


def test_a_sub_run_of_a_sub_run_keeps_the_nesting() -> None:
    research = Tool.from_contract(RESEARCH, FunctionRuntime(researcher))
    middle = define_contract("team.middle", user="About {{ inputs.topic }}.", inputs={"topic": str})
    manage = Tool.from_contract(
        middle, FunctionRuntime(delegating("team_research", "m1")), tools=[research]
    )
    events: list[RunEvent] = []
    result = run_stream(
        PLAN, FunctionRuntime(delegating("team_middle")), tools=[manage], on_event=events.append
    )
    assert result.output == "plan: plan: notes on rivers"
    deepest = [
        event.event.event
        for event in events
        if isinstance(event, SubRunEvent) and isinstance(event.event, SubRunEvent)
    ]
    assert {event.call_id for event in events if isinstance(event, SubRunEvent)} == {"p1"}
    assert [e.text for e in deepest if isinstance(e, Delta)] == ["notes on rivers"]
    assert result.usage == Usage(input_tokens=410, output_tokens=84)


def test_a_sub_run_nested_past_its_depth_runs_nothing_and_is_coded() -> None:
    asked: list[ExecutionRequest] = []

    def counted(request: ExecutionRequest, emit: Emitter) -> None:
        asked.append(request)
        researcher(request, emit)

    research = Tool.from_contract(RESEARCH, FunctionRuntime(counted), max_depth=1)
    middle = define_contract("team.middle", user="About {{ inputs.topic }}.", inputs={"topic": str})
    manage = Tool.from_contract(
        middle, FunctionRuntime(delegating("team_research", "m1")), tools=[research]
    )
    with pytest.raises(RunError) as raised:
        run(PLAN, FunctionRuntime(delegating("team_middle")), tools=[manage])
    assert raised.value.code == ErrorCode.TOOL_FAILED
    assert ErrorCode.SUBRUN_TOO_DEEP in raised.value.message
    inner = raised.value.__cause__
    assert isinstance(inner, RunError)
    assert isinstance(inner.__cause__, PortError)
    assert inner.__cause__.code == ErrorCode.SUBRUN_TOO_DEEP
    assert asked == []


def test_a_failing_sub_run_fails_the_call_with_its_error_as_the_cause() -> None:
    def broken(request: ExecutionRequest, emit: Emitter) -> None:
        emit.text("not json")

    strict = define_contract(
        "team.strict", user="{{ inputs.topic }}", inputs={"topic": str}, output=int
    )
    tool = Tool.from_contract(
        strict, FunctionRuntime(broken), name="team_research", max_corrections=0
    )
    with pytest.raises(RunError) as raised:
        run(PLAN, FunctionRuntime(delegating("team_research")), tools=[tool])
    assert raised.value.code == ErrorCode.TOOL_FAILED
    cause = raised.value.__cause__
    assert isinstance(cause, RunError)
    assert cause.code == ErrorCode.RUN_CORRECTIONS_EXHAUSTED


def test_an_async_parent_streams_the_same_nested_events() -> None:
    research = Tool.from_contract(RESEARCH, FunctionRuntime(researcher))

    async def amodel(request: ExecutionRequest, emit: Any) -> None:
        messages = request.interaction.messages
        if messages[-1].role != "tool":
            await emit.tool_call("team_research", {"topic": "rivers"}, call_id="p1")
        else:
            await emit.text(f"plan: {messages[-1].content}")

    async def go() -> list[RunEvent]:
        events: list[RunEvent] = []
        await arun_stream(
            PLAN, AsyncFunctionRuntime(amodel), tools=[research], on_event=events.append
        )
        return events

    events = asyncio.run(go())
    inner = [event.event for event in events if isinstance(event, SubRunEvent)]
    assert [event.text for event in inner if isinstance(event, Delta)] == ["notes on rivers"]


@pytest.mark.parametrize("depth", [0, -1, True])
def test_max_depth_is_a_positive_integer(depth: Any) -> None:
    with pytest.raises(ValueError, match="max_depth"):
        Tool.from_contract(RESEARCH, FunctionRuntime(researcher), max_depth=depth)


def test_a_caller_stop_during_a_sub_run_ends_it_and_leaves_no_worker() -> None:
    research = Tool.from_contract(RESEARCH, FunctionRuntime(researcher))

    def stop(event: RunEvent) -> None:
        if isinstance(event, SubRunEvent):
            raise RuntimeError("seen enough")

    with pytest.raises(RunError) as raised:
        run_stream(
            PLAN, FunctionRuntime(delegating("team_research")), tools=[research], on_event=stop
        )
    assert raised.value.code == ErrorCode.CALLER_STOPPED
    assert not [t for t in threading.enumerate() if t.name == "runport-subrun"]


async def aresearcher(request: ExecutionRequest, emit: Any) -> None:
    """``researcher`` on the event loop."""
    topic = str(request.interaction.messages[-1].content).removeprefix("Research ")
    await emit.text(f"notes on {topic.rstrip('.')}")
    emit.usage(10, 4)


def test_a_sub_run_on_an_async_adapter_is_awaited_by_either_parent() -> None:
    research = Tool.from_contract(RESEARCH, AsyncFunctionRuntime(aresearcher))
    events: list[RunEvent] = []
    result = run_stream(
        PLAN, FunctionRuntime(delegating("team_research")), tools=[research], on_event=events.append
    )
    assert result.output == "plan: notes on rivers"
    assert result.usage == Usage(input_tokens=210, output_tokens=44)
    inner = [event.event for event in events if isinstance(event, SubRunEvent)]
    assert [event.text for event in inner if isinstance(event, Delta)] == ["notes on rivers"]

    async def amodel(request: ExecutionRequest, emit: Any) -> None:
        messages = request.interaction.messages
        if messages[-1].role != "tool":
            await emit.tool_call("team_research", {"topic": "lakes"}, call_id="p1")
        else:
            await emit.text(f"plan: {messages[-1].content}")

    async def go() -> tuple[Any, list[RunEvent]]:
        pushed: list[RunEvent] = []
        done = await arun_stream(
            PLAN, AsyncFunctionRuntime(amodel), tools=[research], on_event=pushed.append
        )
        return done, pushed

    done, pushed = asyncio.run(go())
    assert done.output == "plan: notes on lakes"
    assert done.usage == Usage(input_tokens=10, output_tokens=4)
    assert [e.event for e in pushed if isinstance(e, SubRunEvent)][-1].kind == "Complete"


def test_an_async_sub_run_past_its_depth_runs_nothing() -> None:
    asked: list[ExecutionRequest] = []

    async def counted(request: ExecutionRequest, emit: Any) -> None:
        asked.append(request)
        await aresearcher(request, emit)

    research = Tool.from_contract(RESEARCH, AsyncFunctionRuntime(counted), max_depth=1)
    middle = define_contract("team.middle", user="About {{ inputs.topic }}.", inputs={"topic": str})
    manage = Tool.from_contract(
        middle, FunctionRuntime(delegating("team_research", "m1")), tools=[research]
    )
    with pytest.raises(RunError) as raised:
        run(PLAN, FunctionRuntime(delegating("team_middle")), tools=[manage])
    assert ErrorCode.SUBRUN_TOO_DEEP in raised.value.message
    assert asked == []
