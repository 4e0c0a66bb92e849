"""``runport run --mcp``: a run whose tools are an MCP server's — here ``runport mcp`` itself,
serving this folder's contract as a real process over stdio. The command runs in-process."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

RUNS = Path(__file__).with_name("data") / "runs"
FINAL = {"go_to": "Ede", "celsius": 14, "why": "warmest of the two"}


def runport(
    *args: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    from runport.cli._main import main

    monkeypatch.chdir(RUNS)
    status = main(["run", "contract.yaml", "--input", "input.json", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_run_calls_the_tools_of_an_mcp_server_it_starts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = shlex.join(
        [
            sys.executable,
            "-m",
            "runport.cli",
            "mcp",
            "--contracts",
            ".",
            "--scenario",
            "one_turn.yaml",
        ]
    )
    status, out, err = runport(
        "--scenario", "mcp_scenario.yaml", "--mcp", server, capsys=capsys, monkeypatch=monkeypatch
    )
    assert status == 0, err
    document = json.loads(out)
    assert document["output"] == FINAL
    (tool_message,) = [m for m in document["messages"] if m["role"] == "tool"]
    assert tool_message["tool_call_id"] == "call_list"
    listing = json.loads(tool_message["content"])
    assert [c["id"] for c in listing["contracts"]] == ["examples.trip-weather"]


def test_a_server_that_does_not_start_is_a_one_line_coded_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, _, err = runport(
        "--scenario",
        "mcp_scenario.yaml",
        "--mcp",
        "no-such-mcp-server --flag",
        capsys=capsys,
        monkeypatch=monkeypatch,
    )
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("runport: error: TQX_MCP_SERVER_FAILED: cannot connect")
    assert "no-such-mcp-server --flag" in lines[0]
