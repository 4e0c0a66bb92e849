from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from runport.contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    ExecutionReceipt,
    ExecutionRequest,
    ToolCall,
    Usage,
    fingerprint,
)
from runport.core import build_receipt, parse_json_text

ADAPTER = AdapterDescriptor(id="t", version="1", capabilities=["text"])


def _request(schema: dict[str, Any]) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test",
            contract_id="c",
            contract_version="1.0.0",
            messages=[],
            output_schema=schema,
        )
    )


OBJECT = _request({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}})
STRING = _request({"type": "string", "minLength": 1})


def test_a_string_schema_takes_the_text_as_output() -> None:
    receipt = build_receipt(STRING, adapter=ADAPTER, text='{"a": 1}')
    assert receipt.output == '{"a": 1}'
    assert receipt.output_schema_valid is True
    assert receipt.output_fingerprint == fingerprint('{"a": 1}')
    assert receipt.request_fingerprint == fingerprint(STRING.interaction)


def test_other_schemas_parse_the_text_as_json() -> None:
    receipt = build_receipt(OBJECT, adapter=ADAPTER, text='{"a": 1}', finish_reason="stop")
    assert receipt.output == {"a": 1}
    assert receipt.output_schema_valid is True
    assert receipt.text == '{"a": 1}'
    assert receipt.finish_reason == "stop"


@pytest.mark.parametrize("text", ["not json", '{"a": 1', "NaN", '{"a": Infinity}'])
def test_text_that_is_not_json_is_kept_as_a_string_and_invalid(text: str) -> None:
    permissive = _request({"type": ["object", "string"]})
    receipt = build_receipt(permissive, adapter=ADAPTER, text=text)
    assert receipt.output == text
    assert receipt.output_schema_valid is False


def test_json_failing_the_schema_is_invalid() -> None:
    receipt = build_receipt(OBJECT, adapter=ADAPTER, text='{"a": "x"}')
    assert receipt.output == {"a": "x"}
    assert receipt.output_schema_valid is False


def test_a_tool_call_turn_has_null_output_and_no_validity() -> None:
    call = ToolCall(call_id="c1", name="add", arguments={"a": 1})
    receipt = build_receipt(OBJECT, adapter=ADAPTER, tool_calls=[call])
    assert receipt.output is None
    assert receipt.output_fingerprint == fingerprint(None)
    assert receipt.output_schema_valid is None
    assert receipt.tool_calls == [call]
    mixed = build_receipt(OBJECT, adapter=ADAPTER, text='{"a": 2}', tool_calls=[call])
    assert mixed.output == {"a": 2}
    assert mixed.output_schema_valid is None


def test_no_text_means_null_output() -> None:
    receipt = build_receipt(STRING, adapter=ADAPTER, text="")
    assert receipt.text is None
    assert receipt.output is None
    assert receipt.output_schema_valid is False


def test_an_explicit_output_wins_and_is_validated() -> None:
    receipt = build_receipt(
        OBJECT, adapter=ADAPTER, text="ignored", output={"a": 3}, usage=Usage(input_tokens=1)
    )
    assert receipt.output == {"a": 3}
    assert receipt.output_schema_valid is True
    assert receipt.usage == Usage(input_tokens=1, output_tokens=0)


def test_parse_json_text_is_strict() -> None:
    assert parse_json_text("[1, 2.5]") == (True, [1, 2.5])
    assert parse_json_text("-Infinity") == (False, "-Infinity")
    assert parse_json_text("") == (False, "")


@settings(deadline=None)
@given(st.text(max_size=30))
def test_the_same_turn_always_gives_the_same_receipt(text: str) -> None:
    first = build_receipt(OBJECT, adapter=ADAPTER, text=text)
    second = build_receipt(OBJECT, adapter=ADAPTER, text=text)
    assert first.model_dump_json() == second.model_dump_json()


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(deadline=None)
@given(st.lists(JSON_VALUES, max_size=3) | st.dictionaries(st.text(), JSON_VALUES, max_size=3))
def test_a_parsed_output_is_the_receipt_validation_would_make(value: Any) -> None:
    """The output parsed from the text goes in unvalidated; the receipt is the same one a full
    validation of its fields gives."""
    text = json.dumps(value)
    receipt = build_receipt(OBJECT, adapter=ADAPTER, text=text, finish_reason="stop")
    assert receipt.output == json.loads(text)
    assert receipt == ExecutionReceipt.model_validate(receipt.model_dump())
    assert (
        receipt.model_dump_json()
        == ExecutionReceipt.model_validate_json(receipt.model_dump_json()).model_dump_json()
    )


def test_the_other_fields_of_a_parsed_output_are_still_validated() -> None:
    with pytest.raises(ValidationError, match="finish_reason"):
        build_receipt(OBJECT, adapter=ADAPTER, text='{"a": 1}', finish_reason=5)  # type: ignore[arg-type]
