"""``runport scenarios check`` plays a scenario of several turns as a run, tools answered by
the scenario itself."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from runport.application import run
from runport.cli._scenario_tools import ScenarioTools
from runport.core import load_contract, load_scenario
from runport.mock import ScriptedRuntime

RUNS = Path(__file__).with_name("data") / "runs"

CORRECTED = """\
api_version: runport.mock/v1
id: corrected
contract: examples.trip-weather
input: input.json
expect: {status: success, output_schema_valid: true}
turns:
  - events:
      - {kind: delta, text: "{\\"go_to\\": \\"Ede\\"}"}
      - {kind: finish, finish_reason: stop}
  - events:
      - {kind: delta, text: "{\\"go_to\\": \\"Ede\\", \\"celsius\\": 14, \\"why\\": \\"warm\\"}"}
      - {kind: finish, finish_reason: stop}
"""


def folder(tmp_path: Path, scenario_text: str) -> Path:
    shutil.copy(RUNS / "contract.yaml", tmp_path / "contract.yaml")
    shutil.copy(RUNS / "input.json", tmp_path / "input.json")
    (tmp_path / "scenario.yaml").write_text(scenario_text, encoding="utf-8")
    return tmp_path


def with_header(header: str) -> str:
    text = (RUNS / "scenario.yaml").read_text(encoding="utf-8")
    return text.replace("id: trip-weather\n", f"id: trip-weather\n{header}")


def test_a_tool_turn_then_an_answer_is_played_as_a_run(tmp_path: Path, runport: Any) -> None:
    header = "input: input.json\nexpect: {status: success, output_schema_valid: true}\n"
    result = runport("scenarios", "check", folder(tmp_path, with_header(header)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   scenario trip-weather" in result.stdout


def test_a_correction_round_is_played_as_a_run(tmp_path: Path, runport: Any) -> None:
    result = runport("scenarios", "check", folder(tmp_path, CORRECTED))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 0 failed" in result.stdout


def test_a_run_that_fails_its_expectation_is_reported(tmp_path: Path, runport: Any) -> None:
    header = "input: input.json\nexpect: {status: failure}\n"
    result = runport("scenarios", "check", folder(tmp_path, with_header(header)))
    assert result.returncode == 2
    assert "status: expected failure, got success" in result.stdout


def test_a_run_failure_is_observed_with_its_code(tmp_path: Path, runport: Any) -> None:
    header = "input: input.json\nexpect: {status: failure, diagnostics: [TQX_VALUE_REQUIRED]}\n"
    (tmp_path / "empty.json").write_text("{}", encoding="utf-8")
    text = with_header(header).replace("input: input.json", "input: empty.json")
    result = runport("scenarios", "check", folder(tmp_path, text))
    assert result.returncode == 0, result.stdout


def test_each_scripted_call_is_answered_once_by_name_and_arguments() -> None:
    scenario = load_scenario(RUNS / "scenario.yaml")
    contract = load_contract(RUNS / "contract.yaml")
    result = run(
        contract,
        ScriptedRuntime(scenario),
        inputs={"cities": ["Delft", "Ede"]},
        tools=ScenarioTools(scenario).tools(contract.tools),
    )
    answers = [(m.tool_call_id, m.content) for m in result.messages if m.role == "tool"]
    # the format states no tool_results here: each call is answered, with JSON null
    assert answers == [("call_delft", "null"), ("call_ede", "null")]
    [tool] = ScenarioTools(scenario).tools(contract.tools)
    assert tool.name == "get_weather"
    assert tool.parameters == contract.tools[0].parameters
