"""JSON from an upstream (answers, tool arguments) is bounded like a document: past the bounds
it is a coded ``JsonLimitError``, never ``RecursionError`` or ``ValueError`` (docs/limits.md)."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import (
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    AdapterDescriptor,
    CompiledInteraction,
    ExecutionRequest,
    Message,
    ToolCallDelta,
    canonical_json,
    fingerprint,
)
from runport.core import JsonLimitError, StreamAssembler, build_receipt, parse_json_text

ADAPTER = AdapterDescriptor(id="t", version="1", capabilities=[])


def request(schema: dict[str, Any]) -> ExecutionRequest:
    interaction = CompiledInteraction(
        compiler="test/0",
        contract_id="c",
        contract_version="1.0.0",
        messages=[Message(role="user", content="hi")],
        output_schema=schema,
    )
    return ExecutionRequest(interaction=interaction)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_nested_to_the_bound_parses() -> None:
    ok, value = parse_json_text(nested(MAX_JSON_DEPTH))

    assert ok
    assert canonical_json(value) == nested(MAX_JSON_DEPTH).encode()


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 200_000])
def test_json_nested_past_the_bound_is_a_coded_error(depth: int) -> None:
    """Regression (issue 10, item 4): ~1,000 levels from an upstream raised RecursionError."""
    with pytest.raises(JsonLimitError) as caught:
        parse_json_text(nested(depth))

    assert caught.value.code == "TQX_RUNTIME_INVALID_RESPONSE"
    assert caught.value.message == f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep"


@pytest.mark.parametrize(
    "text", ["1" * (MAX_INT_DIGITS + 1), '{"n": -' + "9" * (MAX_INT_DIGITS + 1) + "}", "1e400"]
)
def test_numbers_json_cannot_carry_here_are_a_coded_error(text: str) -> None:
    with pytest.raises(JsonLimitError):
        parse_json_text(text)


@pytest.mark.parametrize("interpreter_bound", [0, MAX_INT_DIGITS, MAX_INT_DIGITS * 2])
def test_the_integer_bound_is_runport_s_whatever_the_interpreter_s(interpreter_bound: int) -> None:
    """Integers are read natively only while the interpreter's digit bound is runport's own;
    with none, or a higher one, the bound and its message stay runport's."""
    widest = "-" + "9" * MAX_INT_DIGITS
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(interpreter_bound)
    try:
        assert parse_json_text(f"[{widest}]") == (True, [int(widest)])
        with pytest.raises(JsonLimitError, match=f"more than {MAX_INT_DIGITS} digits"):
            parse_json_text("[1" + "0" * MAX_INT_DIGITS + "]")
    finally:
        sys.set_int_max_str_digits(before)


@pytest.mark.parametrize("text", ['"\\ud800"', '{"a": ["\\udc00x"]}', "NaN", "[1,", "prose"])
def test_what_is_not_json_text_stays_text(text: str) -> None:
    assert parse_json_text(text) == (False, text)


def test_a_receipt_from_deep_json_is_refused_with_the_code() -> None:
    with pytest.raises(JsonLimitError):
        build_receipt(request({"type": "object"}), adapter=ADAPTER, text=nested(500))


def test_a_text_schema_never_parses_the_answer() -> None:
    receipt = build_receipt(request({"type": "string"}), adapter=ADAPTER, text=nested(500))

    assert receipt.output == nested(500)


def test_deep_tool_arguments_are_refused_with_the_code() -> None:
    assembler = StreamAssembler()
    assembler.feed(ToolCallDelta(index=0, call_id="c", name="t", arguments_fragment=nested(999)))

    with pytest.raises(JsonLimitError):
        _ = assembler.tool_calls


def _deepen(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=2) | st.dictionaries(
        st.text(max_size=3), children, max_size=2
    )


@settings(deadline=None)
@given(
    depth=st.integers(min_value=0, max_value=MAX_JSON_DEPTH),
    leaf=st.recursive(st.integers() | st.text(max_size=4), _deepen, max_leaves=6),
)
def test_values_within_the_bound_encode_and_fingerprint(depth: int, leaf: Any) -> None:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    text = canonical_json(value).decode()

    assert len(fingerprint(value)) == 64
    try:
        ok, parsed = parse_json_text(text)
    except JsonLimitError:
        return  # the leaf's own nesting took it past the bound
    assert ok
    assert canonical_json(parsed) == text.encode()
