"""Every example folder passes ``runport scenarios check``, the way a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FOLDERS = sorted(
    path
    for path in EXAMPLES.iterdir()
    # not __pycache__, which importing examples/ollama_chat.py (tests/test_example_ollama.py) makes
    if path.is_dir() and not path.name.startswith(("_", "."))
)


def test_there_are_examples() -> None:
    assert {path.name for path in FOLDERS} >= {"quickstart", "streaming_run"}


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda path: path.name)
def test_every_example_passes_scenarios_check(folder: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "runport.cli", "scenarios", "check", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout
    assert "FAIL" not in result.stdout
