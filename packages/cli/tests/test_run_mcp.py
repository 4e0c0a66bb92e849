"""``runport run --mcp``: a run whose tools are an MCP server's — here ``runport mcp`` itself,
serving this folder's contract as a real process over stdio."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

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
            *args,
        ],
        cwd=RUNS,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )


def test_a_run_calls_the_tools_of_an_mcp_server_it_starts() -> None:
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
    result = runport("--scenario", "mcp_scenario.yaml", "--mcp", server)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["output"] == FINAL
    (tool_message,) = [m for m in document["messages"] if m["role"] == "tool"]
    assert tool_message["tool_call_id"] == "call_list"
    listing = json.loads(tool_message["content"])
    assert [c["id"] for c in listing["contracts"]] == ["examples.trip-weather"]


def test_a_server_that_does_not_start_is_a_one_line_coded_error() -> None:
    result = runport("--scenario", "mcp_scenario.yaml", "--mcp", "no-such-mcp-server --flag")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("runport: error: TQX_MCP_SERVER_FAILED: cannot connect")
    assert "no-such-mcp-server --flag" in lines[0]
