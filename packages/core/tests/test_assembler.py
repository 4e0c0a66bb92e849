from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    Failed,
    ToolCall,
    ToolCallDelta,
    fingerprint,
)
from runport.core import StreamAssembler, StreamGrammarError

FP = fingerprint(None)


def _receipt(text: str | None = None, calls: list[ToolCall] | None = None) -> ExecutionReceipt:
    return ExecutionReceipt(
        adapter=AdapterDescriptor(id="a", version="1"),
        request_fingerprint=FP,
        output_fingerprint=FP,
        output=None,
        output_schema_valid=None,
        text=text,
        tool_calls=calls,
    )


def test_text_and_interleaved_calls_assemble_by_index() -> None:
    asm = StreamAssembler()
    for event in [
        ToolCallDelta(index=2, call_id="c2", name="b", arguments_fragment=""),
        Delta(text="Hel"),
        ToolCallDelta(index=0, call_id="c0", name="a", arguments_fragment='{"x"'),
        ToolCallDelta(index=2, call_id="c2", name="b", arguments_fragment="[1]"),
        ToolCallDelta(index=0, call_id="c0", name="a", arguments_fragment=": 1}"),
        Delta(text="lo"),
    ]:
        asm.feed(event)
    assert asm.text == "Hello"
    assert asm.tool_calls == [
        ToolCall(call_id="c0", name="a", arguments={"x": 1}),
        ToolCall(call_id="c2", name="b", arguments=[1]),
    ]
    assert asm.arguments_text(0) == '{"x": 1}'
    receipt = _receipt("Hello", asm.tool_calls)
    assert asm.assembly_problems(receipt) == []
    asm.feed(Complete(receipt=receipt))
    assert asm.done


def test_unparseable_arguments_are_kept_as_text() -> None:
    asm = StreamAssembler()
    asm.feed(ToolCallDelta(index=0, call_id="c", name="n", arguments_fragment="{oops"))
    assert asm.tool_calls[0].arguments == "{oops"


def test_nothing_may_follow_a_terminal() -> None:
    asm = StreamAssembler()
    asm.feed(Failed(code="TQX_RUNTIME_UNAVAILABLE", message="x"))
    for event in (Delta(text="late"), Complete(receipt=_receipt())):
        with pytest.raises(StreamGrammarError, match="after the terminal Failed"):
            asm.feed(event)
    assert asm.events == [Failed(code="TQX_RUNTIME_UNAVAILABLE", message="x")]


def test_a_call_cannot_change_identity_or_send_empty_later_fragments() -> None:
    asm = StreamAssembler()
    asm.feed(ToolCallDelta(index=0, call_id="c", name="n", arguments_fragment=""))
    with pytest.raises(StreamGrammarError, match="changed identity"):
        asm.feed(ToolCallDelta(index=0, call_id="other", name="n", arguments_fragment="x"))
    with pytest.raises(StreamGrammarError, match="empty fragment"):
        asm.feed(ToolCallDelta(index=0, call_id="c", name="n", arguments_fragment=""))
    assert len(asm.events) == 1


def test_assembly_problems_name_the_difference() -> None:
    asm = StreamAssembler()
    asm.feed(Delta(text="ab"))
    (problem,) = asm.assembly_problems(_receipt("abc"))
    assert "'ab'" in problem
    assert "'abc'" in problem
    assert StreamAssembler().assembly_problems(_receipt()) == []


@settings(deadline=None)
@given(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=20))
def test_joined_text_is_the_deltas_in_order(parts: list[str]) -> None:
    asm = StreamAssembler()
    for part in parts:
        asm.feed(Delta(text=part))
    assert asm.text == "".join(parts)


def test_grammar_only_checks_the_grammar_and_keeps_nothing() -> None:
    from runport.contracts import Delta, ToolCallDelta

    checker = StreamAssembler(grammar_only=True)
    checker.feed(Delta(text="hi"))
    checker.feed(ToolCallDelta(index=0, call_id="c", name="f", arguments_fragment="{"))
    with pytest.raises(StreamGrammarError, match="changed identity"):
        checker.feed(ToolCallDelta(index=0, call_id="d", name="f", arguments_fragment="}"))
    with pytest.raises(StreamGrammarError, match="only a call's first"):
        checker.feed(ToolCallDelta(index=0, call_id="c", name="f", arguments_fragment=""))
    assert (checker.events, checker.text, checker.arguments_text(0)) == ([], None, "")
