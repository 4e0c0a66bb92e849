"""The decoder's shortcut for the usual frame (``ChunkAssembly.single_event``) agrees with the
long way (``feed_chunk``) on every chunk: the same event, the same receipt, the same failure,
and a chunk it declines is left for ``feed_chunk`` untouched."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance.providers import make_request
from runport.contracts import AdapterDescriptor, Delta, ReasoningDelta, StreamEvent, ToolCallDelta
from runport.http import TurnBuilder
from runport.openai._chunks import ChunkAssembly
from runport.ports import PortError

REQUEST = make_request({"type": ["object", "array", "string", "number", "boolean", "null"]})
ADAPTER = AdapterDescriptor(id="t", version="0", capabilities=["streaming"])

_odd = st.one_of(st.none(), st.integers(-1, 2), st.booleans(), st.text(max_size=3), st.just([]))
_text = st.one_of(st.text(max_size=4), _odd)
_fragment = st.fixed_dictionaries(
    {"index": st.one_of(st.integers(0, 2), _odd)},
    optional={
        "function": st.one_of(
            st.fixed_dictionaries(
                {}, optional={"arguments": _text, "name": st.sampled_from(["f", "g", ""])}
            ),
            _odd,
        ),
        "id": st.sampled_from(["a", "b"]),
    },
)
_reasoning = st.fixed_dictionaries(
    {},
    optional={
        "content": st.one_of(st.none(), st.just(""), _text),
        "reasoning_content": _text,
        "reasoning": _text,
        "reasoning_details": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["reasoning.text", "reasoning.summary"])},
                    optional={"text": _text, "summary": _text, "index": st.integers(0, 1)},
                ),
                max_size=2,
            ),
            _odd,
        ),
    },
)
_delta = st.one_of(
    st.fixed_dictionaries({}, optional={"content": _text, "role": st.just("assistant")}),
    _reasoning,
    st.fixed_dictionaries({"tool_calls": st.one_of(st.lists(_fragment, max_size=2), _odd)}),
    _odd,
)
_choice = st.fixed_dictionaries(
    {"delta": _delta},
    optional={
        "index": st.one_of(st.integers(0, 1), _odd),
        "finish_reason": st.one_of(st.sampled_from(["stop", "tool_calls"]), _odd),
        "logprobs": st.none(),
    },
)
_chunk = st.one_of(
    st.fixed_dictionaries(
        {"choices": st.one_of(st.lists(_choice, max_size=2), _odd)},
        optional={
            "usage": st.one_of(
                st.none(), st.just({"prompt_tokens": 1, "completion_tokens": 2}), _odd
            ),
            "error": st.one_of(st.none(), st.just({"message": "no"})),
            "id": st.just("chatcmpl-1"),
        },
    ),
    _odd,
)


def _outcome(chunks: list[Any], *, shortcut: bool) -> tuple[list[StreamEvent], object]:
    turn = TurnBuilder(empty_arguments="")
    events = turn.events
    reader = ChunkAssembly(turn)
    try:
        for chunk in chunks:
            if shortcut:
                event = reader.single_event(chunk)
                if event is not None:
                    events.append(event)
                    continue
            reader.feed_chunk(chunk)
        reader.close()
        return events, turn.receipt(REQUEST, ADAPTER)
    except PortError as error:
        return events, (error.code, error.message)


@settings(deadline=None)
@given(chunks=st.lists(_chunk, max_size=8))
def test_the_shortcut_and_the_long_way_agree(chunks: list[Any]) -> None:
    assert _outcome(chunks, shortcut=True) == _outcome(chunks, shortcut=False)


def test_the_usual_frames_take_the_shortcut() -> None:
    turn = ChunkAssembly(TurnBuilder(empty_arguments=""))
    turn.feed_chunk({"choices": [{"delta": {"tool_calls": [
        {"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}
    ]}}]})  # fmt: skip
    turn.feed_chunk({"choices": [{"delta": {"reasoning_content": "Hm"}}]})
    text = turn.single_event({"id": "x", "choices": [{"index": 0, "delta": {"content": "Hi"}}]})
    fragment = turn.single_event(
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]}
    )
    thought = turn.single_event(
        {"choices": [{"delta": {"content": None, "reasoning_content": "m"}}]}
    )
    assert text == Delta(text="Hi")
    assert fragment == ToolCallDelta(index=0, call_id="c", name="f", arguments_fragment="{}")
    assert thought == ReasoningDelta(text="m")
    assert turn.single_event({"choices": [{"delta": {"reasoning": "m"}}]}) == thought
    assert (
        turn.single_event({"choices": [{"delta": {"content": "x"}, "finish_reason": "stop"}]})
        is None
    )
