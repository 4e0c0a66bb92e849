"""What a scenario states (``ScenarioExpectations``), per-turn ``tool_results``, and telling a
folder's files apart (docs/scenarios.md)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from runport.contracts import (
    AdapterDescriptor,
    Diagnostic,
    ExecutionReceipt,
    OperationEnvelope,
    fingerprint,
)
from runport.core import (
    ScenarioError,
    ScenarioExpectations,
    ScenarioTurn,
    ToolCallDeltaEvent,
    is_contract_document,
    is_scenario_document,
    parse_scenario,
)
from runport.core._scenario import FinishEvent

CALL = {"kind": "tool_call_delta", "index": 0, "call_id": "c1", "name": "add"}


def turns(*items: dict[str, Any]) -> dict[str, Any]:
    return {"api_version": "runport.mock/v1", "id": "s", "turns": list(items)}


def envelope(
    *, output: Any = "hi", valid: bool | None = True, codes: tuple[str, ...] = ()
) -> OperationEnvelope:
    receipt = ExecutionReceipt(
        adapter=AdapterDescriptor(id="a", version="1", capabilities=[]),
        request_fingerprint="0" * 64,
        output_fingerprint=fingerprint(output),
        output=output,
        output_schema_valid=valid,
    )
    diagnostics = [Diagnostic(code=code, message="m") for code in codes]
    ok = not codes
    return OperationEnvelope(
        operation="execute", ok=ok, result=receipt if ok else None, diagnostics=diagnostics
    )


# ---- tool_results ----------------------------------------------------------------------------


def test_a_turn_states_what_its_tool_calls_get_back() -> None:
    scenario = parse_scenario(
        turns(
            {
                "events": [{**CALL, "arguments_fragment": "{}"}, {"kind": "finish"}],
                "tool_results": {"c1": {"sum": 3}},
            },
            {"events": [{"kind": "delta", "text": "3"}, {"kind": "finish"}]},
        )
    )

    assert scenario.turns[0].tool_results == {"c1": {"sum": 3}}
    assert scenario.turns[1].tool_results == {}
    assert hash(scenario) == hash(scenario.model_copy())


def test_a_tool_result_for_a_call_the_turn_did_not_make_is_refused() -> None:
    data = turns(
        {
            "events": [{**CALL, "arguments_fragment": "{}"}, {"kind": "finish"}],
            "tool_results": {"c1": "ok", "c9": "stray"},
        }
    )

    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, source="s.yaml")

    assert str(caught.value) == (
        "s.yaml: turn 0: field 'tool_results': key 'c9' is not the call id of one of this "
        "turn's tool calls (its calls: 'c1')"
    )


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ({"c1": float("nan")}, "not a finite number"),
        ({"c1": "\ud800"}, "lone surrogate"),
        ([1], "field 'tool_results'"),
    ],
)
def test_tool_results_must_be_json_by_call_id(results: Any, message: str) -> None:
    data = turns(
        {
            "events": [{**CALL, "arguments_fragment": "{}"}, {"kind": "finish"}],
            "tool_results": results,
        }
    )

    with pytest.raises(ScenarioError, match=message):
        parse_scenario(data)


def test_a_turn_built_in_code_checks_its_tool_results_too() -> None:
    call = ToolCallDeltaEvent(index=0, call_id="c1", name="add")

    with pytest.raises(ValidationError, match="tool_results 'zz': this turn makes no call"):
        ScenarioTurn(events=(call, FinishEvent()), tool_results={"zz": 1})


# ---- expectations ----------------------------------------------------------------------------


def test_unstated_expectations_are_always_met() -> None:
    assert ScenarioExpectations().problems(envelope()) == []
    assert ScenarioExpectations().problems(envelope(codes=("TQX_RUNTIME_TIMEOUT",))) == []


def test_met_expectations_report_nothing() -> None:
    stated = ScenarioExpectations(
        status="success",
        diagnostics=(),
        output_fingerprint=fingerprint("hi"),
        output_schema_valid=True,
    )

    assert stated.problems(envelope()) == []


def test_every_unmet_expectation_is_named() -> None:
    stated = ScenarioExpectations(
        status="success",
        failure="TQX_OUTPUT_SCHEMA",
        diagnostics=("TQX_OUTPUT_SCHEMA",),
        output_fingerprint="f" * 64,
        output_schema_valid=True,
    )

    assert stated.problems(envelope(codes=("TQX_RUNTIME_TIMEOUT",))) == [
        "status: expected success, got failure ['TQX_RUNTIME_TIMEOUT']",
        "failure: expected TQX_OUTPUT_SCHEMA, got ['TQX_RUNTIME_TIMEOUT']",
        "diagnostics: expected ['TQX_OUTPUT_SCHEMA'], got ['TQX_RUNTIME_TIMEOUT']",
        f"output fingerprint: expected {'f' * 64}, got None",
        "output_schema_valid: expected True, got None",
    ]


def test_a_v1_file_states_its_expectations_apart_from_its_turns() -> None:
    scenario = parse_scenario(
        {**turns({"events": [{"kind": "finish"}]}), "expect": {"status": "failure"}}
    )

    assert scenario.expectations == ScenarioExpectations(status="failure")
    assert "expect" not in type(scenario.turns[0]).model_fields


# ---- which file is which ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "contract", "scenario"),
    [
        ({"api_version": "runport/v1alpha1", "id": "x"}, True, False),
        ({"api_version": "templiqx/v1alpha1", "messages": []}, True, False),
        ({"api_version": "templiqx/v1alpha1", "package": {"contracts": []}}, False, False),
        ({"messages": [], "id": "no version yet"}, True, False),
        ({"api_version": "runport/v9", "messages": []}, True, False),
        ({"api_version": "runport.mock/v1", "turns": []}, False, True),
        ({"api_version": "templiqx.mock/v1alpha1", "messages": []}, False, True),
        ({"inputs": {"messages": 1}}, False, False),
        (["api_version"], False, False),
        (None, False, False),
    ],
)
def test_contracts_and_scenarios_are_told_apart(
    data: object, contract: bool, scenario: bool
) -> None:
    assert is_contract_document(data) is contract
    assert is_scenario_document(data) is scenario
