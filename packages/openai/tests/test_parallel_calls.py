"""Parallel tool calls that all arrive at ``index`` 0 with distinct ids (Ollama's and LiteLLM's
shape) are separate calls, numbered as the unstreamed answer lists them, and the streamed
receipt equals the unstreamed one (adr/0044-stream-order-and-call-ids.md). A fragment with no
id still goes on to the index's latest call (OpenAI's own shape)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.conformance.providers import make_request, run_streamed
from runport.contracts import ErrorCode, ToolCall, ToolCallDelta
from runport.openai import OpenAIChatAdapter
from runport.ports import PortError

from .openai_upstream import (
    LoopbackUpstream,
    Reply,
    chunk,
    completion,
    finish_chunk,
    role_chunk,
    sse,
    tool_chunk,
    usage_chunk,
)

CALLS = [
    ("call_oslo", "get_weather", '{"city": "Oslo"}'),
    ("call_delft", "get_weather", '{"city": "Delft"}'),
    ("call_time", "get_time", '{"tz": "CET"}'),
]


def _whole_at_zero(calls: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """Ollama's shape: each call whole, in a chunk of its own, every one at index 0."""
    return [tool_chunk(0, call_id=i, name=n, arguments=a) for i, n, a in calls]


def _one_chunk_at_zero(calls: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """All the calls in one chunk's ``tool_calls``, every one at index 0."""
    fragments = [
        {"index": 0, "id": i, "type": "function", "function": {"name": n, "arguments": a}}
        for i, n, a in calls
    ]
    return [chunk({"tool_calls": fragments})]


def _pieces_at_zero(calls: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """LiteLLM's shape: a call's id and name, then its arguments in pieces with no id, then
    the next call's id at the same index 0."""
    frames = []
    for call_id, name, arguments in calls:
        half = len(arguments) // 2
        frames.append(tool_chunk(0, call_id=call_id, name=name, arguments=""))
        frames.append(tool_chunk(0, arguments=arguments[:half]))
        frames.append(tool_chunk(0, arguments=arguments[half:]))
    return frames


SHAPES = {"whole": _whole_at_zero, "one-chunk": _one_chunk_at_zero, "pieces": _pieces_at_zero}


def _expected(calls: list[tuple[str, str, str]]) -> list[ToolCall]:
    return [ToolCall(call_id=i, name=n, arguments=json.loads(a)) for i, n, a in calls]


@pytest.mark.parametrize("shape", SHAPES)
def test_parallel_calls_at_index_0_are_separate_calls_and_equal_the_unstreamed_receipt(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, shape: str
) -> None:
    frames = [role_chunk(), *SHAPES[shape](CALLS), finish_chunk("tool_calls"), usage_chunk()]
    upstream.queue(Reply([sse(frames)]), Reply.json(completion(None, CALLS, finish="tool_calls")))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == _expected(CALLS)
    assert outcome.receipt == adapter.execute(make_request())
    announced = [(d.index, d.call_id) for d in outcome.tool_deltas if d.name]
    assert sorted(set(announced)) == [(0, "call_oslo"), (1, "call_delft"), (2, "call_time")]


def test_a_fragment_without_an_id_goes_on_to_the_latest_call_at_its_index(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    frames = [
        tool_chunk(0, call_id="a", name="f", arguments='{"x"'),
        tool_chunk(0, arguments=": 1}"),
        tool_chunk(0, call_id="b", name="g", arguments='{"y"'),
        tool_chunk(0, arguments=": 2}"),
        tool_chunk(0, call_id="b", arguments=""),  # the latest call's id repeated: the same call
        finish_chunk("tool_calls"),
    ]
    upstream.queue(Reply([sse(frames)]))
    outcome = run_streamed(adapter, make_request())
    assert [(d.index, d.call_id, d.arguments_fragment) for d in outcome.tool_deltas] == [
        (0, "a", '{"x"'),
        (0, "a", ": 1}"),
        (1, "b", '{"y"'),
        (1, "b", ": 2}"),
    ]
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == [
        ToolCall(call_id="a", name="f", arguments={"x": 1}),
        ToolCall(call_id="b", name="g", arguments={"y": 2}),
    ]


def test_a_split_call_takes_a_number_no_index_holds(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    """A new id at index 0 while index 1 is in use is numbered after both, never over one."""
    frames = [
        tool_chunk(0, call_id="a", name="f", arguments="[0]"),
        tool_chunk(1, call_id="b", name="g", arguments="[1]"),
        tool_chunk(0, call_id="c", name="h", arguments="[2]"),
        tool_chunk(1, arguments=""),
        finish_chunk("tool_calls"),
    ]
    upstream.queue(Reply([sse(frames)]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == [
        ToolCall(call_id="a", name="f", arguments=[0]),
        ToolCall(call_id="b", name="g", arguments=[1]),
        ToolCall(call_id="c", name="h", arguments=[2]),
    ]
    assert {(d.index, d.call_id) for d in outcome.tool_deltas} == {(0, "a"), (1, "b"), (2, "c")}


def test_a_call_whose_name_changes_under_its_id_is_still_refused(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    frames = [
        tool_chunk(0, call_id="a", name="f", arguments="{"),
        tool_chunk(0, call_id="a", name="g", arguments="}"),
        finish_chunk("tool_calls"),
    ]
    upstream.queue(Reply([sse(frames)]))
    with pytest.raises(PortError) as raised:
        adapter.execute_streaming(make_request(), lambda event: None)
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "changed its name" in raised.value.message


_call = st.tuples(
    st.sampled_from(["get_weather", "get_time", "lookup"]),
    st.dictionaries(st.sampled_from(["city", "tz", "n"]), st.integers(-9, 99), max_size=2),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    calls=st.lists(_call, min_size=1, max_size=4),
    shape=st.sampled_from(sorted(SHAPES)),
)
def test_streamed_equals_unstreamed_for_any_calls_at_index_0(
    upstream: LoopbackUpstream,
    adapter: OpenAIChatAdapter,
    calls: list[tuple[str, dict[str, int]]],
    shape: str,
) -> None:
    wire = [(f"call_{n}", name, json.dumps(args)) for n, (name, args) in enumerate(calls)]
    frames = [role_chunk(), *SHAPES[shape](wire), finish_chunk("tool_calls"), usage_chunk()]
    upstream.queue(Reply([sse(frames)]), Reply.json(completion(None, wire, finish="tool_calls")))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == _expected(wire)
    assert outcome.receipt == adapter.execute(make_request())
    assert all(isinstance(d, ToolCallDelta) for d in outcome.tool_deltas)
