"""The ``reasoning_delta`` scenario event, ``usage.reasoning_tokens`` and the ``reasoning``
expectation (docs/scenarios.md)."""

from __future__ import annotations

from typing import Any

import pytest

from runport.contracts import ExecutionReceipt, ReasoningPart
from runport.core import (
    DeltaEvent,
    FinishEvent,
    ReasoningDeltaEvent,
    ScenarioError,
    ScenarioExpectations,
    UsageEvent,
    parse_scenario,
)


def _v1(events: list[Any], **top: Any) -> dict[str, Any]:
    return {"api_version": "runport.mock/v1", "id": "s", "turns": [{"events": events}], **top}


_FINISH = {"kind": "finish", "finish_reason": "stop"}


def test_reasoning_delta_loads_with_and_without_a_signature() -> None:
    scenario = parse_scenario(
        _v1(
            [
                {"kind": "reasoning_delta", "text": "Think "},
                {"kind": "reasoning_delta", "text": "hard.", "signature": "sig-1"},
                {"kind": "delta", "text": "42"},
                {"kind": "usage", "input_tokens": 3, "output_tokens": 9, "reasoning_tokens": 7},
                _FINISH,
            ],
            expect={"reasoning": ["Think hard."]},
        )
    )

    assert scenario.turns[0].events == (
        ReasoningDeltaEvent(text="Think "),
        ReasoningDeltaEvent(text="hard.", signature="sig-1"),
        DeltaEvent(text="42"),
        UsageEvent(input_tokens=3, output_tokens=9, reasoning_tokens=7),
        FinishEvent(finish_reason="stop"),
    )
    assert scenario.expectations.reasoning == ("Think hard.",)


def test_reasoning_is_not_part_of_the_answer_an_explicit_output_must_agree_with() -> None:
    scenario = parse_scenario(
        _v1(
            [
                {"kind": "reasoning_delta", "text": "not the answer"},
                {"kind": "delta", "text": "yes"},
                {"kind": "finish", "output": "yes"},
            ]
        )
    )
    assert scenario.turns[0].terminal == FinishEvent(output="yes")


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            {"kind": "reasoning_delta", "text": ""},
            "<scenario>: turn 0, event 0 (reasoning_delta): field 'text': String should have at "
            "least 1 character",
        ),
        (
            {"kind": "reasoning_delta"},
            "<scenario>: turn 0, event 0 (reasoning_delta): missing field 'text'",
        ),
        (
            {"kind": "reasoning_delta", "text": "x", "signature": ""},
            "<scenario>: turn 0, event 0 (reasoning_delta): field 'signature': String should "
            "have at least 1 character",
        ),
        (
            {"kind": "reasoning_delta", "text": "x", "signature": 7},
            "<scenario>: turn 0, event 0 (reasoning_delta): field 'signature': Input should be "
            "a valid string",
        ),
        (
            {"kind": "reasoning_delta", "text": "x", "redacted": True},
            "<scenario>: turn 0, event 0 (reasoning_delta): unknown field 'redacted'",
        ),
        (
            {"kind": "usage", "input_tokens": 1, "output_tokens": 1, "reasoning_tokens": -1},
            "<scenario>: turn 0, event 0 (usage): field 'reasoning_tokens': Input should be "
            "greater than or equal to 0",
        ),
    ],
)
def test_bad_reasoning_events_are_coded_scenario_errors(event: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_v1([event, _FINISH]))

    assert str(caught.value).startswith(message)
    assert caught.value.code == "TQX_DATA_INVALID"


def test_an_empty_reasoning_event_built_in_code_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 character"):
        ReasoningDeltaEvent(text="")


def test_the_reasoning_expectation_must_be_a_list_of_strings() -> None:
    with pytest.raises(ScenarioError, match=r"field 'expect\.reasoning'"):
        parse_scenario(_v1([_FINISH], expect={"reasoning": "Think hard."}))


def _receipt(*texts: str) -> ExecutionReceipt:
    return ExecutionReceipt.model_validate(
        {
            "adapter": {"id": "a", "version": "1", "capabilities": ["text"]},
            "request_fingerprint": "0" * 64,
            "output": "x",
            "output_fingerprint": "1" * 64,
            "output_schema_valid": True,
            "text": "x",
            "reasoning": [ReasoningPart(text=text).model_dump() for text in texts] or None,
        }
    )


def test_a_reasoning_mismatch_is_a_problem_naming_both_sides() -> None:
    expect = ScenarioExpectations(reasoning=("Think hard.",))
    problems = expect.compare(ok=True, codes=(), errors=(), receipt=_receipt("Think", " hard."))
    assert problems == [
        "reasoning: expected 1 block(s) ['Think hard.'], got 2 block(s) ['Think', ' hard.']"
    ]
    assert expect.compare(ok=True, codes=(), errors=(), receipt=_receipt("Think hard.")) == []


def test_an_expectation_of_no_reasoning_catches_reasoning_that_appears() -> None:
    expect = ScenarioExpectations(reasoning=())
    assert expect.compare(ok=True, codes=(), errors=(), receipt=_receipt()) == []
    assert expect.compare(ok=True, codes=(), errors=(), receipt=None) == []
    assert expect.compare(ok=True, codes=(), errors=(), receipt=_receipt("hm")) == [
        "reasoning: expected no reasoning, got 1 block(s) ['hm']"
    ]
