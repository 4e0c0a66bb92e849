"""``runport serve`` end to end: a real subprocess on a free loopback port, driven with httpx."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import DATA, Cli

QUICK = DATA / "quick"


@pytest.fixture
def contracts(tmp_path: Path) -> Path:
    folder = tmp_path / "contracts"
    folder.mkdir()
    shutil.copy(QUICK / "contract.yaml", folder / "echo.yaml")
    (folder / "broken.yaml").write_text(
        "api_version: runport/v1alpha1\nid: broken\nversion: one\n", encoding="utf-8"
    )
    return folder


def _serve(
    *args: str | Path, env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "runport.cli", "serve", "--port", "0", *map(str, args)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})},
    )
    assert process.stderr is not None
    said: list[str] = []
    for line in process.stderr:
        said.append(line)
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/", line)
        if found:
            break
    else:
        process.communicate()
        raise AssertionError("".join(said))
    try:
        yield found.group(1), process
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert said[0].startswith("runport: warning: skipped ")


@pytest.fixture
def served(contracts: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    yield from _serve("--contracts", contracts, "--scenario", QUICK / "scenario.yaml")


def test_serve_lists_and_runs_the_folder_on_loopback(
    served: tuple[str, subprocess.Popen[str]],
) -> None:
    url, _ = served
    listing = httpx.get(f"{url}/v1/contracts").json()
    ids = [entry["id"] for entry in listing["contracts"]]
    assert len(ids) == 1
    path = f"{url}/v1/contracts/{ids[0]}/executions"
    first = httpx.post(path, json={"inputs": {"topic": "rivers"}}).json()
    second = httpx.post(path, json={"inputs": {"topic": "rivers"}}).json()
    assert first["ok"]
    assert first == second
    page = httpx.get(f"{url}/")
    assert page.status_code == 200
    assert "<title>runport playground</title>" in page.text


def test_serve_with_a_token_asks_for_it(contracts: Path) -> None:
    for url, _ in _serve(
        "--contracts", contracts, "--scenario", QUICK / "scenario.yaml", "--token", "tok"
    ):
        assert httpx.get(f"{url}/v1/contracts").status_code == 401
        granted = httpx.get(f"{url}/v1/contracts", headers={"Authorization": "Bearer tok"})
        assert granted.status_code == 200


def test_serve_refuses_a_folder_it_cannot_serve(tmp_path: Path) -> None:
    result = Cli()("serve", "--contracts", tmp_path / "missing", "--scenario", "x.yaml")
    assert result.returncode == 1
    assert result.stderr.startswith("runport: error: TQX_DATA_INVALID: contracts folder not found")


def test_serve_refuses_a_mock_without_a_scenario(contracts: Path) -> None:
    result = Cli()("serve", "--contracts", contracts)
    assert result.returncode == 1
    assert "needs a scenario file" in result.stderr


@pytest.mark.parametrize("token", ["pässword", "two words"])
def test_serve_refuses_a_token_no_client_could_send(contracts: Path, token: str) -> None:
    result = Cli()(
        "serve", "--contracts", contracts, "--scenario", QUICK / "scenario.yaml", "--token", token
    )
    assert result.returncode == 1
    assert result.stderr.startswith("runport: error: usage: the token must be printable ASCII")
    assert "Traceback" not in result.stderr


def test_serve_answers_only_for_its_own_names_and_pages(contracts: Path) -> None:
    for url, _ in _serve(
        "--contracts",
        contracts,
        "--scenario",
        QUICK / "scenario.yaml",
        "--allowed-host",
        "runport.test",
    ):
        port = url.rsplit(":", 1)[1]
        listing = httpx.get(f"{url}/v1/contracts", headers={"Host": f"runport.test:{port}"})
        assert listing.status_code == 200
        contract = listing.json()["contracts"][0]["id"]
        path = f"{url}/v1/contracts/{contract}/executions"
        for host in (f"rebind.attacker.example:{port}", "localhost.attacker.example"):
            refused = httpx.get(f"{url}/", headers={"Host": host})
            assert refused.status_code == 421
            assert refused.json()["error"]["code"] == "TQX_ACCESS_DENIED"
        forged = httpx.post(
            path,
            content=b'{"inputs": {"topic": "rivers"}}',
            headers={"Origin": "http://evil.example", "Content-Type": "text/plain"},
        )
        assert forged.status_code == 403
        plain = httpx.post(
            path, content=b'{"inputs": {"topic": "rivers"}}', headers={"Content-Type": "text/plain"}
        )
        assert plain.status_code == 415
        own = httpx.post(path, json={"inputs": {"topic": "rivers"}}, headers={"Origin": url})
        assert own.status_code == 200
        assert own.json()["ok"]


REASONING_SCENARIO = """\
api_version: runport.mock/v1
id: cli-reasoning
turns:
  - events:
      - {kind: reasoning_delta, text: "Rivers first.", signature: sig-rivers}
      - {kind: delta, text: "Rivers run downhill."}
      - {kind: finish, finish_reason: stop}
"""


def _chat(url: str, *messages: dict[str, object]) -> httpx.Response:
    body = {"id": "chat-1", "messages": list(messages), "trigger": "submit-message"}
    return httpx.post(f"{url}/v1/contracts/cli.echo/chat", json=body, timeout=30)


def _user(text: str, message_id: str) -> dict[str, object]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def _answer(stream: str) -> dict[str, object]:
    """The assistant UIMessage a client keeps: the reasoning part with the metadata of its
    ``reasoning-end`` (the seal), and the text."""
    chunks = [
        json.loads(line.removeprefix("data: "))
        for line in stream.splitlines()
        if line.startswith("data: {")
    ]
    (end,) = [chunk for chunk in chunks if chunk["type"] == "reasoning-end"]
    text = "".join(chunk["delta"] for chunk in chunks if chunk["type"] == "text-delta")
    reasoning = "".join(chunk["delta"] for chunk in chunks if chunk["type"] == "reasoning-delta")
    parts = [
        {"type": "step-start"},
        {
            "type": "reasoning",
            "text": reasoning,
            "state": "done",
            "providerMetadata": end["providerMetadata"],
        },
        {"type": "text", "text": text, "state": "done"},
    ]
    return {"id": "a1", "role": "assistant", "parts": parts}


def test_servers_given_one_reasoning_key_take_each_others_conversations(
    contracts: Path, tmp_path: Path
) -> None:
    scenario = tmp_path / "reasoning.yaml"
    scenario.write_text(REASONING_SCENARIO, encoding="utf-8")
    key_file = tmp_path / "reasoning.key"
    key_file.write_bytes(b"one key for every server of this deployment\n")
    common = ("--contracts", contracts, "--scenario", scenario)
    shared = {"RUNPORT_SERVER_REASONING_KEY": "one key for every server of this deployment"}
    for url, _ in _serve(*common, env=shared):
        first = _chat(url, _user("rivers", "u1"))
    assert first.status_code == 200
    answer = _answer(first.text)
    sealed = answer["parts"][1]["providerMetadata"]["runport"]  # type: ignore[index]
    assert sealed["reasoning"][0]["provider_metadata"] == {"mock": {"signature": "sig-rivers"}}
    conversation = (_user("rivers", "u1"), answer, _user("lakes", "u2"))
    # Another process, the key from a file: the conversation goes on.
    for url, _ in _serve(*common, "--reasoning-key-file", key_file):
        assert _chat(url, *conversation).status_code == 200
    # A process with a key of its own (none given): the seal is refused, nothing runs.
    for url, _ in _serve(*common):
        refused = _chat(url, *conversation)
        assert refused.status_code == 400
        assert "seal does not match" in refused.json()["errorText"]


def _refused_start(contracts: Path, *options: str | Path) -> subprocess.CompletedProcess[str]:
    """``runport serve`` over the folder and the quick scenario, with ``options``, which it
    must refuse before it listens."""
    return Cli()("serve", "--contracts", contracts, "--scenario", QUICK / "scenario.yaml", *options)


def test_serve_refuses_a_reasoning_key_too_short_to_seal_with(
    contracts: Path, tmp_path: Path
) -> None:
    key_file = tmp_path / "short.key"
    key_file.write_bytes(b"short\n")
    result = _refused_start(contracts, "--reasoning-key-file", key_file)
    assert result.returncode == 1
    assert result.stderr.startswith(
        "runport: error: usage: a reasoning key must be at least 32 bytes, not 5"
    )
    missing = _refused_start(contracts, "--reasoning-key-file", tmp_path / "absent.key")
    assert missing.returncode == 1
    assert "cannot read --reasoning-key-file" in missing.stderr


def test_serve_takes_bodies_up_to_its_max_body_bytes(contracts: Path) -> None:
    for url, _ in _serve(
        "--contracts", contracts, "--scenario", QUICK / "scenario.yaml", "--max-body-bytes", "2048"
    ):
        contract = httpx.get(f"{url}/v1/contracts").json()["contracts"][0]["id"]
        path = f"{url}/v1/contracts/{contract}/executions"
        assert httpx.post(path, json={"inputs": {"topic": "rivers"}}).status_code == 200
        large = httpx.post(path, json={"inputs": {"topic": "r" * 4096}})
        assert large.status_code == 413
        assert large.json()["error"]["code"] == "TQX_REQUEST_TOO_LARGE"


def test_serve_refuses_a_max_body_bytes_that_takes_nothing(contracts: Path) -> None:
    result = _refused_start(contracts, "--max-body-bytes", "0")
    assert result.returncode == 1
    assert result.stderr == "runport: error: usage: --max-body-bytes must be at least 1, not 0\n"
