"""README.md's Quick start keeps exactly two commands, and .ci/run runs the second."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _command(which: str) -> str:
    return subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "readme_command.py"), which],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()


def test_the_quick_start_has_a_main_and_a_test_command() -> None:
    main, test = _command("main"), _command("test")
    assert "runport run examples/quickstart/contract.yaml" in main
    assert "--stream" in main
    assert "tox" in test
    # pip installs only into the virtual environment the command creates first: a system
    # Python that is externally managed (PEP 668) refuses `python3 -m pip install` outright.
    for command in (main, test):
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install ")
        assert "python3 -m pip" not in command
        # `python -m uv` exports UV_INTERNAL__PARENT_INTERPRETER, which points tox-uv at the
        # wrong interpreter: the commands call the installed executables instead.
        assert "-m uv" not in command
        assert "-m tox" not in command


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "readme_command.py test" in ci
    assert 'eval "$test"' in ci
    assert "readme_command.py main" in ci


def test_ci_proves_the_debian_case_in_a_clean_copy() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "/usr/bin/python3" in ci
    assert "git clone" in ci
    assert 'eval "$main"' in ci


def test_the_quickstart_files_exist() -> None:
    main = _command("main")
    for word in main.split():
        if word.startswith("examples/"):
            assert (ROOT / word).is_file(), word
