"""The scenario format: both file formats load into one normalized ``Scenario``
(docs/scenarios.md)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from runport.core import Scenario, ScenarioError, load_scenario, parse_scenario
from runport.core._scenario import (
    DelayEvent,
    DeltaEvent,
    DocumentExpectation,
    EvidenceExpectation,
    FailEvent,
    FinishEvent,
    ScenarioExpectations,
    ScenarioTurn,
    ToolCallDeltaEvent,
    UsageEvent,
)

SCENARIOS = Path(__file__).parent / "scenarios"


def _v1(*turns: list[Any], **top: Any) -> dict[str, Any]:
    return {
        "api_version": "runport.mock/v1",
        "id": "s",
        "turns": [{"events": events} for events in turns],
        **top,
    }


# ---- runport.mock/v1 ------------------------------------------------------------------------


def test_spec_example_loads_normalized() -> None:
    scenario = load_scenario(SCENARIOS / "greet.yaml")

    assert scenario.api_version == "runport.mock/v1"
    assert scenario.id == "greet"
    assert scenario.source == str(SCENARIOS / "greet.yaml")
    assert scenario.turns == (
        ScenarioTurn(
            events=(
                DeltaEvent(text="Hel"),
                DeltaEvent(text="lo"),
                DelayEvent(ms=25),
                UsageEvent(input_tokens=5, output_tokens=2),
                FinishEvent(finish_reason="stop"),
            )
        ),
        ScenarioTurn(
            events=(
                ToolCallDeltaEvent(
                    index=0, call_id="c1", name="add", arguments_fragment='{"a": 1,'
                ),
                ToolCallDeltaEvent(
                    index=0, call_id="c1", name="add", arguments_fragment=' "b": 2}'
                ),
                DeltaEvent(text="partial"),
                FailEvent(
                    code="TQX_RUNTIME_UNAVAILABLE", message="upstream reset", retry_after_ms=None
                ),
            )
        ),
    )
    assert all(not turn.fixture_output_first for turn in scenario.turns)
    assert not scenario.turns[0].terminal.has_output  # type: ignore[union-attr]


def test_v1_check_metadata_is_kept() -> None:
    scenario = load_scenario(SCENARIOS / "greet.yaml")

    assert scenario.contract == "greet"
    assert scenario.input == "inputs/greet.json"
    assert scenario.expectations.status == "success"
    assert scenario.expectations.diagnostics == ()
    assert scenario.expectations.output_fingerprint == (
        "c25bf945aaff8fe16826d3c1ef117044d6cc1af8e0e9f0b4162308460a8207a7"
    )
    assert scenario.expectations.output_schema_valid is True
    assert scenario.expectations.failure is None
    assert scenario.kind is None


def test_expectations_gather_the_expected_fields() -> None:
    v1 = load_scenario(SCENARIOS / "greet.yaml")
    tqx = load_scenario(SCENARIOS / "tqx-steps-failure.json")

    assert v1.expectations == ScenarioExpectations(
        status="success",
        diagnostics=(),
        output_fingerprint="c25bf945aaff8fe16826d3c1ef117044d6cc1af8e0e9f0b4162308460a8207a7",
        output_schema_valid=True,
    )
    assert tqx.expectations == ScenarioExpectations(
        status="failure",
        failure="TQX_RUNTIME_RATE_LIMITED",
        diagnostics=("TQX_RUNTIME_RATE_LIMITED",),
        receipt_payload_policy="no_successful_receipt",
    )


def test_unstated_expectations_are_none() -> None:
    scenario = parse_scenario(_v1([{"kind": "finish"}]))

    assert scenario.contract is None
    assert scenario.input is None
    assert scenario.expectations.status is None
    assert scenario.expectations.diagnostics is None
    assert scenario.expectations.output_fingerprint is None
    assert scenario.expectations.output_schema_valid is None
    assert scenario.source is None
    assert scenario.expectations == ScenarioExpectations()


def test_json_and_yaml_spellings_load_the_same_scenario() -> None:
    from_yaml = load_scenario(SCENARIOS / "greet.yaml")
    from_json = load_scenario(SCENARIOS / "greet.json")

    assert from_json.model_copy(update={"source": None}) == from_yaml.model_copy(
        update={"source": None}
    )


@pytest.mark.parametrize(
    "name",
    [
        "greet.yaml",
        "greet.json",
        "tools.yaml",
        "tqx-steps-success.json",
        "tqx-steps-failure.json",
        "tqx-steps-invalid-output.json",
        "tqx-events.json",
        "tqx-events-output.yaml",
    ],
)
def test_loading_twice_gives_equal_scenarios(name: str) -> None:
    first = load_scenario(SCENARIOS / name)
    second = load_scenario(SCENARIOS / name)

    assert first == second
    assert first is not second
    assert first.model_dump(mode="json") == second.model_dump(mode="json")


def test_tool_call_fragments_are_filled_in_from_the_first() -> None:
    scenario = load_scenario(SCENARIOS / "tools.yaml")

    assert scenario.turns[0].events == (
        ToolCallDeltaEvent(index=1, call_id="call_1", name="lookup", arguments_fragment=""),
        ToolCallDeltaEvent(index=0, call_id="first", name="add", arguments_fragment='{"a":'),
        ToolCallDeltaEvent(
            index=1, call_id="call_1", name="lookup", arguments_fragment='{"q": "x"}'
        ),
        ToolCallDeltaEvent(index=0, call_id="first", name="add", arguments_fragment=" 1}"),
        FinishEvent(finish_reason="tool_calls"),
    )


def test_explicit_output_is_kept_apart_from_absent_output() -> None:
    explicit_null = parse_scenario(_v1([{"kind": "finish", "output": None}]))
    absent = parse_scenario(_v1([{"kind": "finish"}]))

    null_finish = explicit_null.turns[0].terminal
    absent_finish = absent.turns[0].terminal
    assert isinstance(null_finish, FinishEvent)
    assert isinstance(absent_finish, FinishEvent)
    assert null_finish.has_output is True
    assert null_finish.output is None
    assert absent_finish.has_output is False
    assert null_finish != absent_finish
    assert explicit_null != absent
    assert hash(null_finish) != hash(absent_finish)
    assert FinishEvent(output={"a": [1]}) == FinishEvent(output={"a": [1]})
    assert hash(FinishEvent(output={"a": [1]})) == hash(FinishEvent(output={"a": [1]}))
    assert FinishEvent(output=1) != FinishEvent(output=1.0)  # JSON equality, not Python's


@pytest.mark.parametrize(
    ("deltas", "output"),
    [
        (["Hel", "lo"], "Hello"),
        (['{"a": ', "[1, 2]}"], {"a": [1, 2]}),
        (["4", "2"], 42),
        (["42"], "42"),
        (["null"], None),
        ([], {"anything": True}),
        ([], None),
    ],
)
def test_explicit_output_that_agrees_with_the_deltas_loads(deltas: list[str], output: Any) -> None:
    events = [{"kind": "delta", "text": text} for text in deltas]
    scenario = parse_scenario(_v1([*events, {"kind": "finish", "output": output}]))

    finish = scenario.turns[0].terminal
    assert isinstance(finish, FinishEvent)
    assert finish.has_output
    assert finish.output == output


def test_v1_loads_every_event_field() -> None:
    scenario = parse_scenario(
        _v1(
            [
                {"kind": "delay", "ms": 1},
                {"kind": "usage", "input_tokens": 0, "output_tokens": 0},
                {"kind": "tool_call_delta", "index": 3, "name": "t"},
                {"kind": "fail", "code": "TQX_RUNTIME_RATE_LIMITED", "message": "m",
                 "retry_after_ms": 250},
            ]
        )
    )  # fmt: skip

    assert scenario.turns[0].events == (
        DelayEvent(ms=1),
        UsageEvent(input_tokens=0, output_tokens=0),
        ToolCallDeltaEvent(index=3, call_id="call_3", name="t", arguments_fragment=""),
        FailEvent(code="TQX_RUNTIME_RATE_LIMITED", message="m", retry_after_ms=250),
    )


def test_scenario_is_immutable() -> None:
    scenario = load_scenario(SCENARIOS / "greet.yaml")

    with pytest.raises(ValidationError):
        scenario.id = "other"  # type: ignore[misc]
    first = scenario.turns[0].events[0]
    assert isinstance(first, DeltaEvent)
    with pytest.raises(ValidationError):
        first.text = "x"  # type: ignore[misc]
    assert isinstance(scenario.turns, tuple)
    assert isinstance(scenario.turns[0].events, tuple)


def test_parse_does_not_change_its_input() -> None:
    data = _v1([{"kind": "tool_call_delta", "index": 0, "name": "f"}, {"kind": "finish"}])
    before = copy.deepcopy(data)

    parse_scenario(data)

    assert data == before


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        ((), "a turn needs at least one event"),
        ((DeltaEvent(text="a"),), "exactly one terminal"),
        ((FinishEvent(), DeltaEvent(text="a")), "exactly one terminal"),
        ((FinishEvent(), FinishEvent()), "exactly one terminal"),
        (
            (
                ToolCallDeltaEvent(index=0, call_id="a", name="f"),
                ToolCallDeltaEvent(index=1, call_id="a", name="g"),
                FinishEvent(),
            ),
            "two tool calls share the call_id 'a'",
        ),
        (
            (
                ToolCallDeltaEvent(index=0, call_id="a", name="f"),
                ToolCallDeltaEvent(index=0, call_id="a", name="g", arguments_fragment="{}"),
                FinishEvent(),
            ),
            "tool call 0 changes its call_id or name",
        ),
        (
            (
                ToolCallDeltaEvent(index=0, call_id="a", name="f"),
                ToolCallDeltaEvent(index=0, call_id="a", name="f"),
                FinishEvent(),
            ),
            "only the first fragment of tool call 0 may be empty",
        ),
        (
            (DeltaEvent(text="a"), FinishEvent(output="b")),
            "the explicit output disagrees with the turn's deltas",
        ),
    ],
)
def test_a_turn_built_in_code_keeps_the_invariants(events: tuple[Any, ...], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        ScenarioTurn(events=events)


def test_a_templiqx_turn_may_state_an_output_apart_from_its_deltas() -> None:
    turn = ScenarioTurn(
        events=(DeltaEvent(text="a"), FinishEvent(output="b")), fixture_output_first=True
    )

    assert turn.terminal == FinishEvent(output="b")


# ---- refusals: runport.mock/v1 --------------------------------------------------------------

_DELTA = {"kind": "delta", "text": "a"}
_FINISH = {"kind": "finish"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "<scenario>: a scenario is a mapping, not list"),
        ({"id": "x", "turns": []}, "<scenario>: missing field 'api_version'"),
        (
            {"api_version": "runport.mock/v2", "id": "x", "turns": []},
            "<scenario>: unknown api_version 'runport.mock/v2' (expected 'runport.mock/v1' or "
            "'templiqx.mock/v1alpha1')",
        ),
        (_v1([_FINISH], extra=1), "<scenario>: unknown field 'extra'"),
        (_v1([_FINISH], id=""), "<scenario>: field 'id': String should have at least 1 character"),
        (_v1(), "<scenario>: field 'turns': a scenario needs at least one turn"),
        (
            {"api_version": "runport.mock/v1", "id": "x", "turns": {"events": []}},
            "<scenario>: field 'turns': Input should be a valid list",
        ),
        (_v1([]), "<scenario>: turn 0: field 'events': a turn needs at least one event"),
        (
            {"api_version": "runport.mock/v1", "id": "x",
             "turns": [{"events": [_FINISH]}, {"events": [_FINISH], "name": "t"}]},
            "<scenario>: turn 1: unknown field 'name'",
        ),
        (
            {"api_version": "runport.mock/v1", "id": "x", "turns": ["finish"]},
            "<scenario>: turn 0: expected a mapping, not str",
        ),
        (_v1(["delta"]), "<scenario>: turn 0, event 0: an event is a mapping, not str"),
        (_v1([{"text": "a"}, _FINISH]), "<scenario>: turn 0, event 0: missing field 'kind'"),
        (
            _v1([_DELTA, {"kind": "sleep", "ms": 1}, _FINISH]),
            "<scenario>: turn 0, event 1: unknown kind 'sleep' (expected one of delta, "
            "reasoning_delta, tool_call_delta, server_tool_call, server_tool_result, citation, "
            "file_delta, delay, usage, finish, fail)",
        ),
        (
            _v1([{"kind": "delta", "text": "a", "role": "user"}, _FINISH]),
            "<scenario>: turn 0, event 0 (delta): unknown field 'role'",
        ),
        (
            _v1([{"kind": "delta", "text": ""}, _FINISH]),
            "<scenario>: turn 0, event 0 (delta): field 'text': String should have at least 1 "
            "character",
        ),
        (
            _v1([{"kind": "delta", "text": 5}, _FINISH]),
            "<scenario>: turn 0, event 0 (delta): field 'text': Input should be a valid string",
        ),
        (
            _v1([{"kind": "delta"}, _FINISH]),
            "<scenario>: turn 0, event 0 (delta): missing field 'text'",
        ),
        (
            _v1([{"kind": "delay", "ms": 0}, _FINISH]),
            "<scenario>: turn 0, event 0 (delay): field 'ms': Input should be greater than 0",
        ),
        (
            _v1([{"kind": "delay", "ms": True}, _FINISH]),
            "<scenario>: turn 0, event 0 (delay): field 'ms': Input should be a valid integer",
        ),
        (
            _v1([{"kind": "delay", "ms": 2.5}, _FINISH]),
            "<scenario>: turn 0, event 0 (delay): field 'ms': Input should be a valid integer",
        ),
        (
            _v1([{"kind": "usage", "input_tokens": "5", "output_tokens": 1}, _FINISH]),
            "<scenario>: turn 0, event 0 (usage): field 'input_tokens': Input should be a "
            "valid integer",
        ),
        (
            _v1([{"kind": "usage", "input_tokens": 1}, _FINISH]),
            "<scenario>: turn 0, event 0 (usage): missing field 'output_tokens'",
        ),
        (
            _v1([_FINISH, _DELTA]),
            "<scenario>: turn 0, event 0 (finish): a terminal event (finish or fail) must be "
            "the last event of its turn",
        ),
        (
            _v1([_DELTA, _FINISH, {"kind": "fail", "code": "TQX_RUNTIME_TIMEOUT", "message": ""}]),
            "<scenario>: turn 0, event 1 (finish): a terminal event (finish or fail) must be "
            "the last event of its turn",
        ),
        (
            _v1([_FINISH], [_DELTA, {"kind": "delay", "ms": 3}]),
            "<scenario>: turn 1, event 1 (delay): a turn must end in a terminal event (finish "
            "or fail); this one has none",
        ),
        (
            _v1([_DELTA, {"kind": "delta", "text": "b"}, {"kind": "finish", "output": "ab "}]),
            "<scenario>: turn 0, event 2 (finish): field 'output' disagrees with the turn's "
            "deltas (joined text 'ab'): it must equal that text or the JSON it parses to",
        ),
        (
            _v1([{"kind": "delta", "text": "1.0"}, {"kind": "finish", "output": 1}]),
            "<scenario>: turn 0, event 1 (finish): field 'output' disagrees with the turn's "
            "deltas (joined text '1.0')",
        ),
        (
            _v1([{"kind": "finish", "output": float("nan")}]),
            "<scenario>: not a finite number (JSON has no NaN or infinity) "
            "(at /turns/0/events/0/output)",
        ),
        (
            _v1([{"kind": "finish", "finish_reason": 1}]),
            "<scenario>: turn 0, event 0 (finish): field 'finish_reason': Input should be a "
            "valid string",
        ),
        (
            _v1([{"kind": "fail", "code": "TQX_NOPE", "message": "m"}]),
            "<scenario>: turn 0, event 0 (fail): field 'code': unknown error code 'TQX_NOPE'",
        ),
        (
            _v1([{"kind": "fail", "code": "TQX_RUNTIME_TIMEOUT"}]),
            "<scenario>: turn 0, event 0 (fail): missing field 'message'",
        ),
        (
            _v1([{"kind": "fail", "code": "TQX_RUNTIME_TIMEOUT", "message": "m",
                  "retry_after_ms": -1}]),
            "<scenario>: turn 0, event 0 (fail): field 'retry_after_ms': Input should be "
            "greater than or equal to 0",
        ),
        (
            _v1([{"kind": "tool_call_delta", "index": 0, "arguments_fragment": "{}"}, _FINISH]),
            "<scenario>: turn 0, event 0 (tool_call_delta): missing field 'name': the first "
            "fragment of tool call 0 must name the tool",
        ),
        (
            _v1([{"kind": "tool_call_delta", "index": -1, "name": "f"}, _FINISH]),
            "<scenario>: turn 0, event 0 (tool_call_delta): field 'index': Input should be "
            "greater than or equal to 0",
        ),
        (
            _v1([{"kind": "tool_call_delta", "index": 0, "name": "f"},
                 {"kind": "tool_call_delta", "index": 0, "arguments_fragment": ""}, _FINISH]),
            "<scenario>: turn 0, event 1 (tool_call_delta): field 'arguments_fragment': only "
            "the first fragment of tool call 0 may be empty",
        ),
        (
            _v1([{"kind": "tool_call_delta", "index": 0, "name": "f"},
                 {"kind": "tool_call_delta", "index": 0, "name": "g", "arguments_fragment": "{"},
                 _FINISH]),
            "<scenario>: turn 0, event 1 (tool_call_delta): field 'name': 'g' differs from "
            "tool call 0's first fragment ('f')",
        ),
        (
            _v1([{"kind": "tool_call_delta", "index": 0, "name": "f"},
                 {"kind": "tool_call_delta", "index": 0, "call_id": "other",
                  "arguments_fragment": "{"},
                 _FINISH]),
            "<scenario>: turn 0, event 1 (tool_call_delta): field 'call_id': 'other' differs "
            "from tool call 0's first fragment ('call_0')",
        ),
        (
            _v1([{"kind": "tool_call_delta", "index": 0, "name": "f", "call_id": "call_1"},
                 {"kind": "tool_call_delta", "index": 1, "name": "g"}, _FINISH]),
            "<scenario>: turn 0, event 1 (tool_call_delta): field 'call_id': 'call_1' is "
            "already the id of tool call 0",
        ),
        (
            _v1([_FINISH], expect={"status": "passed"}),
            "<scenario>: field 'expect.status': Input should be 'success' or 'failure'",
        ),
        (
            _v1([_FINISH], expect={"output_fingerprint": "ABC"}),
            "<scenario>: field 'expect.output_fingerprint': String should match pattern",
        ),
        (
            _v1([_FINISH], expect={"verdict": "ok"}),
            "<scenario>: unknown field 'expect.verdict'",
        ),
    ],
)  # fmt: skip
def test_v1_refusals_name_turn_event_and_field(data: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data)

    assert str(caught.value).startswith(message)
    assert caught.value.code == "TQX_DATA_INVALID"
    assert caught.value.source is None


def test_refusal_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(
        "api_version: runport.mock/v1\nid: b\nturns:\n"
        "  - events:\n      - {kind: delta, text: hi}\n      - {kind: finish}\n"
        "  - events:\n      - {kind: finish}\n      - {kind: delta, text: late}\n",
        encoding="utf-8",
    )

    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)

    assert str(caught.value) == (
        f"{path}: turn 1, event 0 (finish): a terminal event (finish or fail) must be the last "
        "event of its turn"
    )
    assert caught.value.source == str(path)
    assert caught.value.message == str(caught.value)


def test_parse_scenario_names_the_given_source() -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_v1([_DELTA]), source="inline.yaml")

    assert str(caught.value).startswith("inline.yaml: turn 0, event 0 (delta): ")
    assert caught.value.source == "inline.yaml"


# ---- decoding -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"api_version": "runport.mock/v1", "id": ', "invalid JSON at line 1, column 42: Exp"),
        ("[1, 2", "invalid JSON at line 1, column 6: Expecting"),
        ("api_version: runport.mock/v1\nid: [unclosed\n", "invalid YAML at line 3, column 1: "),
        ("a: 1\n  b: 2\n", "invalid YAML at line 2, column 4: "),
        ('{"id": "a", "id": "b"}', "invalid JSON: key 'id' appears twice in one mapping"),
        ("id: a\nid: b\n", "invalid YAML at line 2, column 1: key 'id' appears twice"),
        ('{"x": NaN}', "invalid JSON: NaN is not JSON"),
    ],
)
def test_malformed_files_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "scenario.txt"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)

    assert str(caught.value).startswith(f"{path}: {message}")
    assert caught.value.code == "TQX_DATA_INVALID"


def test_yaml_duplicate_key_is_named(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("api_version: runport.mock/v1\nid: a\nid: b\nturns: []\n", encoding="utf-8")

    with pytest.raises(ScenarioError, match="key 'id' appears twice"):
        load_scenario(path)


def test_missing_file_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"

    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)

    assert str(caught.value).startswith(f"{path}: cannot read the file: ")
    assert caught.value.source == str(path)


def test_empty_file_is_not_a_scenario(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("", encoding="utf-8")

    with pytest.raises(ScenarioError, match="a scenario is a mapping, not null"):
        load_scenario(path)


def test_yaml_dates_stay_strings(tmp_path: Path) -> None:
    """YAML would read ``2024-03-01`` as a date, which is not JSON; a scenario keeps the text."""
    path = tmp_path / "dates.yaml"
    path.write_text(
        "api_version: runport.mock/v1\nid: d\nturns:\n"
        "  - events:\n      - {kind: finish, output: {effective_date: 2024-03-01}}\n",
        encoding="utf-8",
    )

    finish = load_scenario(path).turns[0].terminal

    assert isinstance(finish, FinishEvent)
    assert finish.output == {"effective_date": "2024-03-01"}


def test_yaml_flow_mapping_is_read_as_yaml(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "{api_version: runport.mock/v1, id: f, turns: [{events: [{kind: finish}]}]}",
        encoding="utf-8",
    )

    assert load_scenario(path).id == "f"


# ---- templiqx.mock/v1alpha1 -----------------------------------------------------------------


def test_templiqx_steps_success_loads_as_one_turn() -> None:
    scenario = load_scenario(SCENARIOS / "tqx-steps-success.json")

    assert scenario.api_version == "templiqx.mock/v1alpha1"
    assert scenario.turns == (
        ScenarioTurn(
            events=(DelayEvent(ms=40), DelayEvent(ms=2), FinishEvent()),
            fixture_output_first=True,
        ),
    )
    assert scenario.id == "steps-success"
    assert scenario.contract == "date-extraction"
    assert scenario.kind == "happy_path"
    assert scenario.input == "inputs/request.json"
    assert scenario.expected_output == "outputs/expected.json"
    assert scenario.expectations.output_fingerprint == (
        "9007a927c0949bca07e3e42744fcf9768095a304161f600d070dac1d8defe035"
    )
    assert scenario.expectations.diagnostics == ()
    assert scenario.expectations.status == "success"
    assert scenario.expectations.failure is None
    assert scenario.expectations.output_schema_valid is True
    assert scenario.expectations.receipt_payload_policy == "fingerprints_only"
    assert scenario.expectations.evidence == (
        EvidenceExpectation(
            document_id="DOC-1",
            fragment_id="para-3",
            quote_sha256="0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        ),
    )
    assert scenario.expectations.document == DocumentExpectation(
        status="not_applicable", unresolved_references=0
    )
    assert scenario.expectations.golden_receipt_fingerprint == "1" * 64


def test_templiqx_failure_step_becomes_a_fail_event() -> None:
    scenario = load_scenario(SCENARIOS / "tqx-steps-failure.json")

    assert scenario.turns[0].events == (
        FailEvent(code="TQX_RUNTIME_RATE_LIMITED", message="slow down", retry_after_ms=1500),
    )
    assert scenario.expectations.output_schema_valid is None
    assert scenario.expectations.status == "failure"
    assert scenario.expectations.failure == "TQX_RUNTIME_RATE_LIMITED"
    assert scenario.expectations.diagnostics == ("TQX_RUNTIME_RATE_LIMITED",)
    assert scenario.expectations.receipt_payload_policy == "no_successful_receipt"
    assert scenario.expectations.evidence is None
    assert scenario.expectations.document is None


def test_templiqx_explicit_output_and_stated_invalidity_are_kept() -> None:
    scenario = load_scenario(SCENARIOS / "tqx-steps-invalid-output.json")

    finish = scenario.turns[0].terminal
    assert isinstance(finish, FinishEvent)
    assert finish.has_output
    assert finish.output == {"effective_date": "31/02/2024"}
    assert scenario.expectations.output_schema_valid is False
    assert scenario.kind == "invalid"


def test_templiqx_events_drop_reasoning_and_keep_deltas_and_usage() -> None:
    scenario = load_scenario(SCENARIOS / "tqx-events.json")

    assert scenario.turns == (
        ScenarioTurn(
            events=(
                DeltaEvent(text='{"summary": '),
                UsageEvent(input_tokens=7, output_tokens=2),
                DeltaEvent(text='"ok"}'),
                UsageEvent(input_tokens=0, output_tokens=3),
                FinishEvent(),
            ),
            fixture_output_first=True,
        ),
    )


def test_templiqx_yaml_manifest_with_finish_output() -> None:
    scenario = load_scenario(SCENARIOS / "tqx-events-output.yaml")

    assert scenario.kind == "drafting"
    assert scenario.turns[0].events == (
        DeltaEvent(text="draft text"),
        FinishEvent(output={"summary": "final"}),
    )
    # templiqx lets an explicit output differ from the deltas: the manifest loads unchanged.
    assert scenario.turns[0].fixture_output_first


def test_templiqx_output_null_means_no_output() -> None:
    """serde reads ``"output": null`` as ``None``; templiqx then falls back to the fixture."""
    data = _tqx_steps(
        {"id": "r", "kind": "request_received"},
        {"id": "ok", "kind": "runtime_success", "output": None},
    )

    finish = parse_scenario(data).turns[0].terminal

    assert isinstance(finish, FinishEvent)
    assert not finish.has_output


def test_templiqx_empty_steps_beside_events_is_accepted() -> None:
    data = _tqx_events(_START, _END, _TQX_FINISH)
    data["steps"] = []

    assert parse_scenario(data).turns[0].events == (FinishEvent(),)


def _tqx(**fields: Any) -> dict[str, Any]:
    return {
        "api_version": "templiqx.mock/v1alpha1",
        "id": "t",
        "contract": "c",
        "kind": "happy_path",
        "receipt_payload_policy": "fingerprints_only",
        **fields,
    }


def _tqx_steps(*steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return _tqx(steps=list(steps), **fields)


def _tqx_events(*events: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return _tqx(events=list(events), **fields)


_RECEIVED = {"id": "r", "kind": "request_received"}
_SUCCESS = {"id": "ok", "kind": "runtime_success"}
_START = {"id": "s", "kind": "start"}
_END = {"id": "e", "kind": "end"}
_TQX_FINISH = {"id": "f", "kind": "finish", "output_schema_valid": True}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            _tqx(steps=[_RECEIVED, _SUCCESS], events=[_START, _END, _TQX_FINISH]),
            "<scenario>: a manifest has exactly one of 'steps' and 'events', not both",
        ),
        (_tqx(), "<scenario>: a manifest needs exactly one of 'steps' and 'events'"),
        (_tqx_steps(), "<scenario>: field 'steps': a manifest needs at least one step"),
        (
            _tqx_events(),
            "<scenario>: field 'events': a manifest's events cannot be empty",
        ),
        (_tqx_steps(_RECEIVED, _SUCCESS, extra=True), "<scenario>: unknown field 'extra'"),
        (
            {**_tqx_steps(_RECEIVED, _SUCCESS), "contract": None},
            "<scenario>: field 'contract': Input should be a valid string",
        ),
        (
            _tqx_steps(_RECEIVED, _SUCCESS, contract=" "),
            "<scenario>: field 'contract' must be non-empty",
        ),
        (_tqx_steps(_RECEIVED, _SUCCESS, id=""), "<scenario>: field 'id' must be non-empty"),
        (
            _tqx_steps(_RECEIVED, _SUCCESS, kind="sad_path"),
            "<scenario>: field 'kind': Input should be 'happy_path', 'ambiguous', 'missing', "
            "'invalid', 'drafting', 'failure' or 'document_warning'",
        ),
        (
            _tqx_steps(_RECEIVED, _SUCCESS, receipt_payload_policy="everything"),
            "<scenario>: field 'receipt_payload_policy': Input should be 'fingerprints_only' "
            "or 'no_successful_receipt'",
        ),
        (
            _tqx_steps(_RECEIVED, _SUCCESS, expected_status="ok"),
            "<scenario>: field 'expected_status': Input should be 'success' or 'failure'",
        ),
        (
            _tqx_steps(_RECEIVED, _SUCCESS, evidence=[{"document_id": "d"}]),
            "<scenario>: missing field 'evidence.0.fragment_id'; missing field "
            "'evidence.0.quote_sha256'",
        ),
        (
            _tqx_steps(_RECEIVED, _SUCCESS, document_expectation={"status": "x", "pages": 1}),
            "<scenario>: unknown field 'document_expectation.pages'",
        ),
        (
            {k: v for k, v in _tqx_steps(_RECEIVED, _SUCCESS).items() if k != "kind"},
            "<scenario>: missing field 'kind'",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "d", "kind": "delay", "delay_ms": 5},
                       {"id": "d", "kind": "runtime_success"}),
            "<scenario>: turn 0, step 2 (runtime_success): field 'id': duplicate id 'd' (also "
            "step 1)",
        ),
        (
            _tqx_steps({"id": "d", "kind": "delay", "delay_ms": 5}, _RECEIVED, _SUCCESS),
            "<scenario>: turn 0, step 0 (delay): delay cannot come before request_received "
            "(the first step)",
        ),
        (
            _tqx_steps(_SUCCESS),
            "<scenario>: turn 0, step 0 (runtime_success): runtime_success cannot come before "
            "request_received (the first step)",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "d", "kind": "delay", "delay_ms": 0}, _SUCCESS),
            "<scenario>: turn 0, step 1 (delay): field 'delay_ms': Input should be greater "
            "than 0",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "d", "kind": "delay"}, _SUCCESS),
            "<scenario>: turn 0, step 1 (delay): missing field 'delay_ms'",
        ),
        (
            _tqx_steps(_RECEIVED, _SUCCESS, {"id": "d", "kind": "delay", "delay_ms": 5}),
            "<scenario>: turn 0, step 2 (delay): no step may follow runtime_success or "
            "runtime_failure",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "x", "kind": "runtime_failure"}),
            "<scenario>: turn 0, step 1 (runtime_failure): missing field 'failure'",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "x", "kind": "runtime_success",
                                   "failure": {"code": "TQX_RUNTIME_TIMEOUT", "detail": "d"}}),
            "<scenario>: turn 0, step 1 (runtime_success): unknown field 'failure'",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "x", "kind": "runtime_failure",
                                   "failure": {"code": "TQX_RUNTIME_TIMEOUT"}}),
            "<scenario>: turn 0, step 1 (runtime_failure): missing field 'failure.detail'",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "x", "kind": "runtime_failure",
                                   "failure": {"code": "TIMEOUT", "detail": "d"}}),
            "<scenario>: turn 0, step 1 (runtime_failure): field 'failure.code': unknown error "
            "code 'TIMEOUT'",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "d", "kind": "delay", "delay_ms": 5}),
            "<scenario>: turn 0: the steps must end in runtime_success or runtime_failure",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "r2", "kind": "request_received"}, _SUCCESS),
            "<scenario>: turn 0, step 1 (request_received): request_received must be the "
            "first step",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "x", "kind": "retry"}),
            "<scenario>: turn 0, step 1: unknown kind 'retry' (expected one of "
            "request_received, delay, runtime_success, runtime_failure)",
        ),
        (
            _tqx_steps({"id": " ", "kind": "request_received"}, _SUCCESS),
            "<scenario>: turn 0, step 0 (request_received): field 'id' must be non-empty",
        ),
        (
            _tqx_steps({"kind": "request_received"}, _SUCCESS),
            "<scenario>: turn 0, step 0 (request_received): missing field 'id'",
        ),
        (
            _tqx_steps(_RECEIVED, {"id": "ok", "kind": "runtime_success",
                                   "output_schema_valid": "yes"}),
            "<scenario>: turn 0, step 1 (runtime_success): field 'output_schema_valid': Input "
            "should be a valid boolean",
        ),
        (
            _tqx_events(_TQX_FINISH, _START, _END),
            "<scenario>: turn 0, event 0 (finish): finish cannot come before start (the first "
            "event)",
        ),
        (
            _tqx_events(_START, {"id": "s2", "kind": "start"}, _END, _TQX_FINISH),
            "<scenario>: turn 0, event 1 (start): start must be first and unique",
        ),
        (
            _tqx_events(_START, {"id": "d", "kind": "delta", "text": ""}, _END, _TQX_FINISH),
            "<scenario>: turn 0, event 1 (delta): field 'text': String should have at least 1 "
            "character",
        ),
        (
            _tqx_events(_START, {"id": "r", "kind": "reasoning", "text": ""}, _END, _TQX_FINISH),
            "<scenario>: turn 0, event 1 (reasoning): field 'text': String should have at "
            "least 1 character",
        ),
        (
            _tqx_events({"id": "r", "kind": "reasoning", "text": "x"}, _START, _END, _TQX_FINISH),
            "<scenario>: turn 0, event 0 (reasoning): reasoning cannot come before start",
        ),
        (
            _tqx_events(_START, _END, {"id": "d", "kind": "delta", "text": "x"}, _TQX_FINISH),
            "<scenario>: turn 0, event 2 (delta): delta must come between start and end",
        ),
        (
            _tqx_events(_START, _END,
                        {"id": "u", "kind": "usage", "input_tokens": 1, "output_tokens": 1},
                        _TQX_FINISH),
            "<scenario>: turn 0, event 2 (usage): usage must come between start and end",
        ),
        (
            _tqx_events(_START, _TQX_FINISH),
            "<scenario>: turn 0, event 1 (finish): finish must come after end",
        ),
        (
            _tqx_events(_START, _END, _END, _TQX_FINISH),
            "<scenario>: turn 0, event 2 (end): field 'id': duplicate id 'e' (also event 1)",
        ),
        (
            _tqx_events(_START, _END, {"id": "e2", "kind": "end"}, _TQX_FINISH),
            "<scenario>: turn 0, event 2 (end): end must come once, after start",
        ),
        (
            _tqx_events(_START, _END, _TQX_FINISH, {"id": "f2", "kind": "finish"}),
            "<scenario>: turn 0, event 3 (finish): no event may follow finish",
        ),
        (
            _tqx_events(_START, {"id": "d", "kind": "delta", "text": "x"}),
            "<scenario>: turn 0: the events must contain start, end and finish; missing end "
            "and finish",
        ),
        (
            _tqx_events(_START, _END),
            "<scenario>: turn 0: the events must contain start, end and finish; missing finish",
        ),
        (
            _tqx_events(_START, {"id": "d", "kind": "delta", "text": "x", "tokens": 1}, _END,
                        _TQX_FINISH),
            "<scenario>: turn 0, event 1 (delta): unknown field 'tokens'",
        ),
        (
            _tqx_events(_START, {"id": "u", "kind": "usage", "input_tokens": -1,
                                 "output_tokens": 0}, _END, _TQX_FINISH),
            "<scenario>: turn 0, event 1 (usage): field 'input_tokens': Input should be "
            "greater than or equal to 0",
        ),
        (
            _tqx_events(_START, {"id": "x", "kind": "tool_call"}, _END, _TQX_FINISH),
            "<scenario>: turn 0, event 1: unknown kind 'tool_call' (expected one of start, "
            "delta, reasoning, usage, end, finish)",
        ),
    ],
)  # fmt: skip
def test_templiqx_refusals_name_step_or_event(data: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data)

    assert str(caught.value).startswith(message)
    assert caught.value.code == "TQX_DATA_INVALID"


def test_scenario_model_fields_are_the_documented_ones() -> None:
    """The lead's ``scenarios check`` reads these; a rename must be deliberate."""
    assert list(Scenario.model_fields) == [
        "api_version",
        "id",
        "turns",
        "contract",
        "input",
        "expected_output",
        "kind",
        "expectations",
        "source",
    ]
