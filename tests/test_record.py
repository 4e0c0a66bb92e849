"""``runport record`` from an OpenAI-compatible server on 127.0.0.1 → ``scenarios check``
passes → replaying the scenario through the mock gives the live receipt (all but the adapter
that made it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from runport.application import execute_contract
from runport.mock import ScriptedRuntime

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "examples" / "quickstart"


def cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runport.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copy(QUICK / "contract.yaml", tmp_path / "contract.yaml")
    (tmp_path / "input.json").write_text(
        json.dumps({"inputs": {"topic": "rivers", "audience": "poets"}}), encoding="utf-8"
    )
    return tmp_path


@pytest.fixture
def serve() -> Iterator[Any]:
    """Start a loopback chat-completions server answering with the named cases, in order."""
    pytest.importorskip("runport.openai")
    conformance = pytest.importorskip("runport.conformance")
    servers: list[Any] = []

    def start(*names: str) -> Any:
        cases = {case.name: case for case in conformance.CASES}
        servers.append(conformance.ScriptedUpstream([cases[n] for n in names], pacing="off"))
        return servers[-1]

    try:
        yield start
    finally:
        for server in servers:
            server.close()


def _env(base_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "RUNPORT_OPENAI_BASE_URL": base_url,
        "RUNPORT_OPENAI_MODEL": "tiny",
        "OPENAI_API_KEY": "sk-loopback",
    }


def test_text_and_tool_calls_record_check_and_replay(folder: Path, serve: Any) -> None:
    env = _env(serve("plain_text", "one_tool_call", "failure_after_deltas").base_url)
    contract, request = folder / "contract.yaml", folder / "input.json"
    for name in ("text", "tools", "failed"):
        done = cli(
            "record", contract, "--input", request, "--adapter", "openai",
            "--out", folder / "recorded" / f"{name}.yaml", env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    text = yaml.safe_load((folder / "recorded" / "text.yaml").read_text(encoding="utf-8"))
    assert text["contract"] == "../contract.yaml"
    assert text["input"] == "text.input.json"
    kinds = [event["kind"] for event in text["turns"][0]["events"]]
    assert kinds[-2:] == ["usage", "finish"]
    assert set(kinds[:-2]) == {"delta"}
    assert text["expect"]["status"] == "success"
    tools = yaml.safe_load((folder / "recorded" / "tools.yaml").read_text(encoding="utf-8"))
    tool_events = [e for e in tools["turns"][0]["events"] if e["kind"] == "tool_call_delta"]
    assert len(tool_events) == 3
    assert tools["turns"][0]["events"][-1] == {"kind": "finish", "finish_reason": "tool_calls"}
    failed = yaml.safe_load((folder / "recorded" / "failed.yaml").read_text(encoding="utf-8"))
    assert failed["turns"][0]["events"][-1]["kind"] == "fail"
    assert failed["expect"]["status"] == "failure"

    checked = cli("scenarios", "check", folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "3 passed, 0 failed" in checked.stdout


@pytest.mark.parametrize("case", ["plain_text", "one_tool_call", "structured_not_json"])
def test_a_replay_gives_the_live_receipt(folder: Path, serve: Any, case: str) -> None:
    env = _env(serve(case, case).base_url)
    contract, request = folder / "contract.yaml", folder / "input.json"
    live = cli("run", contract, "--input", request, "--adapter", "openai", env=env)
    assert live.returncode == 0, live.stderr
    recorded = folder / f"{case}.yaml"
    done = cli(
        "record", contract, "--input", request, "--adapter", "openai", "--out", recorded, env=env
    )
    assert done.returncode == 0, done.stderr
    replayed = cli("run", contract, "--input", request, "--scenario", recorded)
    live_receipt = json.loads(live.stdout)["result"]
    replay_receipt = json.loads(replayed.stdout)["result"]
    assert replay_receipt.pop("adapter")["id"] == "runport-mock"
    assert live_receipt.pop("adapter")["id"] == "openai-chat"
    assert replay_receipt == live_receipt
    again = execute_contract(
        contract,
        ScriptedRuntime.from_scenario(recorded),
        inputs=json.loads(request.read_text())["inputs"],
    )
    assert again.result is not None
    assert again.result.model_dump(mode="json", exclude={"adapter"}) == replay_receipt


def test_redaction_by_pointer_reaches_the_input_and_the_answer(folder: Path, serve: Any) -> None:
    env = _env(serve("plain_text").base_url)
    out = folder / "redacted.yaml"
    done = cli(
        "record", folder / "contract.yaml", "--input", folder / "input.json",
        "--adapter", "openai", "--out", out,
        "--redact", "/inputs/topic", "--redact", "/output", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = yaml.safe_load(out.read_text(encoding="utf-8"))
    request = json.loads((folder / "redacted.input.json").read_text(encoding="utf-8"))
    assert request == {"inputs": {"topic": "[redacted]", "audience": "poets"}}
    deltas = [e for e in written["turns"][0]["events"] if e["kind"] == "delta"]
    assert deltas == [{"kind": "delta", "text": "[redacted]"}]
    assert "sk-loopback" not in out.read_text(encoding="utf-8")
    checked = cli("scenarios", "check", folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("pointer", ["inputs/topic", "/secrets/key", "/inputs/nothing"])
def test_a_bad_redaction_pointer_is_a_usage_error(folder: Path, pointer: str) -> None:
    done = cli(
        "record", folder / "contract.yaml", "--input", folder / "input.json",
        "--scenario", QUICK / "scenario.yaml", "--out", folder / "x.yaml", "--redact", pointer,
    )  # fmt: skip
    assert done.returncode == 1
    assert "--redact" in done.stderr
    assert not (folder / "x.yaml").exists()


THINKING = """\
api_version: runport.mock/v1
id: thinking
turns:
  - events:
      - {kind: reasoning_delta, text: "Rivers "}
      - {kind: reasoning_delta, text: "for poets.", signature: sig-a}
      - {kind: reasoning_delta, text: "Five syllables first."}
      - {kind: delta, text: "Water finds its way"}
      - {kind: reasoning_delta, text: "Now the rest."}
      - {kind: delta, text: "\\nstone remembers\\nsea"}
      - {kind: usage, input_tokens: 9, output_tokens: 30, reasoning_tokens: 12}
      - {kind: finish, finish_reason: stop}
"""


def test_reasoning_is_recorded_with_its_signatures_and_checked(folder: Path) -> None:
    source = folder / "source" / "thinking.yaml"
    source.parent.mkdir()
    source.write_text(THINKING, encoding="utf-8")
    contract, request = folder / "contract.yaml", folder / "input.json"
    out = folder / "recorded" / "thinking.yaml"
    done = cli(
        "record", contract, "--input", request, "--scenario", source, "--out", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    written = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert written["turns"][0]["events"][:3] == [
        {"kind": "reasoning_delta", "text": "Rivers "},
        {"kind": "reasoning_delta", "text": "for poets.", "signature": "sig-a"},
        {"kind": "reasoning_delta", "text": "Five syllables first."},
    ]
    assert written["turns"][0]["events"][-2] == {
        "kind": "usage", "input_tokens": 9, "output_tokens": 30, "reasoning_tokens": 12,
    }  # fmt: skip
    assert written["expect"]["reasoning"] == [
        "Rivers for poets.",
        "Five syllables first.",
        "Now the rest.",
    ]
    inputs = json.loads(request.read_text())["inputs"]
    live = execute_contract(contract, ScriptedRuntime.from_scenario(source), inputs=inputs)
    again = execute_contract(contract, ScriptedRuntime.from_scenario(out), inputs=inputs)
    assert live.result is not None
    assert again.result is not None
    assert again.result.model_dump(exclude={"adapter"}) == live.result.model_dump(
        exclude={"adapter"}
    )
    assert again.result.text == "Water finds its way\nstone remembers\nsea"

    shutil.rmtree(folder / "source")
    checked = cli("scenarios", "check", folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "1 passed, 0 failed" in checked.stdout

    # a scenario whose reasoning drifts from what it expects is reported, by block
    written["turns"][0]["events"][4]["text"] = "Now the end."
    out.write_text(yaml.safe_dump(written), encoding="utf-8")
    checked = cli("scenarios", "check", folder)
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert "reasoning: expected 3 block(s)" in checked.stdout
    assert "'Now the end.'" in checked.stdout
