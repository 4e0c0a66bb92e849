"""ScriptedRuntime keeps the streaming law (docs/streaming-law.md) while playing scenarios
(docs/scenarios.md)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
    fingerprint,
)
from runport.core import Scenario, StreamAssembler, load_scenario, parse_scenario
from runport.mock import RuntimeStats, ScriptedRuntime, create_adapter
from runport.ports import PortError

SCENARIOS = Path(__file__).parent / "scenarios"
MakeRequest = Callable[..., ExecutionRequest]

OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
}

FINISH: dict[str, Any] = {"kind": "finish", "finish_reason": "stop"}


def v1(*turns: list[dict[str, Any]]) -> Scenario:
    return parse_scenario(
        {
            "api_version": "runport.mock/v1",
            "id": "scripted",
            "turns": [{"events": events} for events in turns],
        }
    )


def delta(text: str) -> dict[str, Any]:
    return {"kind": "delta", "text": text}


def tqx_steps(*steps: dict[str, Any]) -> Scenario:
    return parse_scenario(
        {
            "api_version": "templiqx.mock/v1alpha1",
            "id": "tqx",
            "contract": "extract",
            "kind": "happy_path",
            "receipt_payload_policy": "fingerprints_only",
            "steps": [{"id": "in", "kind": "request_received"}, *steps],
        }
    )


def tqx_events(*events: dict[str, Any]) -> Scenario:
    return parse_scenario(
        {
            "api_version": "templiqx.mock/v1alpha1",
            "id": "tqx",
            "contract": "extract",
            "kind": "happy_path",
            "receipt_payload_policy": "fingerprints_only",
            "events": [
                {"id": "s", "kind": "start"},
                *events,
                {"id": "e", "kind": "end"},
                {"id": "f", "kind": "finish", "output_schema_valid": True},
            ],
        }
    )


def tqx_finish_with(output: Any, *events: dict[str, Any]) -> Scenario:
    return parse_scenario(
        {
            "api_version": "templiqx.mock/v1alpha1",
            "id": "tqx",
            "contract": "extract",
            "kind": "happy_path",
            "receipt_payload_policy": "fingerprints_only",
            "events": [
                {"id": "s", "kind": "start"},
                *events,
                {"id": "e", "kind": "end"},
                {"id": "f", "kind": "finish", "output": output},
            ],
        }
    )


def stream(
    runtime: ScriptedRuntime, request: ExecutionRequest
) -> tuple[list[StreamEvent], ExecutionReceipt | PortError]:
    """Every event the sink saw, and the receipt returned or the PortError raised."""
    events: list[StreamEvent] = []
    try:
        return events, runtime.execute_streaming(request, events.append)
    except PortError as error:
        return events, error


def grammar_checked(events: list[StreamEvent]) -> StreamAssembler:
    """Law 1: progress events, exactly one terminal, last (the assembler raises otherwise)."""
    assembler = StreamAssembler()
    for event in events:
        assembler.feed(event)
    assert assembler.done
    assert [isinstance(event, Complete | Failed) for event in events] == [
        *([False] * (len(events) - 1)),
        True,
    ]
    return assembler


# ---- descriptor and construction ------------------------------------------------------------


def test_descriptor_names_the_mock_and_its_capabilities() -> None:
    runtime = ScriptedRuntime(v1([FINISH]))

    assert runtime.descriptor() == AdapterDescriptor(
        id="runport-mock",
        version=metadata.version("runport-mock"),
        capabilities=["streaming", "structured_output", "text", "tool_calls"],
        provider="runport.mock",
        model="scripted",
    )


def test_from_scenario_reads_a_file(text_request: ExecutionRequest) -> None:
    runtime = ScriptedRuntime.from_scenario(SCENARIOS / "greet.yaml")

    assert runtime.scenario == load_scenario(SCENARIOS / "greet.yaml")
    assert runtime.execute(text_request).output == "Hello"


def test_create_adapter_plays_the_named_scenario(text_request: ExecutionRequest) -> None:
    runtime = create_adapter(scenario=str(SCENARIOS / "greet.yaml"))

    assert isinstance(runtime, ScriptedRuntime)
    assert runtime.execute(text_request).text == "Hello"


def test_create_adapter_needs_a_scenario() -> None:
    with pytest.raises(ValueError, match=r"^the mock adapter needs a scenario file \(--scenario"):
        create_adapter()


def test_the_entry_point_is_create_adapter() -> None:
    (entry,) = metadata.entry_points(group="runport.adapters", name="mock")

    assert entry.value == "runport.mock:create_adapter"
    assert entry.load() is create_adapter


@pytest.mark.parametrize("limit", [-1, True, 1.5, "8"])
def test_constructor_refuses_a_bad_byte_limit(limit: Any) -> None:
    with pytest.raises(ValueError, match="max_response_bytes must be a non-negative integer"):
        ScriptedRuntime(v1([FINISH]), max_response_bytes=limit)


def test_constructor_refuses_what_is_not_a_scenario() -> None:
    with pytest.raises(TypeError, match="a ScriptedRuntime plays a Scenario, not dict"):
        ScriptedRuntime({"turns": []})  # type: ignore[arg-type]


# ---- law 1 + 3: grammar and assembly --------------------------------------------------------


def test_text_turn_streams_each_delta_then_complete(text_request: ExecutionRequest) -> None:
    runtime = ScriptedRuntime.from_scenario(SCENARIOS / "greet.yaml")

    events, receipt = stream(runtime, text_request)

    assert isinstance(receipt, ExecutionReceipt)
    assert events == [Delta(text="Hel"), Delta(text="lo"), Complete(receipt=receipt)]
    assert receipt == ExecutionReceipt(
        adapter=runtime.descriptor(),
        request_fingerprint=fingerprint(text_request.interaction),
        output_fingerprint=fingerprint("Hello"),
        output="Hello",
        output_schema_valid=True,
        text="Hello",
        finish_reason="stop",
        usage=Usage(input_tokens=5, output_tokens=2),
    )
    assert grammar_checked(events).assembly_problems(receipt) == []


def test_structured_turn_parses_the_joined_text(json_request: ExecutionRequest) -> None:
    runtime = ScriptedRuntime(v1([delta('{"answer"'), delta(": 4"), delta("2}"), FINISH]))

    events, receipt = stream(runtime, json_request)

    assert isinstance(receipt, ExecutionReceipt)
    assert receipt.output == {"answer": 42}
    assert receipt.output_fingerprint == fingerprint({"answer": 42})
    assert receipt.output_schema_valid is True
    assert receipt.text == '{"answer": 42}'
    assert grammar_checked(events).assembly_problems(receipt) == []


def test_structured_turn_keeps_non_json_text_as_invalid(json_request: ExecutionRequest) -> None:
    receipt = ScriptedRuntime(v1([delta("not "), delta("json"), FINISH])).execute(json_request)

    assert receipt.output == "not json"
    assert receipt.output_schema_valid is False


def test_interleaved_tool_calls_assemble_in_index_order(text_request: ExecutionRequest) -> None:
    scenario = v1(
        [
            {"kind": "tool_call_delta", "index": 2, "name": "search", "arguments_fragment": ""},
            {"kind": "tool_call_delta", "index": 0, "call_id": "a0", "name": "add",
             "arguments_fragment": '{"a": '},
            {"kind": "tool_call_delta", "index": 2, "arguments_fragment": '{"q": "w'},
            {"kind": "tool_call_delta", "index": 1, "call_id": "b1", "name": "echo",
             "arguments_fragment": "not json"},
            {"kind": "tool_call_delta", "index": 0, "arguments_fragment": "1}"},
            {"kind": "tool_call_delta", "index": 2, "call_id": "call_2",
             "arguments_fragment": 'ind"}'},
            {"kind": "finish", "finish_reason": "tool_calls"},
        ]
    )  # fmt: skip
    runtime = ScriptedRuntime(scenario)

    events, receipt = stream(runtime, text_request)

    assert isinstance(receipt, ExecutionReceipt)
    assert events[:-1] == [
        ToolCallDelta(index=2, call_id="call_2", name="search", arguments_fragment=""),
        ToolCallDelta(index=0, call_id="a0", name="add", arguments_fragment='{"a": '),
        ToolCallDelta(index=2, call_id="call_2", name="search", arguments_fragment='{"q": "w'),
        ToolCallDelta(index=1, call_id="b1", name="echo", arguments_fragment="not json"),
        ToolCallDelta(index=0, call_id="a0", name="add", arguments_fragment="1}"),
        ToolCallDelta(index=2, call_id="call_2", name="search", arguments_fragment='ind"}'),
    ]
    assert receipt.tool_calls == [
        ToolCall(call_id="a0", name="add", arguments={"a": 1}),
        ToolCall(call_id="b1", name="echo", arguments="not json"),
        ToolCall(call_id="call_2", name="search", arguments={"q": "wind"}),
    ]
    assert receipt.output is None
    assert receipt.output_fingerprint == fingerprint(None)
    assert receipt.output_schema_valid is None
    assert receipt.text is None
    assert receipt.finish_reason == "tool_calls"
    assert grammar_checked(events).assembly_problems(receipt) == []


def test_text_and_tool_calls_in_one_turn(text_request: ExecutionRequest) -> None:
    scenario = v1(
        [
            delta("Let me add."),
            {"kind": "tool_call_delta", "index": 0, "name": "add", "arguments_fragment": "{}"},
            FINISH,
        ]
    )

    events, receipt = stream(ScriptedRuntime(scenario), text_request)

    assert isinstance(receipt, ExecutionReceipt)
    assert receipt.text == "Let me add."
    assert receipt.output == "Let me add."
    assert receipt.output_schema_valid is None
    assert receipt.tool_calls == [ToolCall(call_id="call_0", name="add", arguments={})]
    assert grammar_checked(events).assembly_problems(receipt) == []


def test_usage_is_absent_without_usage_events_and_summed_with_them(
    text_request: ExecutionRequest,
) -> None:
    usage = {"kind": "usage", "input_tokens": 3, "output_tokens": 4}
    runtime = ScriptedRuntime(v1([delta("a"), FINISH], [usage, delta("b"), usage, FINISH]))

    assert runtime.execute(text_request).usage is None
    assert runtime.execute(text_request).usage == Usage(input_tokens=6, output_tokens=8)


def test_finish_reason_is_never_invented(text_request: ExecutionRequest) -> None:
    receipt = ScriptedRuntime(v1([delta("a"), {"kind": "finish"}])).execute(text_request)

    assert receipt.finish_reason is None
    assert "finish_reason" not in receipt.model_dump(mode="json")


# ---- law 2: same result ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["greet.yaml", "tqx-success.json", "tqx-events.json"])
def test_execute_and_execute_streaming_give_equal_results(
    name: str, make_request: MakeRequest
) -> None:
    request = make_request(OBJECT_SCHEMA, fixture_output={"answer": 7})
    plain = ScriptedRuntime.from_scenario(SCENARIOS / name)
    streamed = ScriptedRuntime.from_scenario(SCENARIOS / name)

    for _ in plain.scenario.turns:
        try:
            expected: ExecutionReceipt | PortError = plain.execute(request)
        except PortError as error:
            expected = error
        events, outcome = stream(streamed, request)
        if isinstance(expected, PortError):
            assert isinstance(outcome, PortError)
            assert (outcome.code, outcome.message, outcome.retry_after_ms) == (
                expected.code,
                expected.message,
                expected.retry_after_ms,
            )
            assert events[-1] == Failed(code=expected.code, message=expected.message)
        else:
            assert outcome == expected
            assert events[-1] == Complete(receipt=expected)


# ---- law 5: failure projection --------------------------------------------------------------


def test_failure_after_deltas_sends_one_failed_with_the_raised_code(
    text_request: ExecutionRequest,
) -> None:
    runtime = ScriptedRuntime.from_scenario(SCENARIOS / "greet.yaml")
    runtime.execute(text_request)

    events, error = stream(runtime, text_request)

    assert isinstance(error, PortError)
    assert error.code == "TQX_RUNTIME_UNAVAILABLE"
    assert error.message == "upstream reset"
    assert error.retry_after_ms == 300
    assert events == [
        ToolCallDelta(index=0, call_id="c1", name="add", arguments_fragment='{"a": 1,'),
        ToolCallDelta(index=0, call_id="c1", name="add", arguments_fragment=' "b": 2}'),
        Delta(text="partial"),
        Failed(code="TQX_RUNTIME_UNAVAILABLE", message="upstream reset"),
    ]
    grammar_checked(events)


def test_execute_raises_the_same_failure(text_request: ExecutionRequest) -> None:
    runtime = ScriptedRuntime(
        v1([delta("x"), {"kind": "fail", "code": "TQX_RUNTIME_RATE_LIMITED", "message": "later",
                         "retry_after_ms": 1200}])
    )  # fmt: skip

    with pytest.raises(PortError) as caught:
        runtime.execute(text_request)

    assert (caught.value.code, caught.value.message, caught.value.retry_after_ms) == (
        "TQX_RUNTIME_RATE_LIMITED",
        "later",
        1200,
    )
    assert caught.value.retryable


def test_templiqx_failure_step_raises_code_detail_and_retry_after(
    text_request: ExecutionRequest,
) -> None:
    runtime = ScriptedRuntime(
        tqx_steps(
            {"id": "wait", "kind": "delay", "delay_ms": 5},
            {"id": "no", "kind": "runtime_failure",
             "failure": {"code": "TQX_RUNTIME_RATE_LIMITED", "retry_after_ms": 1500,
                         "detail": "throttled by the upstream"}},
        )
    )  # fmt: skip

    events, error = stream(runtime, text_request)

    assert isinstance(error, PortError)
    assert (error.code, error.message, error.retry_after_ms) == (
        "TQX_RUNTIME_RATE_LIMITED",
        "throttled by the upstream",
        1500,
    )
    assert events == [Failed(code="TQX_RUNTIME_RATE_LIMITED", message="throttled by the upstream")]
    assert runtime.stats() == RuntimeStats(attempts=1, elapsed_ms=5)


# ---- law 6: caller stop ---------------------------------------------------------------------


class Stop(Exception):
    pass


def stop_at(count: int, seen: list[StreamEvent], error: BaseException) -> Callable[..., None]:
    def sink(event: StreamEvent) -> None:
        seen.append(event)
        if len(seen) == count:
            raise error

    return sink


@pytest.mark.parametrize("count", [1, 2, 3])
def test_a_raising_sink_ends_the_call_with_its_own_exception(
    count: int, text_request: ExecutionRequest
) -> None:
    runtime = ScriptedRuntime(v1([delta("a"), delta("b"), FINISH], [delta("next"), FINISH]))
    seen: list[StreamEvent] = []
    error = Stop("caller stopped")

    with pytest.raises(Stop) as caught:
        runtime.execute_streaming(text_request, stop_at(count, seen, error))

    assert caught.value is error
    assert len(seen) == count  # nothing after the event the sink refused
    assert runtime.execute(text_request).text == "next"  # still usable: the next turn plays
    assert runtime.stats().attempts == 2


def test_a_sink_raising_on_failed_propagates_its_own_exception(
    text_request: ExecutionRequest,
) -> None:
    runtime = ScriptedRuntime(v1([{"kind": "fail", "code": "TQX_RUNTIME_TIMEOUT", "message": "t"}]))
    seen: list[StreamEvent] = []
    error = Stop()

    with pytest.raises(Stop) as caught:
        runtime.execute_streaming(text_request, stop_at(1, seen, error))

    assert caught.value is error
    assert seen == [Failed(code="TQX_RUNTIME_TIMEOUT", message="t")]


def test_a_sink_raising_port_error_is_not_rewrapped(text_request: ExecutionRequest) -> None:
    runtime = ScriptedRuntime(v1([delta("a"), FINISH]))
    error = PortError("TQX_CALLER_STOPPED", "enough")
    seen: list[StreamEvent] = []

    with pytest.raises(PortError) as caught:
        runtime.execute_streaming(text_request, stop_at(1, seen, error))

    assert caught.value is error
    assert seen == [Delta(text="a")]


# ---- exhaustion, stats ----------------------------------------------------------------------


def test_a_call_past_the_last_turn_fails_and_never_repeats(text_request: ExecutionRequest) -> None:
    runtime = ScriptedRuntime(v1([delta("only"), FINISH]))
    runtime.execute(text_request)

    with pytest.raises(PortError) as plain:
        runtime.execute(text_request)
    events, streamed = stream(runtime, text_request)

    message = "scenario exhausted: 'scripted' has 1 turn(s) and all have been played"
    assert (plain.value.code, plain.value.message) == ("TQX_DATA_INVALID", message)
    assert isinstance(streamed, PortError)
    assert (streamed.code, streamed.message) == ("TQX_DATA_INVALID", message)
    assert events == [Failed(code="TQX_DATA_INVALID", message=message)]
    assert runtime.stats() == RuntimeStats(attempts=3, elapsed_ms=0)


def test_delays_advance_a_virtual_clock_without_sleeping(text_request: ExecutionRequest) -> None:
    hour = 3_600_000
    runtime = ScriptedRuntime(
        v1([{"kind": "delay", "ms": hour}, delta("a"), {"kind": "delay", "ms": 1}, FINISH],
           [{"kind": "delay", "ms": 10}, {"kind": "fail", "code": "TQX_RUNTIME_TIMEOUT",
                                          "message": "t"}])
    )  # fmt: skip
    assert runtime.stats() == RuntimeStats(attempts=0, elapsed_ms=0)

    started = time.monotonic()
    runtime.execute(text_request)
    with pytest.raises(PortError):
        runtime.execute(text_request)

    assert time.monotonic() - started < 5
    assert runtime.stats() == RuntimeStats(attempts=2, elapsed_ms=hour + 11)


def test_delays_played_before_a_caller_stop_still_count(text_request: ExecutionRequest) -> None:
    runtime = ScriptedRuntime(v1([{"kind": "delay", "ms": 7}, delta("a"), FINISH]))

    with pytest.raises(Stop):
        runtime.execute_streaming(text_request, stop_at(1, [], Stop()))

    assert runtime.stats() == RuntimeStats(attempts=1, elapsed_ms=7)


def test_attempts_count_every_call(text_request: ExecutionRequest) -> None:
    fail = {"kind": "fail", "code": "TQX_RUNTIME_UNAVAILABLE", "message": "down"}
    runtime = ScriptedRuntime(v1([fail], [fail], [delta("up"), FINISH]))

    outcomes = []
    for _ in range(4):
        try:
            outcomes.append(runtime.execute(text_request).output)
        except PortError as error:
            outcomes.append(error.code)

    assert outcomes == [
        "TQX_RUNTIME_UNAVAILABLE",
        "TQX_RUNTIME_UNAVAILABLE",
        "up",
        "TQX_DATA_INVALID",
    ]
    assert runtime.stats().attempts == 4


def test_stats_is_a_frozen_value() -> None:
    stats = ScriptedRuntime(v1([FINISH])).stats()

    with pytest.raises(AttributeError):
        stats.attempts = 3  # type: ignore[misc]


# ---- law 8: bounds --------------------------------------------------------------------------


def test_oversize_fails_before_the_piece_that_would_pass_the_limit(
    text_request: ExecutionRequest,
) -> None:
    runtime = ScriptedRuntime(v1([delta("Hel"), delta("lo"), FINISH]), max_response_bytes=4)

    events, error = stream(runtime, text_request)

    message = "the response passed max_response_bytes (4 bytes)"
    assert isinstance(error, PortError)
    assert (error.code, error.message) == ("TQX_RUNTIME_RESPONSE_TOO_LARGE", message)
    assert events == [
        Delta(text="Hel"),
        Failed(code="TQX_RUNTIME_RESPONSE_TOO_LARGE", message=message),
    ]
    grammar_checked(events)


def test_a_response_of_exactly_the_limit_passes(text_request: ExecutionRequest) -> None:
    runtime = ScriptedRuntime(v1([delta("Hel"), delta("lo"), FINISH]), max_response_bytes=5)

    assert runtime.execute(text_request).text == "Hello"


def test_the_limit_counts_utf8_bytes_of_text_and_fragments(text_request: ExecutionRequest) -> None:
    call = {"kind": "tool_call_delta", "index": 0, "name": "f", "arguments_fragment": "{}"}
    scenario = v1([delta("é"), call, FINISH])  # 2 + 2 bytes
    assert ScriptedRuntime(scenario, max_response_bytes=4).execute(text_request).text == "é"

    with pytest.raises(PortError) as caught:
        ScriptedRuntime(scenario, max_response_bytes=3).execute(text_request)
    assert caught.value.code == "TQX_RUNTIME_RESPONSE_TOO_LARGE"


@pytest.mark.parametrize(
    ("own", "policy", "passes"),
    [(None, 5, True), (None, 4, False), (4, 100, False), (100, 4, False), (5, 6, True)],
)
def test_the_smaller_of_runtime_and_request_limits_applies(
    own: int | None, policy: int, passes: bool, make_request: MakeRequest
) -> None:
    runtime = ScriptedRuntime(v1([delta("Hel"), delta("lo"), FINISH]), max_response_bytes=own)
    request = make_request(runtime_policy={"max_response_bytes": policy})

    events, outcome = stream(runtime, request)

    assert isinstance(outcome, ExecutionReceipt) is passes
    if not passes:
        assert isinstance(outcome, PortError)
        assert outcome.code == "TQX_RUNTIME_RESPONSE_TOO_LARGE"
        assert events[:-1] == [Delta(text="Hel")]


def test_the_default_limit_is_eight_mebibytes(text_request: ExecutionRequest) -> None:
    big = "x" * (4 * 1024 * 1024)
    runtime = ScriptedRuntime(
        v1([delta(big), delta(big), FINISH], [delta(big), delta(big), delta("x"), FINISH])
    )

    assert runtime.execute(text_request).text == big + big
    with pytest.raises(PortError) as caught:
        runtime.execute(text_request)
    assert caught.value.code == "TQX_RUNTIME_RESPONSE_TOO_LARGE"


@pytest.mark.parametrize("policy", [-1, "big", True, 2.0, None])
def test_an_unusable_request_limit_fails_without_taking_a_turn(
    policy: Any, make_request: MakeRequest, text_request: ExecutionRequest
) -> None:
    runtime = ScriptedRuntime(v1([delta("a"), FINISH]))

    events, error = stream(runtime, make_request(runtime_policy={"max_response_bytes": policy}))

    message = "runtime_policy.max_response_bytes must be a non-negative integer"
    assert isinstance(error, PortError)
    assert (error.code, error.message) == ("TQX_DATA_INVALID", message)
    assert events == [Failed(code="TQX_DATA_INVALID", message=message)]
    assert runtime.execute(text_request).text == "a"
    assert runtime.stats().attempts == 2


# ---- determinism ----------------------------------------------------------------------------


def test_two_runs_are_identical_to_the_byte(make_request: MakeRequest) -> None:
    request = make_request(OBJECT_SCHEMA, fixture_output={"answer": 1})

    def run() -> list[str]:
        runtime = ScriptedRuntime.from_scenario(SCENARIOS / "greet.yaml")
        lines: list[str] = []
        for _ in range(3):  # two turns, then exhausted
            events, outcome = stream(runtime, request)
            lines.extend(event.model_dump_json() for event in events)
            if isinstance(outcome, ExecutionReceipt):
                lines.append(outcome.model_dump_json())
            else:
                lines.append(repr(outcome))
        return lines

    first, second = run(), run()

    assert first == second
    assert len(first) == 3 + 1 + 4 + 1 + 1 + 1


# ---- output: explicit, deltas, fixture ------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "fixture", "output"),
    [
        ([delta("Hi"), {"kind": "finish", "output": "Hi"}], "fixture", "Hi"),
        ([{"kind": "finish", "output": "explicit"}], "fixture", "explicit"),
        ([{"kind": "finish", "output": None}], "fixture", None),
        ([delta("from deltas"), FINISH], "fixture", "from deltas"),
        ([FINISH], "fixture", "fixture"),
        ([FINISH], None, None),
        ([{"kind": "tool_call_delta", "index": 0, "name": "f"}, FINISH], "fixture", None),
    ],
)
def test_v1_output_priority(
    events: list[dict[str, Any]], fixture: Any, output: Any, make_request: MakeRequest
) -> None:
    """runport.mock/v1: explicit output > deltas > fixture_output (no deltas, no calls) > null."""
    request = make_request(fixture_output=fixture)

    receipt = ScriptedRuntime(v1(events)).execute(request)

    assert receipt.output == output
    assert receipt.output_fingerprint == fingerprint(output)


def test_v1_explicit_structured_output_agrees_with_the_deltas(
    json_request: ExecutionRequest,
) -> None:
    scenario = v1([delta('{"answer":'), delta(" 5}"), {"kind": "finish", "output": {"answer": 5}}])

    receipt = ScriptedRuntime(scenario).execute(json_request)

    assert receipt.output == {"answer": 5}
    assert receipt.text == '{"answer": 5}'
    assert receipt.output_schema_valid is True


@pytest.mark.parametrize(
    ("scenario", "fixture", "output"),
    [
        (tqx_steps({"id": "ok", "kind": "runtime_success"}), {"answer": 1}, {"answer": 1}),
        (tqx_steps({"id": "ok", "kind": "runtime_success"}), None, None),
        (
            tqx_steps({"id": "ok", "kind": "runtime_success", "output": {"answer": 2}}),
            {"answer": 1},
            {"answer": 2},
        ),
        (
            tqx_steps({"id": "ok", "kind": "runtime_success", "output": None}),
            {"answer": 1},
            {"answer": 1},
        ),
        (
            tqx_events({"id": "d", "kind": "delta", "text": '{"answer": 3}'}),
            {"answer": 1},
            {"answer": 1},
        ),
        (
            tqx_events({"id": "d", "kind": "delta", "text": '{"answer": 3}'}),
            None,
            {"answer": 3},
        ),
        (
            tqx_finish_with({"answer": 4}, {"id": "d", "kind": "delta", "text": '{"answer": 3}'}),
            {"answer": 1},
            {"answer": 4},
        ),
        (tqx_events(), None, None),
    ],
)
def test_templiqx_output_priority(
    scenario: Scenario, fixture: Any, output: Any, make_request: MakeRequest
) -> None:
    """templiqx: explicit output > non-null fixture_output > deltas (> null)."""
    receipt = ScriptedRuntime(scenario).execute(make_request(OBJECT_SCHEMA, fixture_output=fixture))

    assert receipt.output == output
    assert receipt.output_fingerprint == fingerprint(output)


def test_templiqx_events_stream_deltas_only_and_sum_usage(make_request: MakeRequest) -> None:
    runtime = ScriptedRuntime.from_scenario(SCENARIOS / "tqx-events.json")
    request = make_request(OBJECT_SCHEMA)

    events, receipt = stream(runtime, request)

    assert isinstance(receipt, ExecutionReceipt)
    assert events == [Delta(text='{"answer": '), Delta(text="42}"), Complete(receipt=receipt)]
    assert receipt.text == '{"answer": 42}'
    assert receipt.output == {"answer": 42}
    assert receipt.output_schema_valid is True
    assert receipt.usage == Usage(input_tokens=5, output_tokens=7)
    assert grammar_checked(events).assembly_problems(receipt) == []


def test_templiqx_steps_success_uses_the_fixture_and_the_virtual_clock(
    make_request: MakeRequest,
) -> None:
    runtime = ScriptedRuntime.from_scenario(SCENARIOS / "tqx-success.json")

    events, receipt = stream(runtime, make_request(OBJECT_SCHEMA, fixture_output={"answer": 9}))

    assert isinstance(receipt, ExecutionReceipt)
    assert events == [Complete(receipt=receipt)]
    assert receipt.output == {"answer": 9}
    assert receipt.text is None
    assert receipt.output_schema_valid is True
    assert runtime.stats() == RuntimeStats(attempts=1, elapsed_ms=30)


def test_validity_is_computed_never_taken_from_the_scenario(make_request: MakeRequest) -> None:
    """A manifest stating ``output_schema_valid: true`` cannot make a bad output valid."""
    scenario = tqx_steps(
        {"id": "ok", "kind": "runtime_success", "output": {"answer": "x"},
         "output_schema_valid": True}
    )  # fmt: skip

    receipt = ScriptedRuntime(scenario).execute(make_request(OBJECT_SCHEMA))

    assert scenario.expectations.output_schema_valid is True
    assert receipt.output_schema_valid is False


# ---- the scenario is never mutated ----------------------------------------------------------


def test_playing_never_changes_the_scenario(make_request: MakeRequest) -> None:
    scenario = v1(
        [{"kind": "finish", "output": {"answer": 1, "nested": {"items": [1, 2]}}}],
        [delta("b"), FINISH],
    )
    before = scenario.model_dump_json()
    request = make_request(OBJECT_SCHEMA)

    first = ScriptedRuntime(scenario)
    receipt = first.execute(request)
    assert isinstance(receipt.output, dict)
    nested = receipt.output["nested"]
    assert isinstance(nested, dict)
    nested["items"] = "changed by the caller"
    first.execute(request)
    with pytest.raises(PortError):
        first.execute(request)

    second = ScriptedRuntime(scenario)  # one scenario feeds many runtimes, each from turn 0
    assert second.execute(request).output == {"answer": 1, "nested": {"items": [1, 2]}}
    assert scenario.model_dump_json() == before


# ---- threads --------------------------------------------------------------------------------


def test_threads_share_one_runtime_and_each_turn_plays_once(text_request: ExecutionRequest) -> None:
    count = 32
    runtime = ScriptedRuntime(v1(*([delta(f"turn {n}"), FINISH] for n in range(count))))
    texts: list[str | None] = []
    lock = threading.Lock()
    barrier = threading.Barrier(count)

    def worker() -> None:
        barrier.wait()
        events: list[StreamEvent] = []
        receipt = runtime.execute_streaming(text_request, events.append)
        with lock:
            texts.append(receipt.text)

    threads = [threading.Thread(target=worker) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(texts, key=str) == sorted((f"turn {n}" for n in range(count)), key=str)
    assert runtime.stats() == RuntimeStats(attempts=count, elapsed_ms=0)


def test_receipts_carry_the_descriptor_of_the_runtime_that_played_them(
    text_request: ExecutionRequest,
) -> None:
    runtime = ScriptedRuntime.from_scenario(SCENARIOS / "greet.yaml")

    receipt = runtime.execute(text_request)

    assert receipt.adapter == runtime.descriptor()
    assert (receipt.adapter.provider, receipt.adapter.model) == ("runport.mock", "greet")
