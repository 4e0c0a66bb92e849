"""A run with tools that pauses, from the shell: what waits goes to stderr, the paused result
with its continuation to stdout, exit status 3; a second ``runport run`` resumes it with the
person's answers (``--approve``, ``--deny``, ``--tool-result``), once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

RUNS = Path(__file__).with_name("data") / "runs"
FINAL = {"go_to": "Ede", "celsius": 14, "why": "warmest of the two"}
KEY = "a continuation key of at least thirty-two bytes"


def runport(
    state: Path, *args: str | Path, key: str | None = KEY
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "XDG_STATE_HOME": str(state)}
    env.pop("RUNPORT_CONTINUATION_KEY", None)
    if key is not None:
        env["RUNPORT_CONTINUATION_KEY"] = key
    return subprocess.run(
        [sys.executable, "-m", "runport.cli", "run", "contract.yaml", *map(str, args)],
        cwd=RUNS,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def pause(tmp_path: Path, tools: str, *more: str, key: str | None = KEY) -> Path:
    paused = runport(
        tmp_path,
        "--input",
        "input.json",
        "--scenario",
        "scenario.yaml",
        "--tools",
        tools,
        *more,
        key=key,
    )
    assert paused.returncode == 3, paused.stderr
    saved = tmp_path / "paused.json"
    saved.write_text(paused.stdout.splitlines()[-1] if "--json" in more else paused.stdout)
    return saved


def tool_messages(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in document["messages"] if m["role"] == "tool"]


def test_a_run_paused_for_approval_says_what_waits_and_resumes_with_the_answers(
    tmp_path: Path,
) -> None:
    paused = runport(
        tmp_path,
        "--input",
        "input.json",
        "--scenario",
        "scenario.yaml",
        "--tools",
        "trip_tools:APPROVED",
    )
    assert paused.returncode == 3, paused.stderr
    document = json.loads(paused.stdout)
    assert document["status"] == "paused"
    assert document["output"] is None
    assert [(p["kind"], p["call_id"], p["arguments"]) for p in document["pending"]] == [
        ("ToolApprovalRequest", "call_delft", {"city": "Delft"}),
        ("ToolApprovalRequest", "call_ede", {"city": "Ede"}),
    ]
    assert document["continuation"].startswith("rp1.")
    lines = paused.stderr.splitlines()
    assert lines[:2] == [
        'runport: paused: call_delft: get_weather {"city": "Delft"} (needs approval)',
        'runport: paused: call_ede: get_weather {"city": "Ede"} (needs approval)',
    ]
    assert "warning" not in paused.stderr  # keyed: resumable
    saved = tmp_path / "paused.json"
    saved.write_text(paused.stdout)
    resume = (
        "--scenario", "resumed.yaml", "--tools", "trip_tools:APPROVED", "--continuation", saved,
        "--approve", "call_delft", "--deny", "call_ede:too far",
    )  # fmt: skip
    done = runport(tmp_path, *resume)
    assert done.returncode == 0, done.stderr
    finished = json.loads(done.stdout)
    assert finished["output"] == FINAL
    assert "status" not in finished
    assert tool_messages(finished) == [
        ("call_delft", '{"celsius":12.0,"city":"Delft"}'),
        ("call_ede", "denied: tool 'get_weather' was not run: too far"),
    ]
    again = runport(tmp_path, *resume)  # another process, the same continuation: refused
    assert again.returncode == 2
    assert "TQX_CONTINUATION_INVALID" in again.stderr
    assert again.stdout == ""


def test_a_client_tool_s_result_comes_from_the_command_line(tmp_path: Path) -> None:
    saved = pause(tmp_path, "trip_tools:CLIENT", "--json")
    pending = json.loads(saved.read_text())["pending"]
    assert [(p["kind"], p["call_id"]) for p in pending] == [
        ("ClientToolCall", "call_delft"),
        ("ClientToolCall", "call_ede"),
    ]
    done = runport(
        tmp_path, "--scenario", "resumed.yaml", "--tools", "trip_tools:CLIENT",
        "--continuation", saved, "--tool-result", 'call_delft={"celsius": 9}',
        "--tool-result", "call_ede=warm",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert tool_messages(json.loads(done.stdout)) == [
        ("call_delft", '{"celsius":9}'),
        ("call_ede", "warm"),
    ]


def test_a_client_tool_s_failure_comes_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--tool-error``: the model reads the message as the tool's answer; run in this
    process (the pause and the resume), as the subprocess tests above prove the shell's."""
    from runport.cli._main import main

    monkeypatch.chdir(RUNS)
    monkeypatch.syspath_prepend(str(RUNS))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setenv("RUNPORT_CONTINUATION_KEY", KEY)
    start = ["run", "contract.yaml", "--input", "input.json", "--scenario", "scenario.yaml"]
    assert main([*start, "--tools", "trip_tools:CLIENT", "--json"]) == 3
    saved = tmp_path / "paused.json"
    saved.write_text(capsys.readouterr().out.splitlines()[-1])
    resume = ["run", "contract.yaml", "--scenario", "resumed.yaml", "--tools", "trip_tools:CLIENT"]
    answers = ["--tool-result", "call_delft=9", "--tool-error", "call_ede=no network"]
    assert main([*resume, "--continuation", str(saved), *answers]) == 0
    assert tool_messages(json.loads(capsys.readouterr().out)) == [
        ("call_delft", "9"),
        ("call_ede", "no network"),
    ]
    twice = ["--tool-result", "call_ede=1", "--tool-error", "call_ede=x"]
    assert main([*resume, "--continuation", str(saved), *twice]) == 1
    assert "answered twice" in capsys.readouterr().err


def test_without_a_key_the_pause_says_how_to_set_one(tmp_path: Path) -> None:
    saved = pause(tmp_path, "trip_tools:APPROVED", key=None)
    done = runport(
        tmp_path, "--scenario", "resumed.yaml", "--tools", "trip_tools:APPROVED",
        "--continuation", saved, "--approve", "call_delft", "--approve", "call_ede", key=None,
    )  # fmt: skip
    assert done.returncode == 1
    assert "RUNPORT_CONTINUATION_KEY" in done.stderr


def test_a_foreign_key_s_continuation_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    saved = pause(tmp_path, "trip_tools:APPROVED")
    done = runport(
        tmp_path, "--scenario", "resumed.yaml", "--tools", "trip_tools:APPROVED",
        "--continuation", saved, "--approve", "call_delft", "--approve", "call_ede",
        key="another key, also thirty-two bytes long",
    )  # fmt: skip
    assert done.returncode == 2
    assert "TQX_CONTINUATION_INVALID" in done.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--approve", "call_delft"), "give its --continuation FILE too"),
        (("--continuation", "scenario.yaml"), "give its --tools or --mcp"),
        (("--continuation", "input.json", "--tools", "trip_tools:TOOLS"), "paused run's result"),
    ],
)
def test_answers_without_a_paused_run_are_usage_errors(
    tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    done = runport(tmp_path, "--scenario", "resumed.yaml", *args)
    assert done.returncode == 1
    assert needle in done.stderr
