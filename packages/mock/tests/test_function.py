"""``FunctionRuntime``: a model written as a function keeps the whole streaming law."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance import RuntimeAdapterConformance, Upstream
from runport.contracts import (
    CompiledInteraction,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    Message,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.core import (
    StreamAssembler,
)
from runport.mock import (
    AsyncEmitter,
    AsyncFunctionRuntime,
    Emitter,
    FunctionRuntime,
    RuntimeStats,
    TurnUsageError,
)
from runport.ports import PortError, RuntimeAdapter

from .scenario_handlers import scenario_handler

OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
}
MakeRequest = Any


class TestFunctionRuntime(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return FunctionRuntime(scenario_handler(upstream.scenario))


def stream(
    runtime: RuntimeAdapter, request: ExecutionRequest
) -> tuple[list[StreamEvent], ExecutionReceipt | BaseException]:
    events: list[StreamEvent] = []
    try:
        return events, runtime.execute_streaming(request, events.append)
    except Exception as error:
        return events, error


def test_three_lines_say_what_the_model_does(text_request: ExecutionRequest) -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        emit.text("Hel")
        emit.text("lo")
        emit.usage(5, 2)

    events, receipt = stream(FunctionRuntime(model), text_request)

    assert isinstance(receipt, ExecutionReceipt)
    assert events == [Delta(text="Hel"), Delta(text="lo"), Complete(receipt=receipt)]
    assert (receipt.text, receipt.output, receipt.finish_reason) == ("Hello", "Hello", "stop")
    assert receipt.usage == Usage(input_tokens=5, output_tokens=2)
    assert receipt.adapter.id == "runport-function"


def test_execute_and_streaming_give_the_same_receipt(make_request: MakeRequest) -> None:
    runtime = FunctionRuntime(lambda request, emit: emit.text('{"answer": 4}'))
    request = make_request(OBJECT_SCHEMA)

    plain = runtime.execute(request)
    _, streamed = stream(runtime, request)

    assert plain == streamed
    assert plain.output == {"answer": 4}
    assert plain.output_schema_valid is True
    assert runtime.stats() == RuntimeStats(attempts=2, elapsed_ms=0)
    assert runtime.requests == (request, request)


def test_a_whole_tool_call_is_one_fragment_and_finishes_as_tool_calls(
    text_request: ExecutionRequest,
) -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        emit.tool_call("add", {"b": 2, "a": 1})
        emit.tool_call("add", {"a": 3, "b": 4}, call_id="second")

    events, receipt = stream(FunctionRuntime(model), text_request)

    assert events[:2] == [
        ToolCallDelta(index=0, call_id="call_0", name="add", arguments_fragment='{"a": 1, "b": 2}'),
        ToolCallDelta(index=1, call_id="second", name="add", arguments_fragment='{"a": 3, "b": 4}'),
    ]
    assert isinstance(receipt, ExecutionReceipt)
    assert receipt.tool_calls == [
        ToolCall(call_id="call_0", name="add", arguments={"a": 1, "b": 2}),
        ToolCall(call_id="second", name="add", arguments={"a": 3, "b": 4}),
    ]
    assert receipt.finish_reason == "tool_calls"
    assert receipt.output is None


def test_fragments_inherit_the_calls_identity(text_request: ExecutionRequest) -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        emit.tool_call_fragment(0, '{"a":', name="add", call_id="c1")
        emit.tool_call_fragment(0, " 1}")

    events, receipt = stream(FunctionRuntime(model), text_request)

    assert events[1] == ToolCallDelta(index=0, call_id="c1", name="add", arguments_fragment=" 1}")
    assert isinstance(receipt, ExecutionReceipt)
    assert receipt.tool_calls == [ToolCall(call_id="c1", name="add", arguments={"a": 1})]


def test_a_raised_port_error_is_one_failed_after_the_progress(
    text_request: ExecutionRequest,
) -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        emit.text("par")
        raise PortError("TQX_RUNTIME_UNAVAILABLE", "reset", retry_after_ms=5)

    events, error = stream(FunctionRuntime(model), text_request)

    assert isinstance(error, PortError)
    assert error.retry_after_ms == 5
    assert events == [Delta(text="par"), Failed(code="TQX_RUNTIME_UNAVAILABLE", message="reset")]


def test_the_byte_bound_fails_the_turn_even_if_the_handler_swallows_it(
    make_request: MakeRequest,
) -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        emit.text("abc")
        with contextlib.suppress(PortError):
            emit.text("def")

    request = make_request(runtime_policy={"max_response_bytes": 4})
    events, error = stream(FunctionRuntime(model), request)

    assert isinstance(error, PortError)
    assert error.code == "TQX_RUNTIME_RESPONSE_TOO_LARGE"
    assert [e.kind for e in events] == ["Delta", "Failed"]
    _, smaller = stream(FunctionRuntime(model, max_response_bytes=2), make_request())
    assert isinstance(smaller, PortError)
    assert "(2 bytes)" in smaller.message


def test_an_unusable_request_bound_is_refused_before_the_handler_runs(
    make_request: MakeRequest,
) -> None:
    called: list[ExecutionRequest] = []
    runtime = FunctionRuntime(lambda request, emit: called.append(request))

    events, error = stream(runtime, make_request(runtime_policy={"max_response_bytes": "big"}))

    assert isinstance(error, PortError)
    assert error.code == "TQX_DATA_INVALID"
    assert [e.kind for e in events] == ["Failed"]
    assert called == []


def test_a_caller_stop_ends_the_call_even_if_the_handler_catches_it(
    text_request: ExecutionRequest,
) -> None:
    after: list[str] = []

    def model(request: ExecutionRequest, emit: Emitter) -> None:
        try:
            emit.text("one")
        except RuntimeError:
            after.append("caught")
        emit.text("two")

    seen: list[StreamEvent] = []

    def sink(event: StreamEvent) -> None:
        seen.append(event)
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        FunctionRuntime(model).execute_streaming(text_request, sink)
    assert seen == [Delta(text="one")]
    assert after == ["caught"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (lambda emit: (emit.finish(), emit.text("late")), "Delta after the turn's terminal"),
        (lambda emit: emit.text(""), "non-empty"),
        (lambda emit: emit.tool_call_fragment(0, "{}"), "must give its name"),
        (lambda emit: emit.delay(0), "positive whole number"),
    ],
)
def test_a_handler_that_breaks_the_grammar_is_told_so(
    body: Any, message: str, text_request: ExecutionRequest
) -> None:
    runtime = FunctionRuntime(lambda request, emit: body(emit))
    with pytest.raises(TurnUsageError, match=message):
        runtime.execute(text_request)


def test_finish_may_state_the_output_and_reason(make_request: MakeRequest) -> None:
    runtime = FunctionRuntime(lambda request, emit: emit.finish("length", output={"answer": 1}))
    receipt = runtime.execute(make_request(OBJECT_SCHEMA))
    assert (receipt.output, receipt.finish_reason, receipt.text) == ({"answer": 1}, "length", None)


@pytest.mark.parametrize(
    ("arguments", "finish", "finish_reason"),
    [
        ({"finish_reason": "length"}, "length", "length"),
        ({"finish": "length"}, "length", "length"),
        ({"finish_reason": "max_tokens", "finish": "length"}, "length", "max_tokens"),
        ({"finish_reason": "content_filter"}, "content_filter", "content_filter"),
        ({"finish_reason": "refusal", "finish": "content_filter"}, "content_filter", "refusal"),
        ({"finish_reason": "pause_turn", "finish": "pause"}, "pause", "pause_turn"),
        ({"finish_reason": "pause_turn"}, "other", "pause_turn"),
    ],
)
def test_finish_ends_a_turn_every_way_a_provider_does(
    arguments: dict[str, Any], finish: str, finish_reason: str, text_request: ExecutionRequest
) -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        emit.text("Searching")
        emit.finish(**arguments)

    async def amodel(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        await emit.text("Searching")
        await emit.finish(**arguments)

    receipt = FunctionRuntime(model).execute(text_request)
    assert (receipt.finish, receipt.finish_reason) == (finish, finish_reason)
    assert asyncio.run(AsyncFunctionRuntime(amodel).execute(text_request)) == receipt
    # the receipt's bytes keep runport's word where it differs from the provider's
    assert ExecutionReceipt.model_validate_json(receipt.model_dump_json()) == receipt


def test_finish_with_a_word_runport_lacks_is_the_handlers_mistake(
    text_request: ExecutionRequest,
) -> None:
    runtime = FunctionRuntime(lambda request, emit: emit.finish(finish="truncated"))  # type: ignore[arg-type]
    with pytest.raises(TurnUsageError, match="finish must be one of runport's words"):
        runtime.execute(text_request)


def test_a_silent_turn_answers_with_the_fixture_output(make_request: MakeRequest) -> None:
    runtime = FunctionRuntime(lambda request, emit: emit.delay(25))
    receipt = runtime.execute(make_request(OBJECT_SCHEMA, fixture_output={"answer": 2}))
    assert receipt.output == {"answer": 2}
    assert receipt.output_schema_valid is True
    assert runtime.stats().elapsed_ms == 25


def test_capabilities_and_id_are_the_tests_to_choose(text_request: ExecutionRequest) -> None:
    runtime = FunctionRuntime(lambda r, e: None, capabilities=["text"], adapter_id="plain")
    assert runtime.descriptor().capabilities == ["text"]
    assert runtime.execute(text_request).adapter.id == "plain"
    with pytest.raises(TypeError, match="callable handler"):
        FunctionRuntime("hello")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative integer"):
        FunctionRuntime(lambda r, e: None, max_response_bytes=-1)


Step = tuple[str, Any]


@st.composite
def programs(draw: st.DrawFn) -> list[Step]:
    """What a handler does: text and reasoning pieces, fragments of up to three calls, usage,
    in any order."""
    steps: list[Step] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["text", "reasoning", "fragment", "usage"]))
        if kind in ("text", "reasoning"):
            steps.append((kind, draw(st.text(min_size=1, max_size=6))))
        elif kind == "fragment":
            steps.append(
                ("fragment", (draw(st.integers(0, 2)), draw(st.text(min_size=1, max_size=5))))
            )
        else:
            steps.append(("usage", (draw(st.integers(0, 9)), draw(st.integers(0, 9)))))
    return steps


def perform(steps: list[Step]) -> Any:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        for kind, value in steps:
            if kind == "text":
                emit.text(value)
            elif kind == "reasoning":
                emit.reasoning(value)
            elif kind == "fragment":
                index, piece = value
                emit.tool_call_fragment(index, piece, name=f"tool{index}")
            else:
                emit.usage(*value)

    return model


@settings(deadline=None)
@given(steps=programs(), bound=st.none() | st.integers(0, 40))
def test_any_program_keeps_the_law(steps: list[Step], bound: int | None) -> None:
    request = ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test/0",
            contract_id="mock-test",
            contract_version="1.0.0",
            messages=[Message(role="user", content="go")],
            output_schema={"type": "string"},
        )
    )
    runtime = FunctionRuntime(perform(steps), max_response_bytes=bound)
    events, ending = stream(runtime, request)
    assembler = StreamAssembler()
    for event in events:
        assembler.feed(event)
    played = sum(
        len(str(v if k in ("text", "reasoning") else v[1]).encode())
        for k, v in steps
        if k != "usage"
    )
    if bound is not None and played > bound:
        assert isinstance(ending, PortError)
        assert ending.code == "TQX_RUNTIME_RESPONSE_TOO_LARGE"
        assert isinstance(assembler.terminal, Failed)
        return
    assert isinstance(ending, ExecutionReceipt)
    assert assembler.terminal == Complete(receipt=ending)
    assert assembler.assembly_problems(ending) == []
    assert runtime.execute(request) == ending
    thought = "".join(value for kind, value in steps if kind == "reasoning")
    assert "".join(part.text for part in ending.reasoning or []) == thought
    calls = {value[0] for kind, value in steps if kind == "fragment"}
    assert ending.finish_reason == ("tool_calls" if calls else "stop")
