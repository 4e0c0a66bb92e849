from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).with_name("data")
QUICK = DATA / "quick"


def runport(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "runport.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
        check=False,
    )


def run_quick(
    *extra: str | Path, scenario: str = "scenario.yaml"
) -> subprocess.CompletedProcess[str]:
    return runport(
        "run",
        QUICK / "contract.yaml",
        "--input",
        QUICK / "input.json",
        "--scenario",
        QUICK / scenario,
        *extra,
    )


def _no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr
    assert "Traceback" not in result.stdout


def test_run_prints_the_envelope() -> None:
    result = run_quick()
    assert result.returncode == 0, result.stderr
    envelope = json.loads(result.stdout)
    assert envelope["ok"] is True
    assert envelope["result"]["output"] == "Rivers run downhill."
    assert envelope["result"]["usage"] == {"input_tokens": 4, "output_tokens": 3}
    assert set(envelope["fingerprints"]) == {"request", "output"}
    assert "stream_events" not in envelope


def test_run_stream_writes_the_text_then_the_receipt() -> None:
    result = run_quick("--stream")
    assert result.returncode == 0, result.stderr
    text, _, receipt = result.stdout.partition("\n")
    assert text == "Rivers run downhill."
    assert json.loads(receipt)["output"] == "Rivers run downhill."


def test_run_json_writes_only_stream_events() -> None:
    result = run_quick("--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["kind"] for e in events] == ["Delta", "Delta", "Delta", "Complete"]
    assert "".join(e["text"] for e in events[:3]) == "Rivers run downhill."
    assert events[-1]["receipt"]["text"] == "Rivers run downhill."


def test_run_stream_shows_tool_calls_after_the_text() -> None:
    result = run_quick("--stream", scenario="tools.yaml")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        'tool call 0: search (c-a) {"q": "a"}',
        'tool call 1: lookup (c-b) {"q": "b"}',
    ]
    assert "TQX_TOOL_CALLS_PENDING" in result.stderr


def test_a_runtime_failure_exits_2_with_its_code() -> None:
    result = run_quick("--json", scenario="failing.yaml")
    assert result.returncode == 2
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events == [
        {"kind": "Delta", "text": "Riv"},
        {"kind": "Failed", "code": "TQX_RUNTIME_UNAVAILABLE", "message": "upstream reset"},
    ]
    assert result.stderr.strip() == "runport: error: TQX_RUNTIME_UNAVAILABLE: upstream reset"


def test_validate_compiles_the_evals() -> None:
    result = runport("validate", QUICK / "contract.yaml")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "cli.echo 1.0.0: valid (1 eval(s) compiled)"


def test_validate_lists_every_problem(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        (QUICK / "contract.yaml")
        .read_text(encoding="utf-8")
        .replace("version: 1.0.0", "version: one")
        .replace("capabilities: [text]", "capabilities: [text]\nsurprise: 1"),
        encoding="utf-8",
    )
    result = runport("validate", broken)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) >= 2
    assert all(line.startswith("runport: error: TQX_CONTRACT_INVALID") for line in lines)
    assert any("/version" in line for line in lines)
    assert any("surprise" in line for line in lines)
    _no_traceback(result)


def test_validate_reports_an_eval_that_does_not_compile(tmp_path: Path) -> None:
    broken = tmp_path / "eval.yaml"
    broken.write_text(
        (QUICK / "contract.yaml")
        .read_text(encoding="utf-8")
        .replace("inputs: { topic: rivers }", "inputs: { topic: '' }"),
        encoding="utf-8",
    )
    result = runport("validate", broken)
    assert result.returncode == 2
    assert "eval 'one' (/evals/0): TQX_VALUE_SCHEMA" in result.stderr


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("api_version: runport/v1alpha1\nid: [unclosed\n", "TQX_PARSE_YAML"),
        (
            "api_version: runport/v1alpha1\nid: x\nversion: 1.0.0\nmessages: []\n"
            "output_schema: {}\nbogus: true\n",
            "TQX_CONTRACT_INVALID",
        ),
    ],
)
def test_run_with_a_broken_contract_exits_2(tmp_path: Path, content: str, code: str) -> None:
    contract = tmp_path / "c.yaml"
    contract.write_text(content, encoding="utf-8")
    result = runport(
        "run", contract, "--input", QUICK / "input.json", "--scenario", QUICK / "scenario.yaml"
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"runport: error: {code}")
    _no_traceback(result)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            [
                "run",
                QUICK / "contract.yaml",
                "--input",
                QUICK / "missing.json",
                "--scenario",
                QUICK / "scenario.yaml",
            ],
            "input file not found",
        ),
        (["run", QUICK / "nope.yaml", "--input", QUICK / "input.json"], "contract file not found"),
        (
            ["run", QUICK / "contract.yaml", "--input", QUICK / "input.json", "--adapter", "nope"],
            "no adapter named 'nope'",
        ),
        (["run", QUICK / "contract.yaml", "--input", QUICK / "input.json"], "--scenario"),
        (["run", QUICK / "contract.yaml", "-i", "topic"], "-i takes KEY=VALUE"),
        (["frobnicate"], "usage"),
        (["scenarios", "check", QUICK / "nowhere"], "not a folder"),
    ],
)
def test_usage_and_io_errors_exit_1_with_one_line(args: list[str | Path], needle: str) -> None:
    result = runport(*args)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("runport: error: ")
    assert needle in result.stderr
    _no_traceback(result)


def test_a_malformed_input_file_names_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "in.json"
    bad.write_text('{"inputs": {"topic": }', encoding="utf-8")
    result = runport(
        "run", QUICK / "contract.yaml", "--input", bad, "--scenario", QUICK / "scenario.yaml"
    )
    assert result.returncode == 1
    assert "TQX_DATA_INVALID" in result.stderr
    assert "line 1" in result.stderr


def test_a_broken_scenario_is_refused_with_its_location(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text(
        "api_version: runport.mock/v1\nid: x\nturns:\n  - events:\n"
        "      - {kind: finish}\n      - {kind: delta, text: late}\n",
        encoding="utf-8",
    )
    result = run_quick()
    assert result.returncode == 0
    result = runport(
        "run", QUICK / "contract.yaml", "--input", QUICK / "input.json", "--scenario", bad
    )
    assert result.returncode == 1
    assert "TQX_DATA_INVALID" in result.stderr
    assert "turn 0" in result.stderr
    _no_traceback(result)


def test_scenarios_check_passes_on_a_consistent_corpus() -> None:
    result = runport("scenarios", "check", DATA / "corpus")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed, 0 failed" in result.stdout
    for name in (
        "happy",
        "rate-limited",
        "invalid-output",
        "streamed-events",
        "mock-v1-structured",
    ):
        assert f"ok   scenario {name} " in result.stdout


def _copy_corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(DATA / "corpus", root)
    return root


def test_scenarios_check_catches_a_wrong_expectation(tmp_path: Path) -> None:
    root = _copy_corpus(tmp_path)
    manifest = root / "scenarios" / "happy" / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["expected_output_fingerprint"] = "f" * 64
    manifest.write_text(json.dumps(data), encoding="utf-8")
    result = runport("scenarios", "check", root)
    assert result.returncode == 2
    assert "FAIL scenario happy" in result.stdout
    assert "output fingerprint: expected ffff" in result.stdout
    assert "5 passed, 1 failed" in result.stdout


def test_scenarios_check_refuses_a_path_outside_the_folder(tmp_path: Path) -> None:
    root = _copy_corpus(tmp_path)
    (tmp_path / "secret.json").write_text('{"inputs": {}}', encoding="utf-8")
    manifest = root / "scenarios" / "happy" / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["input"] = "../../../secret.json"
    manifest.write_text(json.dumps(data), encoding="utf-8")
    result = runport("scenarios", "check", root)
    assert result.returncode == 2
    assert "TQX_DATA_INVALID" in result.stdout
    assert "resolves outside the folder" in result.stdout
    _no_traceback(result)


def test_scenarios_check_checks_the_inventory(tmp_path: Path) -> None:
    root = _copy_corpus(tmp_path)
    inventory = root / "scenarios" / "inventory.json"
    data = json.loads(inventory.read_text(encoding="utf-8"))
    data["scenarios"][2]["expectation"]["diagnostic_code"] = "TQX_RUNTIME_TIMEOUT"
    inventory.write_text(json.dumps(data), encoding="utf-8")
    result = runport("scenarios", "check", root)
    assert result.returncode == 2
    assert "rate-limited: diagnostic_code expected TQX_RUNTIME_TIMEOUT" in result.stdout


def test_scenarios_check_says_when_a_run_leaves_scripted_turns_unplayed(tmp_path: Path) -> None:
    root = _copy_corpus(tmp_path)
    scenario = root / "scenarios" / "mock-v1" / "scenario.yaml"
    text = scenario.read_text(encoding="utf-8")
    turns = text[text.index("turns:") + len("turns:\n") :]
    scenario.write_text(text + turns, encoding="utf-8")
    result = runport("scenarios", "check", root)
    assert result.returncode == 2
    assert "the run ended after 1 of the scenario's 2 turns" in result.stdout
    _no_traceback(result)


def test_scenarios_check_accepts_an_input_file_holding_the_inputs_directly(
    tmp_path: Path,
) -> None:
    shutil.copy(QUICK / "contract.yaml", tmp_path / "contract.yaml")
    (tmp_path / "bare.json").write_text('{"topic": "rivers"}', encoding="utf-8")
    scenario = (QUICK / "scenario.yaml").read_text(encoding="utf-8")
    (tmp_path / "scenario.yaml").write_text(
        scenario.replace(
            "id: cli-echo\n",
            "id: cli-echo\ncontract: cli.echo\ninput: bare.json\nexpect: {status: success}\n",
        ),
        encoding="utf-8",
    )
    result = runport("scenarios", "check", tmp_path)
    assert result.returncode == 0, result.stdout
    assert "1 passed, 0 failed" in result.stdout


def test_a_duplicate_key_in_a_json_input_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "in.json"
    bad.write_text('{"inputs": {"topic": "a", "topic": "b"}}', encoding="utf-8")
    result = runport(
        "run", QUICK / "contract.yaml", "--input", bad, "--scenario", QUICK / "scenario.yaml"
    )
    assert result.returncode == 1
    assert "'topic' appears twice" in result.stderr


def _alias_ladder(levels: int) -> str:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]" for n in range(1, levels)]
    return "inputs:\n  topic: hi\n" + "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (_alias_ladder(12), "more than 100,000 values once its aliases are expanded"),
        ('{"inputs": {"topic": ' + "[" * 5_000 + "]" * 5_000 + "}}", "levels deep"),
        ('{"inputs": {"topic": ' + "7" * 5_000 + "}}", "more than 4300 digits"),
        ('{"inputs": {"topic": "\\ud800"}}', "lone surrogate"),
    ],
)
def test_a_hostile_input_file_is_one_coded_line(tmp_path: Path, content: str, needle: str) -> None:
    """Regression (issue 10, items 3 and 4): an alias ladder hung the CLI; deep nesting, huge
    integers and lone surrogates printed tracebacks."""
    hostile = tmp_path / "in.yaml"
    hostile.write_text(content, encoding="utf-8")
    result = runport(
        "run", QUICK / "contract.yaml", "--input", hostile, "--scenario", QUICK / "scenario.yaml"
    )
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("runport: error: TQX_DATA_INVALID: input file ")
    assert needle in line
    _no_traceback(result)


STRUCTURED = """\
api_version: runport/v1alpha1
id: strictness
version: 1.0.0
messages:
  - role: user
    content: "Plan a trip."
output_schema:
  type: object
  properties:
    city: {type: string}
    days: {type: integer}
  required: [city]
"""


def test_validate_warns_when_the_output_schema_cannot_be_sent_strict(tmp_path: Path) -> None:
    # `days` is optional and does not admit null: OpenAI's strict subset cannot say that
    loose = tmp_path / "loose.yaml"
    loose.write_text(STRUCTURED, encoding="utf-8")
    result = runport("validate", loose)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("runport: warning: output_schema is outside OpenAI's strict")
    assert result.stdout.strip() == "strictness 1.0.0: valid (0 eval(s) compiled)"
    strict = tmp_path / "strict.yaml"
    strict.write_text(STRUCTURED.replace("required: [city]", "required: [city, days]"), "utf-8")
    result = runport("validate", strict)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("reason", "code"),
    [("length", "TQX_OUTPUT_TRUNCATED"), ("content_filter", "TQX_OUTPUT_REFUSED")],
)
def test_a_cut_or_withheld_answer_is_not_ok_and_says_its_code(
    tmp_path: Path, reason: str, code: str
) -> None:
    scenario = tmp_path / "cut.yaml"
    scenario.write_text(
        "api_version: runport.mock/v1\nid: cli-cut\nturns:\n  - events:\n"
        '      - {kind: delta, text: "Rivers ru"}\n'
        f"      - {{kind: finish, finish_reason: {reason}}}\n",
        encoding="utf-8",
    )
    result = run_quick(scenario=str(scenario))
    _no_traceback(result)
    assert result.returncode != 0
    envelope = json.loads(result.stdout)
    assert envelope["ok"] is False
    assert [d["code"] for d in envelope["diagnostics"]] == [code]
    assert envelope["result"]["finish_reason"] == reason
    assert code in result.stderr
