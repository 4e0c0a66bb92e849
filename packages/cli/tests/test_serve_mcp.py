"""``runport serve --mcp``: a chat's run calls an MCP server's tools — here ``runport mcp``
itself, a real process over stdio — and the UI stream shows the call's output."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from .conftest import DATA

QUICK = DATA / "quick"
SCENARIO = """\
api_version: runport.mock/v1
id: serve-mcp
turns:
  - events:
      - kind: tool_call_delta
        index: 0
        call_id: call_list
        name: list_contracts
        arguments_fragment: "{}"
      - {kind: finish, finish_reason: tool_calls}
  - events:
      - {kind: delta, text: "One contract is served."}
      - {kind: finish, finish_reason: stop}
"""


def test_a_served_chat_calls_the_tools_of_an_mcp_server(tmp_path: Path) -> None:
    folder = tmp_path / "contracts"
    folder.mkdir()
    shutil.copy(QUICK / "contract.yaml", folder / "echo.yaml")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    mcp = shlex.join(
        [
            sys.executable,
            "-m",
            "runport.cli",
            "mcp",
            "--contracts",
            str(folder),
            "--scenario",
            str(QUICK / "scenario.yaml"),
        ]
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "runport.cli",
            "serve",
            "--port",
            "0",
            "--contracts",
            str(folder),
            "--scenario",
            str(scenario),
            "--mcp",
            mcp,
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert process.stderr is not None
    said: list[str] = []
    try:
        for line in process.stderr:
            said.append(line)
            found = re.search(r"on (http://127\.0\.0\.1:\d+)/", line)
            if found:
                break
        else:
            raise AssertionError("".join(said))
        body = {
            "id": "chat-1",
            "trigger": "submit-message",
            "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "rivers"}]}
            ],
        }
        response = httpx.post(f"{found.group(1)}/v1/contracts/cli.echo/chat", json=body, timeout=60)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert response.status_code == 200, response.text
    chunks = [
        json.loads(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.startswith("data: {")
    ]
    (output,) = [c for c in chunks if c["type"] == "tool-output-available"]
    assert output["toolCallId"] == "call_list"
    assert [c["id"] for c in output["output"]["contracts"]] == ["cli.echo"]
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text == "One contract is served."
