"""What is cached per contract (schema checks, validators) never changes a result."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import ErrorCode
from runport.core import Contract, ContractError, _schema, compile_contract, parse_contract

SCHEMAS: list[dict[str, Any]] = [
    {"type": "string", "minLength": 2},
    {"type": "integer", "minimum": 0},
    {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    {"enum": ["a", "b"]},
]


def contract(schema: dict[str, Any]) -> Contract:
    return parse_contract(
        {
            "api_version": "runport/v1alpha1",
            "id": "c",
            "version": "0.1.0",
            "inputs": {"a": {"schema": schema, "required": True}},
            "messages": [{"role": "user", "content": [{"kind": "text", "value": "hi"}]}],
            "output_schema": {"type": "string"},
        }
    )


def outcome(compiled: Contract, value: Any) -> object:
    try:
        return compile_contract(compiled, inputs={"a": value})
    except ContractError as error:
        return [(d.code, d.json_pointer, d.message) for d in error.diagnostics]


values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3),
    st.lists(st.text(max_size=2), max_size=3),
)  # fmt: skip


@settings(deadline=None)
@given(schema=st.sampled_from(SCHEMAS), value=values)
def test_a_reused_contract_answers_as_a_fresh_one(schema: dict[str, Any], value: Any) -> None:
    reused = contract(schema)
    first = outcome(reused, value)
    assert outcome(reused, value) == first  # second call: served from the caches
    _schema._HELD.clear()
    _schema._VALIDATORS.clear()
    assert outcome(contract(schema), value) == first  # cold, on a new contract object


def test_a_copy_with_another_schema_is_not_served_the_first_validator() -> None:
    strict = contract({"type": "string", "minLength": 2})
    assert outcome(strict, "ok") == outcome(strict, "ok")
    spec = strict.inputs["a"].model_copy(update={"json_schema": {"type": "integer"}})
    loose = strict.model_copy(update={"inputs": {"a": spec}})
    assert outcome(loose, 3) != outcome(strict, 3)
    assert not isinstance(outcome(loose, 3), list)
    assert isinstance(outcome(strict, 3), list)


def test_a_broken_schema_is_refused_on_every_call() -> None:
    broken = contract({"type": "string"})
    spec = broken.inputs["a"].model_copy(update={"json_schema": {"type": 7}})
    built = broken.model_copy(update={"inputs": {"a": spec}})
    for _ in range(3):
        with pytest.raises(ContractError) as caught:
            compile_contract(built, inputs={"a": "x"})
        assert [d.code for d in caught.value.diagnostics] == [ErrorCode.CONTRACT_INVALID]


def test_entries_leave_with_their_contract() -> None:
    _schema._HELD.clear()
    compile_contract(contract({"type": "string"}), inputs={"a": "x"})
    gc.collect()
    assert not _schema._HELD


def test_the_caches_stay_bounded() -> None:
    kept = [
        contract({"type": "string", "maxLength": n + 1}) for n in range(_schema._CACHE_LIMIT + 20)
    ]
    for each in kept:
        compile_contract(each, inputs={"a": "x"})
    assert len(_schema._HELD) <= _schema._CACHE_LIMIT
    assert len(_schema._VALIDATORS) <= _schema._CACHE_LIMIT


def test_compiled_copies_share_no_container_with_the_contract() -> None:
    source = parse_contract(
        {
            "api_version": "runport/v1alpha1",
            "id": "c",
            "version": "0.1.0",
            "messages": [{"role": "user", "content": [{"kind": "text", "value": "hi"}]}],
            "output_schema": {"type": "object", "properties": {"x": {"type": "array"}}},
            "runtime_policy": {"stop": ["a"]},
        }
    )
    first = compile_contract(source, inputs={})
    first.output_schema["properties"]["x"]["type"] = "string"
    first.runtime_policy["stop"].append("b")
    second = compile_contract(source, inputs={})
    assert second.output_schema == {"type": "object", "properties": {"x": {"type": "array"}}}
    assert second.runtime_policy == {"stop": ["a"]}
