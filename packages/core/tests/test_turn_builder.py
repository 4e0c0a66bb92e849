"""``TurnBuilder``: whatever order a codec reports pieces in, the events it emitted assemble to
the receipt it builds (docs/streaming-law.md, law 3)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from runport.contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    Complete,
    Delta,
    ErrorCode,
    ExecutionRequest,
    Message,
    PortError,
    ToolCall,
    ToolCallDelta,
)
from runport.core import StreamAssembler, TextPieces, TurnBuilder

ADAPTER = AdapterDescriptor(id="turn-test", version="1.0.0")


def make_request() -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test/0",
            contract_id="provider-test",
            contract_version="1.0.0",
            messages=[Message(role="user", content="Say hello.")],
            output_schema={"type": "string"},
        )
    )


_ops = st.lists(
    st.one_of(
        st.tuples(st.just("text"), st.text(max_size=6)),
        st.tuples(
            st.just("open"), st.sampled_from(["f", "g"]), st.one_of(st.none(), st.just("id-x"))
        ),
        st.tuples(
            st.just("args"), st.integers(0, 3), st.sampled_from(['{"a"', ":1", "}", "", "[2]"])
        ),
        st.tuples(st.just("close"), st.integers(0, 3)),
        st.tuples(st.just("whole"), st.sampled_from(["f", "g"]), st.sampled_from(["", '{"b":2}'])),
    ),
    max_size=25,
)


@settings(deadline=None)
@given(ops=_ops)
def test_the_events_assemble_to_the_receipt(ops: list[tuple[Any, ...]]) -> None:
    turn = TurnBuilder()
    calls = 0
    for op in ops:
        if op[0] == "text":
            turn.text(op[1])
        elif op[0] == "open":
            turn.open_call(op[1], op[2])
            calls += 1
        elif op[0] == "args" and op[1] < calls:
            turn.call_arguments(op[1], op[2])
        elif op[0] == "close" and op[1] < calls:
            turn.close_call(op[1])
        elif op[0] == "whole":
            turn.whole_call(op[1], None, op[2])
            calls += 1
    for index in range(calls):
        turn.close_call(index)  # what a codec does at its completion marker
    receipt = turn.receipt(make_request(), ADAPTER)
    assembler = StreamAssembler()
    for event in turn.events:
        assembler.feed(event)
    assembler.feed(Complete(receipt=receipt))
    assert assembler.assembly_problems(receipt) == []
    assert len(receipt.tool_calls or []) == calls
    for index, call in enumerate(receipt.tool_calls or []):
        assert call.call_id == "id-x" or call.call_id == f"call_{index}"
        assert assembler.arguments_text(index) != ""  # a silent call streamed "{}"


def test_a_call_without_arguments_is_an_empty_object_sent_as_a_fragment() -> None:
    turn = TurnBuilder()
    turn.whole_call("f", None, "")
    receipt = turn.receipt(make_request(), ADAPTER)
    assert receipt.tool_calls == [ToolCall(call_id="call_0", name="f", arguments={})]
    assert [getattr(e, "arguments_fragment", None) for e in turn.events] == ["", "{}"]


def test_has_arguments_says_whether_any_fragment_arrived() -> None:
    turn = TurnBuilder()
    index = turn.open_call("lookup", "c0")
    assert not turn.has_arguments(index)
    turn.call_arguments(index, '{"a": 1}')
    assert turn.has_arguments(index)


def test_a_nameless_call_and_over_deep_arguments_are_invalid() -> None:
    with pytest.raises(PortError) as raised:
        TurnBuilder().open_call("")
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    turn = TurnBuilder()
    turn.whole_call("f", None, "[" * 100 + "]" * 100)
    with pytest.raises(PortError, match="nested more than 64 levels deep"):
        turn.receipt(make_request(), ADAPTER)


@settings(deadline=None)
@given(
    call_id=st.one_of(st.none(), st.text(min_size=1, max_size=8)),
    name=st.text(min_size=1, max_size=8),
    fragments=st.lists(st.text(min_size=1, max_size=6), max_size=5),
)
def test_a_fragments_event_is_the_model_validation_would_make(
    call_id: str | None, name: str, fragments: list[str]
) -> None:
    """Fragment events skip re-validation; they must still be exactly the validated model."""
    turn = TurnBuilder()
    index = turn.open_call(name, call_id)
    for fragment in fragments:
        turn.call_arguments(index, fragment)
    announcement, *events = turn.events
    for fragment, event in zip(fragments, events, strict=True):
        made = ToolCallDelta(
            index=index, call_id=announcement.call_id, name=name, arguments_fragment=fragment
        )
        assert event == made
        assert event.model_fields_set == made.model_fields_set
        assert event.model_dump_json() == made.model_dump_json()
        assert ToolCallDelta.model_validate_json(event.model_dump_json()) == made
        assert hash(event) == hash(made)


@settings(deadline=None)
@given(pieces=st.lists(st.text(max_size=6), max_size=6))
def test_a_text_pieces_event_is_the_model_validation_would_make(pieces: list[str]) -> None:
    turn = TurnBuilder()
    for piece in pieces:
        turn.text(piece)
    wanted = [Delta(text=piece) for piece in pieces if piece]
    assert turn.events == wanted
    for event, made in zip(turn.events, wanted, strict=True):
        assert event.model_fields_set == made.model_fields_set
        assert event.model_dump_json() == made.model_dump_json()
        assert hash(event) == hash(made)


# --- what chat completions needs of the one assembler -----------------------------------------


def test_calls_numbered_by_the_protocol_are_listed_by_number_in_any_order() -> None:
    turn = TurnBuilder(empty_arguments="")
    turn.open_call("h", "c", index=2, arguments="[3")
    turn.open_call("f", None, index=0)
    turn.call_arguments(2, "]")
    receipt = turn.receipt(make_request(), ADAPTER)
    assert receipt.tool_calls == [
        ToolCall(call_id="call_0", name="f", arguments=""),  # what the server sent: nothing
        ToolCall(call_id="c", name="h", arguments=[3]),
    ]
    assert [(e.index, e.arguments_fragment) for e in turn.events] == [(2, "[3"), (0, ""), (2, "]")]
    with pytest.raises(PortError, match="tool call 2 was announced twice") as raised:
        turn.open_call("g", None, index=2)
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE


@settings(deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["text", "reasoning", "args"]), st.text(min_size=1, max_size=4)),
        max_size=12,
    )
)
def test_the_returning_variants_are_the_appending_ones(ops: list[tuple[str, str]]) -> None:
    """``text_event``/``reasoning_event``/``arguments_event`` assemble what ``text``/
    ``reasoning``/``call_arguments`` do, and return the event they would have appended."""
    appended, returned = TurnBuilder(), TurnBuilder()
    for turn in (appended, returned):
        turn.open_call("f", "c1")
    for kind, piece in ops:
        if kind == "text":
            appended.text(piece)
            returned.events.append(returned.text_event(piece))
        elif kind == "reasoning":
            appended.reasoning(piece)
            returned.events.append(returned.reasoning_event(piece))
        else:
            appended.call_arguments(0, piece)
            event = returned.arguments_event(0, piece)
            assert event is not None
            returned.events.append(event)
    assert returned.events == appended.events
    for a, b in zip(returned.events, appended.events, strict=True):
        assert a.model_dump_json() == b.model_dump_json()
    request = make_request()
    assert returned.receipt(request, ADAPTER) == appended.receipt(request, ADAPTER)
    assert returned.arguments_event(5, "x") is None  # no such call: nothing assembled


def test_the_last_finish_reason_set_stands() -> None:
    turn = TurnBuilder()
    turn.finish_reason = "tool_calls"
    turn.text("more")  # content after a finish reason is kept
    turn.finish_reason = "stop"
    receipt = turn.receipt(make_request(), ADAPTER)
    assert (receipt.text, receipt.finish_reason) == ("more", "stop")


# --- what the test doubles need of the one assembler ------------------------------------------


def test_a_bounds_failure_names_where_it_was_met_unless_told_not_to() -> None:
    deep = "[" * 100 + "]" * 100
    bare = "the JSON is nested more than 64 levels deep"
    for name_bounds, where in ((True, "tool call 0's arguments: "), (False, "")):
        turn = TurnBuilder(name_bounds=name_bounds)
        turn.whole_call("f", None, deep)
        with pytest.raises(PortError) as raised:
            turn.receipt(make_request(), ADAPTER)
        assert (raised.value.code, raised.value.message) == (
            ErrorCode.RUNTIME_INVALID_RESPONSE,
            where + bare,
        )
    structured = make_request().model_copy(
        update={
            "interaction": make_request().interaction.model_copy(
                update={"output_schema": {"type": "array"}}
            )
        }
    )
    for name_bounds, where in ((True, "the answer: "), (False, "")):
        turn = TurnBuilder(name_bounds=name_bounds)
        turn.text(deep)
        with pytest.raises(PortError) as raised:
            turn.receipt(structured, ADAPTER)
        assert raised.value.message == where + bare


def test_an_explicit_output_is_the_answer_and_empty_says_nothing_was_said() -> None:
    turn = TurnBuilder()
    assert turn.empty
    turn.whole_reasoning("thinking")
    assert turn.empty  # reasoning is not an answer
    receipt = turn.receipt(make_request(), ADAPTER, output="given")
    assert (receipt.output, receipt.text) == ("given", None)
    assert [part.text for part in receipt.reasoning or []] == ["thinking"]
    for said in (lambda t: t.text("x"), lambda t: t.open_call("f")):
        turn = TurnBuilder()
        said(turn)
        assert not turn.empty


def test_the_hot_path_events_dump_as_their_validated_twins_even_leaving_out_unset_fields() -> None:
    """``text_event``, ``reasoning_event`` and ``arguments_event`` build their events without
    validating (the per-delta path): each dumps as the event pydantic would have made, with
    ``exclude_unset`` too (pydantic's serializer needs a real ``set`` of fields there)."""
    from runport.contracts import ReasoningDelta

    builder = TurnBuilder()
    index = builder.open_call("lookup", "call_1")
    made = [
        builder.text_event("Hel"),
        builder.reasoning_event("thinking"),
        builder.arguments_event(index, '{"q": '),
    ]
    twins = [
        Delta(text="Hel"),
        ReasoningDelta(text="thinking"),
        ToolCallDelta(index=index, call_id="call_1", name="lookup", arguments_fragment='{"q": '),
    ]
    for event, twin in zip(made, twins, strict=True):
        assert event is not None
        assert event == twin
        assert event.model_dump(exclude_unset=True) == twin.model_dump(exclude_unset=True)
        assert event.model_dump_json() == twin.model_dump_json()


def test_an_announced_call_and_its_receipt_entry_are_their_validated_twins() -> None:
    """``open_call``'s announcement and the receipt's ``ToolCall`` of a call with no metadata
    are built without validating: each is the model pydantic would have made."""
    builder = TurnBuilder()
    builder.whole_call("lookup", "call_1", '{"q":1}', parsed={"q": 1})
    announcement = builder.events[0]
    twin = ToolCallDelta(index=0, call_id="call_1", name="lookup", arguments_fragment="")
    (call,) = builder.receipt(make_request(), ADAPTER).tool_calls or []
    validated = ToolCall(
        call_id="call_1", name="lookup", arguments={"q": 1}, provider_metadata=None
    )
    for made, model in ((announcement, twin), (call, validated)):
        assert made == model
        assert made.model_dump(exclude_unset=True) == model.model_dump(exclude_unset=True)
        assert made.model_dump_json() == model.model_dump_json()


def test_a_whole_calls_parsed_arguments_are_taken_unless_the_text_nears_a_bound() -> None:
    """The value a codec had is the receipt's (the same object); text that could be past a
    bound — deep nesting, a long run of digits, an escape — is parsed, and refused, as any."""
    from runport.contracts import MAX_INT_DIGITS, MAX_JSON_DEPTH

    value = {"q": [1, 2]}
    builder = TurnBuilder()
    builder.whole_call("f", None, '{"q":[1,2]}', parsed=value)
    (call,) = builder.receipt(make_request(), ADAPTER).tool_calls or []
    assert call.arguments is value
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    long = "9" * (MAX_INT_DIGITS + 1)
    for text in (deep, f'{{"n":{long}}}'):
        builder = TurnBuilder()
        builder.whole_call("f", None, text, parsed={"stale": True})
        with pytest.raises(PortError) as raised:
            builder.receipt(make_request(), ADAPTER)
        assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    builder = TurnBuilder()
    builder.whole_call("f", None, '{"s":"\\u00e9"}', parsed={"stale": True})
    (call,) = builder.receipt(make_request(), ADAPTER).tool_calls or []
    assert call.arguments == {"s": "é"}  # parsed from the text, not the value given


@settings(deadline=None, max_examples=60)
@given(
    pieces=st.lists(st.text(min_size=1, max_size=4), max_size=700),
    start=st.integers(0, 3000),
)
def test_text_pieces_count_and_give_a_tail_as_the_joined_text_would(
    pieces: list[str], start: int
) -> None:
    """``length`` and ``since`` are ``len(held())`` and ``held()[start:]``, across the
    blocks the pieces are joined in."""
    text = TextPieces()
    for piece in pieces:
        text.add(piece)
    assert text.length() == len(text.held()) == len("".join(pieces))
    assert text.since(start) == "".join(pieces)[start:]


def test_events_built_without_validating_share_no_change_one_makes_to_its_fields() -> None:
    """The events of one shape share their set of fields: a copy made with a field changed
    gets a set of its own, and an event cannot be changed in place (frozen)."""
    turn = TurnBuilder()
    first, second = turn.text_event("a"), turn.text_event("b")
    copied = first.model_copy(update={"kind": "Delta"})
    assert copied.model_fields_set == {"text", "kind"}
    assert first.model_fields_set == second.model_fields_set == {"text"}
    with pytest.raises(ValidationError):
        first.text = "c"  # type: ignore[misc]
    assert second.model_fields_set == {"text"}
