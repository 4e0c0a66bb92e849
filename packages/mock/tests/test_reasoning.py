"""Reasoning in the doubles: ``reasoning_delta`` scenario events and ``emit.reasoning`` are
played as ``ReasoningDelta`` progress and kept, block by block, in ``receipt.reasoning``
(docs/scenarios.md, docs/testing-with-mocks.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runport.contracts import (
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    ToolCallDelta,
    Usage,
)
from runport.core import Scenario, StreamAssembler, parse_scenario
from runport.mock import (
    AsyncEmitter,
    AsyncFunctionRuntime,
    AsyncScriptedRuntime,
    Emitter,
    FunctionRuntime,
    ScriptedRuntime,
    TurnUsageError,
)
from runport.ports import PortError

MakeRequest = Any


def v1(*events: dict[str, Any]) -> Scenario:
    return parse_scenario(
        {"api_version": "runport.mock/v1", "id": "thinks", "turns": [{"events": list(events)}]}
    )


def think(text: str, signature: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"kind": "reasoning_delta", "text": text}
    if signature is not None:
        event["signature"] = signature
    return event


def signed(text: str, signature: str) -> ReasoningPart:
    return ReasoningPart(text=text, provider_metadata={"mock": {"signature": signature}})


# Four blocks: a signature ends the first; a delay does not split the second; a delta ends it;
# reasoning after the answer began is a block of its own, ended by the tool call.
THINKING = v1(
    think("Let me "),
    think("think.", "sig-1"),
    think("Then "),
    {"kind": "delay", "ms": 5},
    think("more."),
    {"kind": "delta", "text": "4"},
    think("Check: 2+2."),
    {"kind": "delta", "text": "2"},
    think("A tool helps."),
    {"kind": "tool_call_delta", "index": 0, "name": "add", "arguments_fragment": "{}"},
    {"kind": "usage", "input_tokens": 3, "output_tokens": 20, "reasoning_tokens": 15},
    {"kind": "finish", "finish_reason": "tool_calls"},
)
BLOCKS = [
    signed("Let me think.", "sig-1"),
    ReasoningPart(text="Then more."),
    ReasoningPart(text="Check: 2+2."),
    ReasoningPart(text="A tool helps."),
]


def played(events: list[StreamEvent]) -> list[tuple[str, str]]:
    return [
        (event.kind, event.text if isinstance(event, Delta | ReasoningDelta) else "")
        for event in events
        if not isinstance(event, Complete)
    ]


STREAM = [
    ("ReasoningDelta", "Let me "),
    ("ReasoningDelta", "think."),
    ("ReasoningDelta", "Then "),
    ("ReasoningDelta", "more."),
    ("Delta", "4"),
    ("ReasoningDelta", "Check: 2+2."),
    ("Delta", "2"),
    ("ReasoningDelta", "A tool helps."),
    ("ToolCallDelta", ""),
]


def check_law(events: list[StreamEvent], receipt: ExecutionReceipt) -> None:
    assembler = StreamAssembler()
    for event in events:
        assembler.feed(event)
    assert assembler.terminal == Complete(receipt=receipt)
    assert assembler.assembly_problems(receipt) == []


def test_a_scenario_streams_reasoning_and_keeps_its_blocks(text_request: ExecutionRequest) -> None:
    events: list[StreamEvent] = []
    receipt = ScriptedRuntime(THINKING).execute_streaming(text_request, events.append)

    assert played(events) == STREAM
    assert receipt.reasoning == BLOCKS
    assert receipt.text == "42"  # reasoning never enters the answer
    assert receipt.output == "42"
    assert receipt.usage == Usage(input_tokens=3, output_tokens=20, reasoning_tokens=15)
    check_law(events, receipt)
    assert ScriptedRuntime(THINKING).execute(text_request) == receipt


def test_the_async_twin_plays_the_same_reasoning(text_request: ExecutionRequest) -> None:
    events: list[StreamEvent] = []

    async def sink(event: StreamEvent) -> None:
        events.append(event)

    async def go() -> tuple[ExecutionReceipt, ExecutionReceipt]:
        streamed = await AsyncScriptedRuntime(THINKING).execute_streaming(text_request, sink)
        return streamed, await AsyncScriptedRuntime(THINKING).execute(text_request)

    streamed, plain = asyncio.run(go())
    assert played(events) == STREAM
    assert streamed == plain == ScriptedRuntime(THINKING).execute(text_request)


def test_a_turn_with_only_reasoning_answers_with_the_fixture(make_request: MakeRequest) -> None:
    request = make_request(fixture_output="from the fixture")
    receipt = ScriptedRuntime(v1(think("hmm"), {"kind": "finish"})).execute(request)
    assert receipt.reasoning == [ReasoningPart(text="hmm")]
    assert receipt.text is None
    assert receipt.output == "from the fixture"


def test_a_turn_without_reasoning_keeps_its_receipt_shape(text_request: ExecutionRequest) -> None:
    receipt = ScriptedRuntime(v1({"kind": "delta", "text": "hi"}, {"kind": "finish"})).execute(
        text_request
    )
    assert receipt.reasoning is None
    assert "reasoning" not in receipt.model_dump(mode="json")


def test_reasoning_bytes_count_against_the_bound(text_request: ExecutionRequest) -> None:
    scenario = v1(think("ééé"), {"kind": "delta", "text": "ok"}, {"kind": "finish"})
    events: list[StreamEvent] = []
    runtime = ScriptedRuntime(scenario, max_response_bytes=7)
    with pytest.raises(PortError) as caught:
        runtime.execute_streaming(text_request, events.append)
    assert caught.value.code == "TQX_RUNTIME_RESPONSE_TOO_LARGE"
    assert [event.kind for event in events] == ["ReasoningDelta", "Failed"]

    within = ScriptedRuntime(scenario, max_response_bytes=8).execute(text_request)
    assert within.reasoning == [ReasoningPart(text="ééé")]


def test_a_failure_after_reasoning_sends_the_reasoning_then_one_failed(
    text_request: ExecutionRequest,
) -> None:
    scenario = v1(
        think("partial thought"),
        {"kind": "fail", "code": "TQX_RUNTIME_UNAVAILABLE", "message": "reset"},
    )
    events: list[StreamEvent] = []
    with pytest.raises(PortError) as caught:
        ScriptedRuntime(scenario).execute_streaming(text_request, events.append)
    assert caught.value.code == "TQX_RUNTIME_UNAVAILABLE"
    assert events == [
        ReasoningDelta(text="partial thought"),
        Failed(code="TQX_RUNTIME_UNAVAILABLE", message="reset"),
    ]


def handler(request: ExecutionRequest, emit: Emitter) -> None:
    emit.reasoning("Let me ")
    emit.reasoning("think.", signature="sig-1")
    emit.reasoning("Then ")
    emit.delay(5)
    emit.reasoning("more.")
    emit.text("4")
    emit.reasoning("Check: 2+2.")
    emit.text("2")
    emit.reasoning("A tool helps.")
    emit.tool_call_fragment(0, "{}", name="add")
    emit.usage(3, 20, reasoning_tokens=15)
    emit.finish("tool_calls")


def test_a_function_handler_emits_reasoning_like_the_scenario(
    text_request: ExecutionRequest,
) -> None:
    events: list[StreamEvent] = []
    runtime = FunctionRuntime(handler)
    receipt = runtime.execute_streaming(text_request, events.append)

    assert played(events) == STREAM
    check_law(events, receipt)
    assert runtime.execute(text_request) == receipt
    expected = ScriptedRuntime(THINKING).execute(text_request)
    assert receipt.model_dump(exclude={"adapter"}) == expected.model_dump(exclude={"adapter"})


def test_an_async_function_handler_emits_reasoning(text_request: ExecutionRequest) -> None:
    async def model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        await emit.reasoning("Let me ")
        await emit.reasoning("think.", signature="sig-1")
        await emit.text("4")

    events: list[StreamEvent] = []

    async def go() -> tuple[ExecutionReceipt, ExecutionReceipt]:
        runtime = AsyncFunctionRuntime(model)
        return await runtime.execute_streaming(text_request, events.append), await runtime.execute(
            text_request
        )

    streamed, plain = asyncio.run(go())
    assert streamed == plain
    assert streamed.reasoning == [signed("Let me think.", "sig-1")]
    assert [event.kind for event in events] == [
        "ReasoningDelta",
        "ReasoningDelta",
        "Delta",
        "Complete",
    ]


@pytest.mark.parametrize(
    ("text", "signature", "problem"),
    [
        ("", None, "a ReasoningDelta must carry non-empty text"),
        ("x", "", "a reasoning signature is a non-empty string"),
    ],
)
def test_an_empty_reasoning_piece_is_the_handlers_mistake(
    text_request: ExecutionRequest, text: str, signature: str | None, problem: str
) -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        emit.reasoning(text, signature=signature)

    events: list[StreamEvent] = []
    with pytest.raises(TurnUsageError, match=problem):
        FunctionRuntime(model).execute_streaming(text_request, events.append)
    assert events == []  # nothing empty ever reaches the sink


def test_reasoning_after_the_terminal_is_refused(text_request: ExecutionRequest) -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        emit.finish()
        emit.reasoning("too late")

    with pytest.raises(TurnUsageError, match="ReasoningDelta after the turn's terminal"):
        FunctionRuntime(model).execute(text_request)


def test_tool_call_fragments_after_reasoning_are_kept_apart(
    text_request: ExecutionRequest,
) -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        emit.reasoning("call add")
        emit.tool_call("add", {"a": 1})
        emit.reasoning("and mul")
        emit.tool_call("mul", {"b": 2})

    events: list[StreamEvent] = []
    receipt = FunctionRuntime(model).execute_streaming(text_request, events.append)
    assert receipt.reasoning == [ReasoningPart(text="call add"), ReasoningPart(text="and mul")]
    assert [call.name for call in receipt.tool_calls or []] == ["add", "mul"]
    assert [type(event) for event in events[:4]] == [
        ReasoningDelta,
        ToolCallDelta,
        ReasoningDelta,
        ToolCallDelta,
    ]
    check_law(events, receipt)
