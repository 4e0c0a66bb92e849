"""Reasoning in runs (docs/runs.md): every turn's ``ReasoningDelta`` reaches the caller as it
arrives, and the assistant message built from a turn carries the turn's reasoning
(``Message.reasoning``) so the next request sends it back, in tool runs, correction rounds and
history alike."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runport.application import (
    RunError,
    arun,
    arun_stream,
    astream,
    execute_contract,
    run,
    run_stream,
)
from runport.contracts import (
    Complete,
    Delta,
    ExecutionRequest,
    Message,
    ReasoningDelta,
    ReasoningPart,
    RunEvent,
    StreamEvent,
    ToolCall,
)
from runport.core import parse_scenario
from runport.mock import AsyncScriptedRuntime, Emitter, FunctionRuntime, ScriptedRuntime

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"
ANSWER = '{"city": "Delft", "celsius": 12.5}'
INPUTS = {"city": "Delft"}


def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    return {"city": city, "celsius": 12.5}


def think(text: str, signature: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"kind": "reasoning_delta", "text": text}
    if signature is not None:
        event["signature"] = signature
    return event


TOOL_TURN = [
    think("I need "),
    think("the weather.", "sig-1"),
    {"kind": "tool_call_delta", "index": 0, "call_id": "c1", "name": "get_weather",
     "arguments_fragment": '{"city": "Delft"}'},
    {"kind": "finish", "finish_reason": "tool_calls"},
]  # fmt: skip
ANSWER_TURN = [
    think("Now answer."),
    {"kind": "delta", "text": ANSWER},
    {"kind": "finish", "finish_reason": "stop"},
]
FIRST_THOUGHT = ReasoningPart(
    text="I need the weather.", provider_metadata={"mock": {"signature": "sig-1"}}
)
CALL = ToolCall(call_id="c1", name="get_weather", arguments={"city": "Delft"})


def scenario(*turns: list[dict[str, Any]]) -> Any:
    return parse_scenario(
        {"api_version": "runport.mock/v1", "id": "run", "turns": [{"events": t} for t in turns]}
    )


SCRIPT = scenario(TOOL_TURN, ANSWER_TURN)

STREAMED = [
    ("ReasoningDelta", "I need "),
    ("ReasoningDelta", "the weather."),
    ("ToolCallDelta", ""),
    ("Complete", ""),
    ("ToolResult", ""),  # the run's own event: the tool ran, before the next turn
    ("ReasoningDelta", "Now answer."),
    ("Delta", ANSWER),
    ("Complete", ""),
]


def shape(events: list[RunEvent]) -> list[tuple[str, str]]:
    return [
        (event.kind, event.text if isinstance(event, Delta | ReasoningDelta) else "")
        for event in events
    ]


def test_the_second_request_sends_the_first_turns_reasoning_before_the_tool_results() -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        if request.interaction.messages[-1].role == "user":
            emit.reasoning("I need ")
            emit.reasoning("the weather.", signature="sig-1")
            emit.tool_call("get_weather", {"city": "Delft"}, call_id="c1")
        else:
            emit.text(ANSWER)

    runtime = FunctionRuntime(model)
    result = run(CONTRACT, runtime, inputs=INPUTS, tools=[get_weather])

    second = runtime.requests[1].interaction.messages
    assert [m.role for m in second] == ["system", "user", "assistant", "tool"]
    assert second[2] == Message(
        role="assistant", content="", tool_calls=[CALL], reasoning=[FIRST_THOUGHT]
    )
    assert second[3].tool_call_id == "c1"
    assert result.messages[2] == second[2]
    assert result.receipts[0].reasoning == [FIRST_THOUGHT]


def test_run_stream_forwards_every_turns_reasoning_in_order_and_agrees_with_run() -> None:
    plain = run(CONTRACT, ScriptedRuntime(SCRIPT), inputs=INPUTS, tools=[get_weather])
    events: list[RunEvent] = []
    streamed = run_stream(
        CONTRACT,
        ScriptedRuntime(SCRIPT),
        inputs=INPUTS,
        tools=[get_weather],
        on_event=events.append,
    )

    assert shape(events) == STREAMED
    assert streamed == plain
    assert [m.reasoning for m in plain.messages if m.role == "assistant"] == [
        [FIRST_THOUGHT],
        [ReasoningPart(text="Now answer.")],
    ]
    assert plain.receipts[-1].reasoning == [ReasoningPart(text="Now answer.")]
    assert plain.output == {"city": "Delft", "celsius": 12.5}  # reasoning is not the answer


def test_arun_stream_forwards_reasoning_in_order_and_agrees_with_run() -> None:
    events: list[RunEvent] = []

    async def sink(event: RunEvent) -> None:
        await asyncio.sleep(0)
        events.append(event)

    async def go() -> tuple[Any, Any]:
        streamed = await arun_stream(
            CONTRACT,
            AsyncScriptedRuntime(SCRIPT),
            inputs=INPUTS,
            tools=[get_weather],
            on_event=sink,
        )
        plain = await arun(
            CONTRACT, AsyncScriptedRuntime(SCRIPT), inputs=INPUTS, tools=[get_weather]
        )
        return streamed, plain

    streamed, plain = asyncio.run(go())
    assert shape(events) == STREAMED
    assert streamed == plain == run(CONTRACT, ScriptedRuntime(SCRIPT), inputs=INPUTS,
                                    tools=[get_weather])  # fmt: skip


def test_a_correction_round_sends_back_the_rejected_turns_reasoning() -> None:
    invalid = [think("A guess."), {"kind": "delta", "text": '{"city": "Delft"}'},
               {"kind": "finish"}]  # fmt: skip
    requests: list[ExecutionRequest] = []
    turns = iter([invalid, ANSWER_TURN])

    def model(request: ExecutionRequest, emit: Emitter) -> None:
        requests.append(request)
        for event in next(turns):
            if event["kind"] == "reasoning_delta":
                emit.reasoning(event["text"])
            elif event["kind"] == "delta":
                emit.text(event["text"])

    runtime = FunctionRuntime(model)
    result = run(CONTRACT, runtime, inputs=INPUTS)
    second = requests[1].interaction.messages
    assert [m.role for m in second] == ["system", "user", "assistant", "user"]
    assert second[2].reasoning == [ReasoningPart(text="A guess.")]
    assert second[2].content == '{"city": "Delft"}'
    assert result.output_schema_valid


def test_history_keeps_its_reasoning_on_the_way_to_the_adapter() -> None:
    history = [
        Message(role="user", content="Weather in Gouda"),
        Message(role="assistant", content="", tool_calls=[CALL], reasoning=[FIRST_THOUGHT]),
        Message(role="tool", content="12", tool_call_id="c1"),
        Message(role="assistant", content="It is 12.", reasoning=[ReasoningPart(text="easy")]),
    ]
    runtime = FunctionRuntime(lambda request, emit: emit.text(ANSWER))
    result = run(CONTRACT, runtime, inputs=INPUTS, history=history)

    sent = runtime.requests[0].interaction.messages
    assert sent[1:5] == history
    assert result.messages[1:5] == tuple(history)


def test_a_failure_after_reasoning_was_shown_is_not_retried() -> None:
    failing = scenario(
        [think("partial"), {"kind": "fail", "code": "TQX_RUNTIME_UNAVAILABLE", "message": "x"}],
        ANSWER_TURN,
    )
    events: list[StreamEvent] = []
    with pytest.raises(RunError) as caught:
        run_stream(CONTRACT, ScriptedRuntime(failing), inputs=INPUTS, on_event=events.append)
    assert caught.value.code == "TQX_RUNTIME_UNAVAILABLE"
    assert [event.kind for event in events] == ["ReasoningDelta", "Failed"]
    assert caught.value.partial.text == ""  # reasoning is no partial answer

    # unstreamed, nothing was shown: the retry gets the answer
    result = run(CONTRACT, ScriptedRuntime(failing), inputs=INPUTS, sleep=lambda s: None)
    assert result.receipts[-1].reasoning == [ReasoningPart(text="Now answer.")]


ONE_TURN = scenario([think("Look "), think("it up."), {"kind": "delta", "text": ANSWER},
                     {"kind": "finish"}])  # fmt: skip


def test_execute_contract_and_astream_carry_reasoning_with_equal_receipts() -> None:
    events: list[StreamEvent] = []
    streamed = execute_contract(
        CONTRACT, ScriptedRuntime(ONE_TURN), inputs=INPUTS, on_event=events.append
    )
    plain = execute_contract(CONTRACT, ScriptedRuntime(ONE_TURN), inputs=INPUTS)
    assert streamed.result == plain.result
    assert plain.result is not None
    assert plain.result.reasoning == [ReasoningPart(text="Look it up.")]
    assert plain.result.text == ANSWER
    assert shape(events)[:3] == [
        ("ReasoningDelta", "Look "),
        ("ReasoningDelta", "it up."),
        ("Delta", ANSWER),
    ]

    async def go() -> tuple[list[StreamEvent], Any]:
        seen: list[StreamEvent] = []
        async with astream(CONTRACT, AsyncScriptedRuntime(ONE_TURN), inputs=INPUTS) as stream:
            async for event in stream:
                seen.append(event)
        return seen, stream.envelope

    seen, envelope = asyncio.run(go())
    assert seen == events
    assert isinstance(seen[-1], Complete)
    assert envelope.result == plain.result
