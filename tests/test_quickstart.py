"""The quickstart the README shows works end to end, streamed and checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "examples" / "quickstart"
HAIKU = "Bytes arrive one by one\nthe receipt still tells the truth\nnothing said is lost"


def _runport(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runport.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_quickstart_streams_the_haiku_and_its_receipt() -> None:
    result = _runport(
        "run",
        "examples/quickstart/contract.yaml",
        "--input",
        "examples/quickstart/input.json",
        "--scenario",
        "examples/quickstart/scenario.yaml",
        "--stream",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(HAIKU + "\n")
    receipt = json.loads(result.stdout[len(HAIKU) + 1 :])
    assert receipt["output"] == HAIKU
    assert receipt["output_schema_valid"] is True
    assert receipt["usage"] == {"input_tokens": 31, "output_tokens": 17}


def test_the_quickstart_eval_matches_the_scenario_and_validates() -> None:
    assert _runport("validate", "examples/quickstart/contract.yaml").returncode == 0
    check = _runport("scenarios", "check", "examples/quickstart")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "1 passed, 0 failed" in check.stdout
