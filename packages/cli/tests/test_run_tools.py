from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RUNS = Path(__file__).with_name("data") / "runs"
FINAL = {"go_to": "Ede", "celsius": 14, "why": "warmest of the two"}


def runport(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "runport.cli",
            "run",
            "contract.yaml",
            "--input",
            "input.json",
            "--scenario",
            "scenario.yaml",
            *args,
        ],
        cwd=RUNS,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )


def test_a_run_with_tools_prints_the_run_result() -> None:
    result = runport("--tools", "trip_tools:TOOLS")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["output"] == FINAL
    assert len(document["receipts"]) == 2
    tool_messages = [m for m in document["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_delft", "call_ede"]
    assert json.loads(tool_messages[1]["content"]) == {"city": "Ede", "celsius": 14.0}


def test_a_streamed_run_shows_each_turn() -> None:
    result = runport("--tools", "trip_tools:TOOLS", "--stream")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        'tool call 0: get_weather (call_delft) {"city": "Delft"}',
        'tool call 1: get_weather (call_ede) {"city": "Ede"}',
    ]
    assert json.loads(lines[2]) == FINAL
    summary = json.loads("\n".join(lines[3:]))
    assert summary["turns"] == 2
    assert summary["output"] == FINAL


def test_a_json_run_writes_only_events_of_every_turn() -> None:
    result = runport("--tools", "trip_tools:TOOLS", "--json")
    assert result.returncode == 0, result.stderr
    kinds = [json.loads(line)["kind"] for line in result.stdout.splitlines()]
    assert kinds.count("Complete") == 2
    assert kinds[-1] == "Complete"


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("nope_module:TOOLS", "cannot import 'nope_module'"),
        ("trip_tools:MISSING", "has no 'MISSING'"),
        ("trip_tools:NOT_TOOLS", "neither a Tool nor a function"),
        ("trip_tools", "MODULE:ATTR"),
    ],
)
def test_bad_tools_are_one_line_errors(spec: str, needle: str) -> None:
    result = runport("--tools", spec)
    assert result.returncode == 1
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_run_error_exits_2_with_its_code_and_stage() -> None:
    result = runport("--tools", "trip_tools:TOOLS", "--scenario", "one_turn.yaml")
    assert result.returncode == 2
    assert result.stderr.startswith("runport: error: TQX_DATA_INVALID: scenario exhausted")
    assert result.stderr.rstrip().endswith("(stage model)")


def test_a_broken_contract_lists_every_problem_in_tools_mode(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        (RUNS / "contract.yaml").read_text(encoding="utf-8").replace("version: 1.0.0", "version: x")
        + "surprise: true\n",
        encoding="utf-8",
    )
    result = runport("--tools", "trip_tools:TOOLS", "--input", "input.json")
    assert result.returncode == 0
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "runport.cli",
            "run",
            str(broken),
            "--input",
            "input.json",
            "--scenario",
            "scenario.yaml",
            "--tools",
            "trip_tools:TOOLS",
        ],
        cwd=RUNS,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2
    assert all(line.startswith("runport: error: TQX_CONTRACT_INVALID") for line in lines)
    assert all(line.endswith("(stage compile)") for line in lines)


def test_a_cut_turn_s_calls_are_not_run_and_the_run_exits_with_the_code(tmp_path: Path) -> None:
    # the calls' arguments parse, but the turn was cut by the token limit (adr/0050)
    cut = tmp_path / "cut.yaml"
    cut.write_text(
        (RUNS / "one_turn.yaml")
        .read_text(encoding="utf-8")
        .replace("finish_reason: tool_calls", "finish_reason: max_tokens, finish: length"),
        encoding="utf-8",
    )
    result = runport("--tools", "trip_tools:TOOLS", "--scenario", str(cut))
    assert result.returncode == 2
    assert result.stderr.startswith("runport: error: TQX_OUTPUT_TRUNCATED: ")
    assert result.stderr.rstrip().endswith("(stage model)")
