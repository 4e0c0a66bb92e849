"""Runs (docs/runs.md): tool turns, correction rounds, retries, fallback and partial evidence, on
scripted upstreams (ScriptedRuntime)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from runport.application import (
    Fallback,
    RunError,
    RunResult,
    Tool,
    run,
    run_stream,
)
from runport.contracts import (
    Complete,
    Delta,
    Failed,
    Message,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.core import StreamAssembler, parse_scenario
from runport.mock import ScriptedRuntime

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"
ANSWER = '{"city": "Delft", "celsius": 12.5}'


def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    return {"city": city, "celsius": 12.5}


WEATHER = Tool.from_function(get_weather)


def deltas(text: str, size: int = 7) -> list[dict[str, Any]]:
    return [{"kind": "delta", "text": text[i : i + size]} for i in range(0, len(text), size)]


def call(index: int, call_id: str, name: str, arguments: str) -> list[dict[str, Any]]:
    half = len(arguments) // 2
    return [
        {
            "kind": "tool_call_delta",
            "index": index,
            "call_id": call_id,
            "name": name,
            "arguments_fragment": arguments[:half],
        },
        {"kind": "tool_call_delta", "index": index, "arguments_fragment": arguments[half:]},
    ]


def finish(reason: str = "stop", tokens: int = 3) -> list[dict[str, Any]]:
    return [
        {"kind": "usage", "input_tokens": tokens, "output_tokens": 1},
        {"kind": "finish", "finish_reason": reason},
    ]


def scripted(*turns: list[dict[str, Any]]) -> ScriptedRuntime:
    scenario = parse_scenario(
        {"api_version": "runport.mock/v1", "id": "run", "turns": [{"events": t} for t in turns]}
    )
    return ScriptedRuntime(scenario)


def NO_SLEEP(seconds: float) -> None:
    raise AssertionError(f"this run must not wait ({seconds} s)")


TOOL_TURN = [*call(0, "c1", "get_weather", '{"city": "Delft"}'), *finish("tool_calls")]
ANSWER_TURN = [*deltas(ANSWER), *finish()]


def both(*turns: list[dict[str, Any]], **kwargs: Any) -> tuple[RunResult, list[StreamEvent]]:
    """Run the script with ``run`` and ``run_stream``; they must agree."""
    plain = run(CONTRACT, scripted(*turns), inputs={"city": "Delft"}, **kwargs)
    events: list[StreamEvent] = []
    streamed = run_stream(
        CONTRACT, scripted(*turns), inputs={"city": "Delft"}, on_event=events.append, **kwargs
    )
    assert streamed == plain
    return plain, events


def roles(result: RunResult) -> list[str]:
    return [m.role for m in result.messages]


def test_a_tool_turn_then_an_answer() -> None:
    result, events = both(TOOL_TURN, ANSWER_TURN, tools=[WEATHER])
    assert result.output == {"city": "Delft", "celsius": 12.5}
    assert result.output_schema_valid is True
    assert len(result.receipts) == 2
    assert roles(result) == ["system", "user", "assistant", "tool", "assistant"]
    tool_call = ToolCall(call_id="c1", name="get_weather", arguments={"city": "Delft"})
    assert result.messages[2] == Message(role="assistant", content="", tool_calls=[tool_call])
    assert result.messages[3] == Message(
        role="tool", content='{"celsius":12.5,"city":"Delft"}', tool_call_id="c1"
    )
    assert result.messages[4] == Message(role="assistant", content=ANSWER)
    assert result.usage == Usage(input_tokens=6, output_tokens=2)
    assert [e.kind for e in events if e.kind in ("Complete", "Failed")] == ["Complete", "Complete"]
    assert events[-1] == Complete(receipt=result.receipts[-1])


def test_the_second_turn_sends_the_whole_conversation_and_the_offered_tools() -> None:
    runtime = scripted(TOOL_TURN, ANSWER_TURN)
    result = run(CONTRACT, runtime, inputs={"city": "Delft"}, tools=[WEATHER])
    first, second = result.receipts
    assert first.request_fingerprint != second.request_fingerprint
    assert runtime.stats().attempts == 2


def test_two_parallel_tools_run_in_index_order() -> None:
    seen: list[str] = []

    def lookup(city: str) -> str:
        seen.append(city)
        return f"{city}: 10"

    turn = [
        *call(1, "c-b", "lookup", '{"city": "Gouda"}')[:1],
        *call(0, "c-a", "lookup", '{"city": "Delft"}'),
        *call(1, "c-b", "lookup", '{"city": "Gouda"}')[1:],
        *finish("tool_calls"),
    ]
    result, _ = both(turn, ANSWER_TURN, tools=[WEATHER, lookup])
    assert seen == ["Delft", "Gouda", "Delft", "Gouda"]  # run, then run_stream
    assert [(m.tool_call_id, m.content) for m in result.messages if m.role == "tool"] == [
        ("c-a", "Delft: 10"),
        ("c-b", "Gouda: 10"),
    ]


@pytest.mark.parametrize(
    ("name", "arguments", "needle"),
    [
        ("teleport", '{"to": "Mars"}', "no such tool was offered"),
        ("get_weather", '{"town": "Delft"}', "invalid arguments"),
        ("get_weather", "[1, 2]", "must be a JSON object"),
        ("get_weather", "{not json", "must be a JSON object"),
    ],
)
def test_a_bad_call_gets_a_rejection_and_the_model_answers_again(
    name: str, arguments: str, needle: str
) -> None:
    bad = [*call(0, "c1", name, arguments), *finish("tool_calls")]
    result, _ = both(bad, ANSWER_TURN, tools=[WEATHER])
    (rejection,) = [m for m in result.messages if m.role == "tool"]
    assert rejection.tool_call_id == "c1"
    assert rejection.content.startswith(f"rejected: tool {name!r}")
    assert needle in rejection.content
    assert result.output == {"city": "Delft", "celsius": 12.5}


def test_a_contract_tool_without_an_implementation_is_rejected() -> None:
    result, _ = both(TOOL_TURN, ANSWER_TURN)
    (rejection,) = [m for m in result.messages if m.role == "tool"]
    assert "no implementation" in rejection.content


def test_an_invalid_answer_gets_a_correction_then_succeeds() -> None:
    wrong = [*deltas('{"city": "Delft", "celsius": "warm"}'), *finish()]
    result, events = both(wrong, ANSWER_TURN)
    assert roles(result) == ["system", "user", "assistant", "user", "assistant"]
    correction = result.messages[3].content
    assert "/celsius" in correction
    assert "'warm' is not of type 'number'" in correction
    assert result.receipts[0].output_schema_valid is False
    assert "".join(e.text for e in events if isinstance(e, Delta)) == (
        '{"city": "Delft", "celsius": "warm"}' + ANSWER
    )


def test_corrections_exhausted_is_an_output_error_never_a_best_effort() -> None:
    wrong = [*deltas("not json"), *finish()]
    with pytest.raises(RunError) as raised:
        run(CONTRACT, scripted(wrong, wrong, wrong), inputs={"city": "Delft"}, max_corrections=2)
    error = raised.value
    assert (error.stage, error.code) == ("output", "TQX_RUN_CORRECTIONS_EXHAUSTED")
    assert len(error.partial.receipts) == 3
    assert error.partial.messages[-1] == Message(role="assistant", content="not json")


def test_rejections_share_the_correction_budget() -> None:
    bad = [*call(0, "c1", "teleport", "{}"), *finish("tool_calls")]
    wrong = [*deltas("nope"), *finish()]
    with pytest.raises(RunError) as raised:
        run(CONTRACT, scripted(bad, wrong, bad), inputs={"city": "Delft"}, max_corrections=2)
    assert (raised.value.stage, raised.value.code) == ("tool", "TQX_RUN_CORRECTIONS_EXHAUSTED")


def test_turns_exhausted() -> None:
    with pytest.raises(RunError) as raised:
        run(
            CONTRACT,
            scripted(TOOL_TURN, TOOL_TURN, TOOL_TURN),
            inputs={"city": "Delft"},
            tools=[WEATHER],
            max_turns=2,
        )
    assert (raised.value.stage, raised.value.code) == ("model", "TQX_RUN_TURNS_EXHAUSTED")
    assert len(raised.value.partial.receipts) == 2


def test_a_tool_that_raises_ends_the_run_with_its_exception_chained() -> None:
    boom = RuntimeError("database down")

    def get_weather(city: str) -> str:
        raise boom

    with pytest.raises(RunError) as raised:
        run(
            CONTRACT,
            scripted(TOOL_TURN, ANSWER_TURN),
            inputs={"city": "Delft"},
            tools=[Tool.from_function(get_weather)],
        )
    assert (raised.value.stage, raised.value.code) == ("tool", "TQX_TOOL_FAILED")
    assert raised.value.__cause__ is boom
    assert raised.value.partial.messages[-1].tool_calls is not None


def test_history_is_repaired_and_the_repairs_are_warnings() -> None:
    history = [
        Message(role="user", content="earlier question"),
        Message(
            role="assistant",
            content="",
            tool_calls=[
                ToolCall(call_id="h1", name="get_weather", arguments={"city": "Gouda"}),
                ToolCall(call_id="h2", name="get_weather", arguments={"city": "Ede"}),
            ],
        ),
        Message(role="tool", content="8", tool_call_id="h1"),
        Message(role="tool", content="orphan", tool_call_id="zz"),
        Message(role="assistant", content="It is 8 in Gouda."),
    ]
    result, _ = both(ANSWER_TURN, history=history)
    assert [m.role for m in result.messages[:7]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
    ]
    assert result.messages[4] == Message(
        role="tool",
        content="interrupted before execution; no result was produced",
        tool_call_id="h2",
    )
    assert all(m.tool_call_id != "zz" for m in result.messages)
    assert len(result.warnings) == 2
    assert any("'h2'" in w for w in result.warnings)
    assert any("'zz'" in w for w in result.warnings)


RATE_LIMITED = [
    {
        "kind": "fail",
        "code": "TQX_RUNTIME_RATE_LIMITED",
        "message": "slow down",
        "retry_after_ms": 1500,
    }
]
RESET = [{"kind": "fail", "code": "TQX_RUNTIME_UNAVAILABLE", "message": "reset"}]


def test_run_stream_does_not_retry_once_a_delta_was_shown() -> None:
    cut = [*deltas('{"city": "De'), *RESET]
    runtime = scripted(cut, ANSWER_TURN)
    events: list[StreamEvent] = []
    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT, runtime, inputs={"city": "Delft"}, on_event=events.append, sleep=NO_SLEEP
        )
    assert (raised.value.stage, raised.value.code) == ("model", "TQX_RUNTIME_UNAVAILABLE")
    assert raised.value.partial.text == '{"city": "De'
    assert runtime.stats().attempts == 1
    assert events[-1] == Failed(code="TQX_RUNTIME_UNAVAILABLE", message="reset")


def test_fallback_moves_on_before_the_first_delta_and_shows_one_terminal() -> None:
    first, second = scripted(RESET), scripted(ANSWER_TURN)
    events: list[StreamEvent] = []
    result = run_stream(
        CONTRACT, Fallback([first, second]), inputs={"city": "Delft"}, on_event=events.append
    )
    assert [e.kind for e in events].count("Failed") == 0
    assert [e.kind for e in events][-1] == "Complete"
    assert result.receipts[0].adapter.id == "runport-mock"
    assert (first.stats().attempts, second.stats().attempts) == (1, 1)
    plain = run(
        CONTRACT, Fallback([scripted(RESET), scripted(ANSWER_TURN)]), inputs={"city": "Delft"}
    )
    assert plain == result


def test_fallback_does_not_move_on_after_a_delta() -> None:
    cut = [*deltas('{"ci'), *RESET]
    first, second = scripted(cut), scripted(ANSWER_TURN)
    events: list[StreamEvent] = []
    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT, Fallback([first, second]), inputs={"city": "Delft"}, on_event=events.append
        )
    assert raised.value.code == "TQX_RUNTIME_UNAVAILABLE"
    assert events == [Delta(text='{"ci'), Failed(code="TQX_RUNTIME_UNAVAILABLE", message="reset")]
    assert second.stats().attempts == 0


def test_fallback_does_not_move_on_after_a_permanent_failure() -> None:
    permanent = [{"kind": "fail", "code": "TQX_RUNTIME_PERMANENT", "message": "no"}]
    second = scripted(ANSWER_TURN)
    with pytest.raises(RunError):
        run(CONTRACT, Fallback([scripted(permanent), second]), inputs={"city": "Delft"})
    assert second.stats().attempts == 0


def test_fallback_descriptor_shares_capabilities() -> None:
    descriptor = Fallback([scripted(ANSWER_TURN), scripted(ANSWER_TURN)]).descriptor()
    assert descriptor.id == "fallback"
    assert descriptor.capabilities == [
        "composite",
        "streaming",
        "structured_output",
        "text",
        "tool_calls",
    ]
    with pytest.raises(ValueError, match="at least one"):
        Fallback([])


def _script_events() -> list[list[dict[str, Any]]]:
    return [TOOL_TURN, [*deltas("oops"), *finish()], ANSWER_TURN]


def test_a_caller_stop_on_any_event_ends_the_run_and_no_call_follows() -> None:
    total: list[StreamEvent] = []
    run_stream(
        CONTRACT,
        scripted(*_script_events()),
        inputs={"city": "Delft"},
        on_event=total.append,
        tools=[WEATHER],
    )
    for k in range(len(total)):
        runtime = scripted(*_script_events())
        stop = KeyError(f"stop at {k}")
        count = 0

        def on_event(event: StreamEvent, k: int = k, stop: KeyError = stop) -> None:
            nonlocal count
            if count == k:
                raise stop
            count += 1

        with pytest.raises(RunError) as raised:
            run_stream(
                CONTRACT, runtime, inputs={"city": "Delft"}, on_event=on_event, tools=[WEATHER]
            )
        assert (raised.value.stage, raised.value.code) == ("model", "TQX_CALLER_STOPPED")
        assert raised.value.__cause__ is stop
        # an event the run adds between turns belongs to no turn: the next one has not begun
        turns_started = sum(1 for e in total[: k + 1] if e.kind in ("Complete", "Failed")) + (
            0 if total[k].kind in ("Complete", "Failed", "ToolResult", "AnswerRejected") else 1
        )
        assert runtime.stats().attempts == turns_started


def test_input_and_compile_failures_have_their_stages() -> None:
    with pytest.raises(RunError) as raised:
        run(CONTRACT, scripted(ANSWER_TURN), inputs={})
    assert (raised.value.stage, raised.value.code) == ("input", "TQX_VALUE_REQUIRED")
    with pytest.raises(RunError) as raised:
        run(CONTRACT.with_name("missing.yaml"), scripted(ANSWER_TURN), inputs={"city": "x"})
    assert raised.value.stage == "compile"


def test_tool_from_function_builds_a_strict_schema_and_validates() -> None:
    def add(a: int, b: int = 2) -> int:
        """Add two numbers.

        More text that is not part of the description."""
        return a + b

    tool = Tool.from_function(add)
    assert tool.name == "add"
    assert tool.description == "Add two numbers."
    assert tool.parameters["required"] == ["a"]
    assert tool.parameters["additionalProperties"] is False
    assert tool.call({"a": 1}) == 3
    renamed = Tool.from_function(add, name="plus", description="d")
    assert (renamed.name, renamed.description) == ("plus", "d")


def test_streamed_events_regroup_into_each_turns_receipt() -> None:
    result, events = both(TOOL_TURN, [*deltas("bad"), *finish()], ANSWER_TURN, tools=[WEATHER])
    turns: list[StreamAssembler] = [StreamAssembler()]
    for event in events:
        if event.kind in ("ToolResult", "AnswerRejected"):
            continue  # what the run adds between turns
        turns[-1].feed(event)
        if turns[-1].done:
            turns.append(StreamAssembler())
    turns.pop()
    assert len(turns) == len(result.receipts)
    for assembler, receipt in zip(turns, result.receipts, strict=True):
        assert assembler.assembly_problems(receipt) == []
        assert assembler.terminal == Complete(receipt=receipt)
    assert json.loads(result.receipts[-1].text or "") == result.output
    assert any(isinstance(e, ToolCallDelta) for e in events)


def test_a_malformed_date_argument_is_rejected_not_a_tool_failure() -> None:
    booked: list[date] = []

    def book(city: str, when: date) -> str:
        booked.append(when)
        return "booked"

    bad = [*call(0, "c1", "book", '{"city": "Delft", "when": "not-a-date"}'), *finish("tool_calls")]
    good = [
        *call(0, "c2", "book", '{"city": "Delft", "when": "2026-12-01"}'),
        *finish("tool_calls"),
    ]
    result, _ = both(bad, good, ANSWER_TURN, tools=[book])
    rejection, success = [m for m in result.messages if m.role == "tool"]
    assert rejection.content.startswith("rejected: tool 'book' was not run: invalid arguments")
    assert "when" in rejection.content
    assert success.content == "booked"
    assert booked == [date(2026, 12, 1), date(2026, 12, 1)]  # run, then run_stream


def test_the_request_carries_the_conversation_and_every_offered_tool() -> None:
    from runport.contracts import AdapterDescriptor, ExecutionReceipt, ExecutionRequest
    from runport.ports import RuntimeAdapter

    class Recording(RuntimeAdapter):
        def __init__(self, inner: ScriptedRuntime) -> None:
            self.inner = inner
            self.requests: list[ExecutionRequest] = []

        def descriptor(self) -> AdapterDescriptor:
            return self.inner.descriptor()

        def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
            self.requests.append(request)
            return self.inner.execute(request)

    def extra(q: str) -> str:
        """An extra tool the contract does not declare."""
        return q

    adapter = Recording(scripted(TOOL_TURN, ANSWER_TURN))
    run(CONTRACT, adapter, inputs={"city": "Delft"}, tools=[WEATHER, extra])
    first, second = adapter.requests
    assert [t.name for t in first.interaction.tools or []] == ["get_weather", "extra"]
    weather_spec = (first.interaction.tools or [])[0]
    assert weather_spec.description == "Current temperature for a city."  # the contract's spec
    assert [m.role for m in first.interaction.messages] == ["system", "user"]
    assert [m.role for m in second.interaction.messages] == ["system", "user", "assistant", "tool"]
    assert second.interaction.messages[3].tool_call_id == "c1"


def test_stopping_on_a_turns_complete_keeps_that_receipt() -> None:
    def on_event(event: StreamEvent) -> None:
        if isinstance(event, Complete):
            raise KeyboardInterruptLike

    with pytest.raises(RunError) as raised:
        run_stream(CONTRACT, scripted(ANSWER_TURN), inputs={"city": "Delft"}, on_event=on_event)
    assert raised.value.code == "TQX_CALLER_STOPPED"
    assert len(raised.value.partial.receipts) == 1
    assert raised.value.partial.text == ANSWER


KeyboardInterruptLike = LookupError("stop here")


def test_a_port_error_raised_by_the_handler_is_a_caller_stop_even_inside_fallback() -> None:
    from runport.ports import PortError

    mine = PortError("TQX_RUNTIME_UNAVAILABLE", "raised by the handler")

    def on_event(event: StreamEvent) -> None:
        raise mine

    second = scripted(ANSWER_TURN)
    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT,
            Fallback([scripted(ANSWER_TURN), second]),
            inputs={"city": "Delft"},
            on_event=on_event,
        )
    assert raised.value.code == "TQX_CALLER_STOPPED"
    assert raised.value.__cause__ is mine
    assert second.stats().attempts == 0


def test_a_streamed_fallback_whose_members_all_fail_shows_exactly_one_failed() -> None:
    events: list[StreamEvent] = []
    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT,
            Fallback([scripted(RESET), scripted(RATE_LIMITED)]),
            inputs={"city": "Delft"},
            on_event=events.append,
            max_attempts=1,
        )
    assert raised.value.code == "TQX_HOST_RETRY_EXHAUSTED"
    assert events == [Failed(code="TQX_RUNTIME_RATE_LIMITED", message="slow down")]
