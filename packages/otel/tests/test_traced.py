"""``Traced`` around a synchronous adapter: the span, its attributes and the metrics of one call,
whichever way the call ends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from runport.contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    fingerprint,
)
from runport.core import build_receipt
from runport.mock import ScriptedRuntime
from runport.otel import AsyncTracedAdapter, Traced, TracedAdapter
from runport.ports import PortError, RuntimeAdapter

from .otel_doubles import ANSWER, FAILURE, PROMPT, Recorded, answered, make_request, scenario


def traced(recorded: Recorded, *turns: list[dict[str, Any]], **options: Any) -> TracedAdapter:
    return Traced(ScriptedRuntime(scenario(*turns)), **recorded.providers, **options)


def all_text(span: ReadableSpan) -> str:
    """Everything a trace backend would show of a span, as one string."""
    parts = [span.name, json.dumps(dict(span.attributes or {}))]
    parts += [str(span.status.description)]
    parts += [f"{event.name} {dict(event.attributes or {})}" for event in span.events]
    return "\n".join(parts)


def test_a_streamed_call_is_one_client_chat_span_with_the_genai_attributes(
    recorded: Recorded,
) -> None:
    adapter = traced(recorded, ANSWER)
    events: list[StreamEvent] = []

    receipt = adapter.execute_streaming(make_request(), events.append)

    assert [event.kind for event in events] == ["Delta", "Delta", "Complete"]
    span = recorded.only_span()
    assert span.name == "chat rivers"
    assert span.kind is SpanKind.CLIENT
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == "runport.otel"
    assert span.status.status_code is StatusCode.UNSET
    assert dict(span.attributes or {}) == answered(receipt)
    assert receipt.output_fingerprint == fingerprint("Rivers run downhill.")


def test_a_streamed_call_records_duration_tokens_and_time_to_first_chunk(
    recorded: Recorded,
) -> None:
    traced(recorded, ANSWER).execute_streaming(make_request(), lambda event: None)

    points = recorded.points()
    assert set(points) == {
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk",
    }
    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "runport.mock",
        "gen_ai.request.model": "rivers",
    }
    [duration] = points["gen_ai.client.operation.duration"]
    [first_chunk] = points["gen_ai.client.operation.time_to_first_chunk"]
    assert dict(duration.attributes or {}) == common
    assert dict(first_chunk.attributes or {}) == common
    assert duration.count == first_chunk.count == 1
    assert 0 <= first_chunk.sum <= duration.sum
    tokens = {
        point.attributes["gen_ai.token.type"]: point
        for point in points["gen_ai.client.token.usage"]
        if point.attributes is not None
    }
    assert {kind: (p.count, p.sum) for kind, p in tokens.items()} == {
        "input": (1, 12),
        "output": (1, 4),
    }
    assert all(
        {k: v for k, v in (p.attributes or {}).items() if k != "gen_ai.token.type"} == common
        for p in tokens.values()
    )


def test_instruments_carry_the_units_the_conventions_give_them(recorded: Recorded) -> None:
    traced(recorded, ANSWER).execute_streaming(make_request(), lambda event: None)

    data = recorded.reader.get_metrics_data()
    assert data is not None
    units = {
        metric.name: metric.unit
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    assert units == {
        "gen_ai.client.operation.duration": "s",
        "gen_ai.client.token.usage": "{token}",
        "gen_ai.client.operation.time_to_first_chunk": "s",
    }


def test_an_unstreamed_call_has_no_time_to_first_chunk(recorded: Recorded) -> None:
    receipt = traced(recorded, ANSWER).execute(make_request())

    assert receipt.text == "Rivers run downhill."
    assert recorded.only_span().attributes["gen_ai.usage.output_tokens"] == 4  # type: ignore[index]
    points = recorded.points()
    assert "gen_ai.client.operation.time_to_first_chunk" not in points
    assert [p.count for p in points["gen_ai.client.operation.duration"]] == [1]


def test_a_turn_without_usage_or_finish_reason_leaves_those_attributes_out(
    recorded: Recorded,
) -> None:
    traced(recorded, [{"kind": "delta", "text": "ok"}, {"kind": "finish"}]).execute(make_request())

    attributes = dict(recorded.only_span().attributes or {})
    assert "gen_ai.usage.input_tokens" not in attributes
    assert "gen_ai.response.finish_reasons" not in attributes
    assert "gen_ai.client.token.usage" not in recorded.points()


def test_a_port_error_sets_error_type_to_the_tqx_code_and_status_error(
    recorded: Recorded,
) -> None:
    events: list[StreamEvent] = []
    request = make_request()

    with pytest.raises(PortError) as raised:
        traced(recorded, FAILURE).execute_streaming(request, events.append)

    assert raised.value.code == "TQX_RUNTIME_UNAVAILABLE"
    assert [event.kind for event in events] == ["Delta", "Failed"]
    span = recorded.only_span()
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "TQX_RUNTIME_UNAVAILABLE"
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "runport.mock",
        "gen_ai.request.model": "rivers",
        "error.type": "TQX_RUNTIME_UNAVAILABLE",
        "runport.request_fingerprint": fingerprint(request.interaction),
    }
    points = recorded.points()
    [duration] = points["gen_ai.client.operation.duration"]
    assert (duration.attributes or {})["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
    [first_chunk] = points["gen_ai.client.operation.time_to_first_chunk"]
    assert (first_chunk.attributes or {})["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
    assert "gen_ai.client.token.usage" not in points


def test_the_port_errors_message_is_the_status_description_only_with_capture_content(
    recorded: Recorded,
) -> None:
    with pytest.raises(PortError):
        traced(recorded, FAILURE, capture_content=True).execute(make_request())

    assert recorded.only_span().status.description == "the upstream reset"


class Broken(RuntimeAdapter):
    """An adapter with a bug: it raises something that is not a PortError."""

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="broken", version="1")

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise KeyError("choices")


def test_an_unexpected_exception_is_an_error_named_by_its_class(recorded: Recorded) -> None:
    adapter = Traced(Broken(), **recorded.providers)

    with pytest.raises(KeyError):
        adapter.execute(make_request())

    span = recorded.only_span()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["error.type"] == "KeyError"


def test_a_descriptor_without_provider_or_model_names_the_adapter_and_no_model(
    recorded: Recorded,
) -> None:
    with pytest.raises(KeyError):
        Traced(Broken(), **recorded.providers).execute_streaming(make_request(), print)

    span = recorded.only_span()
    assert span.name == "chat"
    assert span.attributes is not None
    assert span.attributes["gen_ai.provider.name"] == "broken"
    assert "gen_ai.request.model" not in span.attributes


class SinkStopped(Exception):
    pass


def test_a_sink_that_raises_is_a_caller_stop_not_an_error(recorded: Recorded) -> None:
    seen: list[StreamEvent] = []

    def sink(event: StreamEvent) -> None:
        seen.append(event)
        raise SinkStopped

    with pytest.raises(SinkStopped):
        traced(recorded, ANSWER).execute_streaming(make_request(), sink)

    assert [event.kind for event in seen] == ["Delta"]
    recorded.assert_caller_stopped()


def test_a_sink_that_raises_a_port_error_is_still_the_callers_stop(recorded: Recorded) -> None:
    def sink(event: StreamEvent) -> None:
        raise PortError("TQX_DATA_INVALID", "the caller refused the fragment")

    with pytest.raises(PortError):
        traced(recorded, ANSWER).execute_streaming(make_request(), sink)

    recorded.assert_caller_stopped()


def test_no_prompt_or_answer_text_is_recorded_without_capture_content(
    recorded: Recorded,
) -> None:
    adapter = traced(recorded, ANSWER, FAILURE)
    adapter.execute_streaming(make_request(), lambda event: None)
    with pytest.raises(PortError):
        adapter.execute(make_request())

    for span in recorded.spans.get_finished_spans():
        shown = all_text(span)
        for secret in (PROMPT, "Be brief.", "Rivers", "downhill", "upstream reset"):
            assert secret not in shown
        assert "gen_ai.input.messages" not in (span.attributes or {})
        assert "gen_ai.output.messages" not in (span.attributes or {})


def test_capture_content_records_the_messages_in_the_conventions_shape(
    recorded: Recorded,
) -> None:
    traced(recorded, ANSWER, capture_content=True).execute(make_request())

    attributes = recorded.only_span().attributes
    assert attributes is not None
    assert json.loads(str(attributes["gen_ai.input.messages"])) == [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": PROMPT}]},
    ]
    assert json.loads(str(attributes["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Rivers run downhill."}],
            "finish_reason": "stop",
        }
    ]


def test_capture_content_writes_tool_calls_and_tool_results_as_parts(
    recorded: Recorded,
) -> None:
    from runport.contracts import Message, ToolCall

    turn = [
        {"kind": "tool_call_delta", "index": 0, "call_id": "c2", "name": "depth"},
        {"kind": "tool_call_delta", "index": 0, "arguments_fragment": '{"river": "Rhine"}'},
        {"kind": "finish", "finish_reason": "tool_calls"},
    ]
    call = ToolCall(call_id="c1", name="length", arguments={"river": "Rhine"})
    interaction = make_request().interaction.model_copy(
        update={
            "messages": [
                Message(role="user", content="How long?"),
                Message(role="assistant", content="", tool_calls=[call]),
                Message(role="tool", content="1233 km", tool_call_id="c1"),
            ]
        }
    )
    traced(recorded, turn, capture_content=True).execute(ExecutionRequest(interaction=interaction))

    attributes = recorded.only_span().attributes
    assert attributes is not None
    assert json.loads(str(attributes["gen_ai.input.messages"]))[1:] == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "length", "arguments": {"river": "Rhine"}}
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "c1", "response": "1233 km"}],
        },
    ]
    assert json.loads(str(attributes["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c2", "name": "depth", "arguments": {"river": "Rhine"}}
            ],
            "finish_reason": "tool_call",  # the conventions' word, whatever the provider's
        }
    ]


class Structured(RuntimeAdapter):
    """A deterministic runtime that answers with an output and no text."""

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="structured", version="1", provider="openai", model="m")

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return build_receipt(request, adapter=self.descriptor(), output={"answer": 42})


def test_an_answer_without_text_is_captured_as_its_json(recorded: Recorded) -> None:
    Traced(Structured(), capture_content=True, **recorded.providers).execute(make_request())

    attributes = recorded.only_span().attributes
    assert attributes is not None
    [message] = json.loads(str(attributes["gen_ai.output.messages"]))
    assert message["parts"] == [{"type": "text", "content": '{"answer":42}'}]
    assert attributes["gen_ai.provider.name"] == "openai"


def test_the_call_span_is_current_inside_the_call_and_a_child_of_the_callers(
    recorded: Recorded,
) -> None:
    from opentelemetry import trace

    tracer = recorded.tracer_provider.get_tracer("caller")
    inside: list[trace.Span] = []
    adapter = traced(recorded, ANSWER)

    with tracer.start_as_current_span("request handler") as outer:
        adapter.execute_streaming(
            make_request(), lambda event: inside.append(trace.get_current_span())
        )
        assert trace.get_current_span() is outer

    call, handler = recorded.spans.get_finished_spans()
    assert call.parent is not None
    assert call.parent.span_id == handler.context.span_id  # type: ignore[union-attr]
    assert {span.get_span_context().span_id for span in inside} == {call.context.span_id}  # type: ignore[union-attr]


def test_traced_returns_an_adapter_of_the_same_kind_and_refuses_others(
    recorded: Recorded,
) -> None:
    from .otel_doubles import AsyncScripted

    runtime = ScriptedRuntime(scenario(ANSWER))
    sync = Traced(runtime)
    assert isinstance(sync, TracedAdapter)
    assert isinstance(sync, RuntimeAdapter)
    assert sync.wrapped is runtime
    assert sync.descriptor() == runtime.descriptor()
    assert isinstance(Traced(AsyncScripted(scenario(ANSWER))), AsyncTracedAdapter)
    with pytest.raises(TypeError, match="RuntimeAdapter or AsyncRuntimeAdapter, not str"):
        Traced("adapter")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="capture_content"):
        Traced(runtime, capture_content="yes")  # type: ignore[arg-type]


def test_without_providers_the_global_no_op_api_changes_nothing() -> None:
    adapter = Traced(ScriptedRuntime(scenario(ANSWER, FAILURE)))
    plain = ScriptedRuntime(scenario(ANSWER, FAILURE))
    events: list[StreamEvent] = []
    expected: list[StreamEvent] = []

    assert adapter.execute_streaming(make_request(), events.append) == plain.execute_streaming(
        make_request(), expected.append
    )
    assert events == expected


@settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    pieces=st.lists(
        # bracketed, so a piece cannot also be a substring of an attribute's name or value
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=6, max_size=12).map(
            lambda text: f"<<{text}>>"
        ),
        min_size=1,
        max_size=6,
    ),
    capture=st.booleans(),
)
def test_answer_text_reaches_the_span_exactly_when_asked(pieces: list[str], capture: bool) -> None:
    recorded = Recorded.start()
    turn: list[dict[str, Any]] = [{"kind": "delta", "text": piece} for piece in pieces]
    turn.append({"kind": "finish", "finish_reason": "stop"})
    adapter = traced(recorded, turn, capture_content=capture)

    receipt = adapter.execute_streaming(make_request(), lambda event: None)

    span = recorded.only_span()
    shown = all_text(span)
    assert all((piece in shown) is capture for piece in pieces)
    attributes = span.attributes or {}
    assert attributes["runport.output_fingerprint"] == receipt.output_fingerprint
    if capture:
        [message] = json.loads(str(attributes["gen_ai.output.messages"]))
        assert message["parts"] == [{"type": "text", "content": "".join(pieces)}]
    recorded.shutdown()


@pytest.mark.parametrize(
    ("finish", "word"),
    [
        ({"finish_reason": "end_turn", "finish": "stop"}, "stop"),
        ({"finish_reason": "MAX_TOKENS", "finish": "length"}, "length"),
        ({"finish_reason": "STOP", "finish": "tool_calls"}, "tool_call"),
        ({"finish_reason": "refusal", "finish": "content_filter"}, "content_filter"),
        ({"finish_reason": "pause_turn", "finish": "pause"}, "pause"),
        ({"finish_reason": "a_new_word"}, "other"),
    ],
)
def test_finish_reasons_are_the_receipts_finish_never_the_providers_word(
    recorded: Recorded, finish: dict[str, str], word: str
) -> None:
    """adr/0050: one vocabulary for every provider, as the conventions spell it."""
    script = [{"kind": "delta", "text": "ok"}, {"kind": "finish", **finish}]
    receipt = traced(recorded, script).execute(make_request())

    assert receipt.finish_reason == finish["finish_reason"]
    attributes = dict(recorded.only_span().attributes or {})
    assert attributes["gen_ai.response.finish_reasons"] == (word,)
