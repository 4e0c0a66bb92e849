from __future__ import annotations

import copy
import importlib.metadata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import CompiledInteraction, ErrorCode, Message, ToolSpec, fingerprint
from runport.core import Contract, ContractError, compile_contract, load_contract, parse_contract
from runport.core._schema import validate_output

CONTRACTS = Path(__file__).parent / "contracts"
LEASE = load_contract(CONTRACTS / "lease-renewal.yaml")
EVAL_INPUTS = LEASE.evals[0].inputs
EVAL_CONTEXT = LEASE.evals[0].context


def problems(contract: Contract, inputs: Any, context: Any = None) -> list[tuple[str, str | None]]:
    with pytest.raises(ContractError) as caught:
        compile_contract(contract, inputs=inputs, context=context)
    return [(d.code, d.json_pointer) for d in caught.value.diagnostics]


def contract_with(**changes: Any) -> Contract:
    show_a = {"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.a"}}
    data: dict[str, Any] = {
        "api_version": "runport/v1alpha1",
        "id": "c",
        "version": "0.1.0",
        "inputs": {"a": {"schema": {}}},
        "messages": [
            {
                "role": "user",
                "content": [show_a],
            }
        ],
        "output_schema": {"type": "string"},
    }
    data.update(changes)
    return parse_contract(data)


# The crm3-style contract ----------------------------------------------------------------------


def test_first_eval_compiles_to_exact_messages() -> None:
    compiled = compile_contract(LEASE, inputs=EVAL_INPUTS, context=EVAL_CONTEXT)

    assert compiled.messages == [
        Message(
            role="system",
            content="Draft a short, factual renewal notice. Use only the given facts.",
        ),
        Message(
            role="user",
            content=(
                "Office: NORTH\n"
                "Tenant: Example Bakery Ltd.\n"
                'Lease: {"end_date":"2026-12-31","indexed":true,"monthly_rent":1450.5,'
                '"start_date":"2024-01-01"}\n'
                "The rent is indexed.\n"
                "Clauses: break option; indexation"
            ),
        ),
    ]


def test_second_eval_takes_the_other_branches() -> None:
    fixture = LEASE.evals[1]

    compiled = compile_contract(LEASE, inputs=fixture.inputs, context=fixture.context)

    assert compiled.messages[1].content == (
        "Office: SOUTH\n"
        "Tenant: Sample Florist\n"
        'Lease: {"end_date":"2026-02-28","monthly_rent":900,"start_date":"2025-03-01"}\n'
        "The rent is fixed."
    )


def test_compiled_interaction_carries_the_contract() -> None:
    compiled = compile_contract(
        LEASE,
        inputs=EVAL_INPUTS,
        context=EVAL_CONTEXT,
        target_capabilities=["text", "json", "text"],
    )

    assert compiled.compiler == f"runport-core/{importlib.metadata.version('runport-core')}"
    assert compiled.contract_id == "lease-renewal.notice_v2"
    assert compiled.contract_version == "1.2.0-rc.1+build.7"
    assert compiled.output_schema == LEASE.output_schema
    assert compiled.required_capabilities == ["structured_output", "text"]
    assert compiled.target_capabilities == ["json", "text"]
    assert compiled.runtime_policy == {"temperature": 0, "max_response_bytes": 65536}
    assert compiled.extensions == {}
    assert compiled.tools is None
    assert "tools" not in compiled.model_dump(mode="json")


def test_every_eval_compiles_and_its_fake_output_validates() -> None:
    for fixture in LEASE.evals:
        compiled = compile_contract(LEASE, inputs=fixture.inputs, context=fixture.context)
        assert validate_output(compiled.output_schema, fixture.fake_output) == []


def test_without_target_capabilities_the_list_is_empty() -> None:
    compiled = compile_contract(LEASE, inputs=EVAL_INPUTS, context=EVAL_CONTEXT)

    assert compiled.target_capabilities == []


def test_compilation_is_deterministic_and_leaves_its_arguments_alone() -> None:
    inputs = copy.deepcopy(EVAL_INPUTS)
    context = copy.deepcopy(EVAL_CONTEXT)
    before = LEASE.model_dump()

    first = compile_contract(LEASE, inputs=inputs, context=context)
    second = compile_contract(LEASE, inputs=inputs, context=context)

    assert first == second
    assert fingerprint(first.model_dump(mode="json")) == fingerprint(second.model_dump(mode="json"))
    assert inputs == EVAL_INPUTS
    assert context == EVAL_CONTEXT
    assert LEASE.model_dump() == before
    assert first.output_schema is not LEASE.output_schema


def test_tools_pass_through() -> None:
    tool = {"name": "lookup", "description": "find", "parameters": {"type": "object"}}
    contract = contract_with(tools=[tool])

    compiled = compile_contract(contract, inputs={})

    assert compiled.tools == [ToolSpec(**tool)]


def test_result_is_a_compiled_interaction() -> None:
    compiled = compile_contract(contract_with(), inputs={"a": 1})

    assert isinstance(compiled, CompiledInteraction)
    assert compiled.messages == [Message(role="user", content="1")]


# Value problems -------------------------------------------------------------------------------


def test_missing_required_input_and_context() -> None:
    inputs = {k: v for k, v in EVAL_INPUTS.items() if k != "tenant_name"}

    assert problems(LEASE, inputs, {"issued_at": "2026-01-15T09:30:00Z"}) == [
        (ErrorCode.VALUE_REQUIRED, "/inputs/tenant_name"),
        (ErrorCode.VALUE_REQUIRED, "/context/office"),
    ]


def test_missing_optional_values_are_fine() -> None:
    inputs = {k: v for k, v in EVAL_INPUTS.items() if k != "clauses"}

    compiled = compile_contract(LEASE, inputs=inputs, context={"office": "x"})

    assert not compiled.messages[1].content.endswith("indexation")


def test_undeclared_values_are_unknown() -> None:
    with pytest.raises(ContractError) as caught:
        compile_contract(
            LEASE,
            inputs={**EVAL_INPUTS, "tenant": "typo"},
            context={**EVAL_CONTEXT, "locale": "nl"},
        )

    assert [(d.code, d.json_pointer) for d in caught.value.diagnostics] == [
        (ErrorCode.VALUE_UNKNOWN, "/inputs/tenant"),
        (ErrorCode.VALUE_UNKNOWN, "/context/locale"),
    ]
    assert caught.value.diagnostics[0].message == (
        "input 'tenant' is not declared (declared: clauses, lease, tenant_name)"
    )


def test_values_failing_their_schema_point_inside_the_value() -> None:
    lease = {"start_date": "2024-13-01", "end_date": "2026-12-31", "monthly_rent": -1}
    inputs = {"tenant_name": "", "lease": lease, "clauses": ["ok", 7]}
    context = {"office": "x", "issued_at": "2026-01-15 09:30"}

    assert problems(LEASE, inputs, context) == [
        (ErrorCode.VALUE_SCHEMA, "/inputs/tenant_name"),
        (ErrorCode.VALUE_SCHEMA, "/inputs/lease/monthly_rent"),
        (ErrorCode.VALUE_SCHEMA, "/inputs/lease/start_date"),
        (ErrorCode.VALUE_SCHEMA, "/inputs/clauses/1"),
        (ErrorCode.VALUE_SCHEMA, "/context/issued_at"),
    ]


def test_all_value_problems_are_reported_together() -> None:
    inputs = {"lease": {"start_date": "2024-01-01"}, "extra": 1}
    context = {"issued_at": "yesterday"}

    with pytest.raises(ContractError) as caught:
        compile_contract(LEASE, inputs=inputs, context=context)

    assert [(d.code, d.json_pointer) for d in caught.value.diagnostics] == [
        (ErrorCode.VALUE_REQUIRED, "/inputs/tenant_name"),
        (ErrorCode.VALUE_SCHEMA, "/inputs/lease"),
        (ErrorCode.VALUE_SCHEMA, "/inputs/lease"),
        (ErrorCode.VALUE_UNKNOWN, "/inputs/extra"),
        (ErrorCode.VALUE_REQUIRED, "/context/office"),
        (ErrorCode.VALUE_SCHEMA, "/context/issued_at"),
    ]
    assert str(caught.value) == (
        "contract: 6 problems; first: TQX_VALUE_REQUIRED at /inputs/tenant_name: "
        "required input 'tenant_name' is missing"
    )


@pytest.mark.parametrize("inputs", [None, [], "a=1", 3])
def test_inputs_must_be_a_mapping(inputs: Any) -> None:
    assert problems(contract_with(), inputs) == [(ErrorCode.VALUE_SCHEMA, "/inputs")]


def test_context_must_be_a_mapping() -> None:
    assert problems(contract_with(), {}, ["x"]) == [(ErrorCode.VALUE_SCHEMA, "/context")]


@pytest.mark.parametrize(
    "bad", [object(), {1, 2}, ("tuple",), float("nan"), float("inf"), {1: "int key"}, b"raw"]
)
def test_values_must_be_json(bad: Any) -> None:
    assert problems(contract_with(), {"a": {"nested": [bad]}}) == [
        (ErrorCode.VALUE_SCHEMA, "/inputs/a")
    ]


def test_explicit_null_is_checked_against_the_schema() -> None:
    contract = contract_with(inputs={"a": {"schema": {"type": "string"}}})

    assert problems(contract, {"a": None}) == [(ErrorCode.VALUE_SCHEMA, "/inputs/a")]


def test_value_names_are_escaped_in_pointers() -> None:
    contract = contract_with(
        inputs={"a/b~c": {"schema": {"type": "string"}, "required": True}},
        messages=[{"role": "user", "content": []}],
    )

    assert problems(contract, {}) == [(ErrorCode.VALUE_REQUIRED, "/inputs/a~1b~0c")]


# Rendering problems ---------------------------------------------------------------------------


def test_for_each_over_a_non_list_refuses_the_whole_compilation() -> None:
    loop = {
        "kind": "for_each",
        "collection": {"kind": "ref", "path": "inputs.a"},
        "item": "x",
        "body": [],
    }
    contract = contract_with(
        messages=[
            {"role": "system", "content": [{"kind": "text", "value": "fine"}]},
            {"role": "user", "content": [loop]},
            {"role": "user", "content": [{"kind": "text", "value": "-"}, loop]},
        ]
    )

    with pytest.raises(ContractError) as caught:
        compile_contract(contract, inputs={"a": "not a list"})

    assert [(d.code, d.json_pointer) for d in caught.value.diagnostics] == [
        (ErrorCode.VALUE_SCHEMA, "/messages/1/content/0/collection"),
        (ErrorCode.VALUE_SCHEMA, "/messages/2/content/1/collection"),
    ]


def test_contract_built_without_parse_checks_is_still_refused_cleanly() -> None:
    raw = contract_with().model_dump()
    raw["inputs"]["a"]["schema"] = {"type": 5}
    raw["messages"][0]["content"][0]["expression"]["path"] = "nowhere"
    contract = Contract.model_validate(raw)

    assert problems(contract, {"a": "x"}) == [(ErrorCode.CONTRACT_INVALID, "/inputs/a")]
    assert problems(contract, {}) == [
        (ErrorCode.CONTRACT_INVALID, "/messages/0/content/0/expression/path")
    ]


# Properties -----------------------------------------------------------------------------------


@settings(deadline=None)
@given(name=st.text(min_size=1), office=st.text(min_size=1))
def test_any_valid_strings_compile_and_trim(name: str, office: str) -> None:
    inputs = {**EVAL_INPUTS, "tenant_name": name}
    context = {"office": office}

    compiled = compile_contract(LEASE, inputs=inputs, context=context)

    assert compiled.messages[1].content.startswith(
        f"Office: {office.strip().upper()}\nTenant: {name.strip()}\nLease: "
    )
