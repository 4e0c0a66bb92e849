"""Credentials a ``base_url`` carries never reach a written file or the terminal, even when the
upstream echoes the URL it was asked for (issue 22): a real loopback upstream answers 401 with
the URL — password and ``?api-key=`` included — in its error body, and ``runport record``,
``runport batch`` and ``runport run`` write none of it."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "examples" / "quickstart"

PASSWORD = "hunter2"  # short and plain: no key-shaped heuristic would catch it
API_KEY_VALUE = "k3y-42"
SECRETS = (PASSWORD, API_KEY_VALUE)


class EchoingUpstream(BaseHTTPRequestHandler):
    """Refuses every request with a 401 whose message quotes the URL it was asked for, with
    the credentials the client sent put back into it, and the password once more, bare."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        authorization = self.headers.get("Authorization", "")
        basic = authorization.removeprefix("Basic ") if authorization.startswith("Basic ") else ""
        user_info = base64.b64decode(basic).decode() if basic else ""
        host = self.headers["Host"]
        url = f"http://{user_info}@{host}{self.path}"
        password = user_info.partition(":")[2]
        message = f"invalid credentials for {url} (password {password} rejected)"
        sent = self.headers.get("api-key") or authorization.removeprefix("Bearer ")[:64] * (
            authorization.startswith("Bearer ")
        )
        if sent:  # Azure's key or an Entra ID token, put back bare
            message = f"invalid credentials {sent} for {url}"
        body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[str]:
    """The base URL, credentials in it, of the echoing upstream on 127.0.0.1."""
    pytest.importorskip("runport.openai")
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoingUpstream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        yield f"http://user:{PASSWORD}@127.0.0.1:{port}/v1?api-key={API_KEY_VALUE}&api-version=1"
    finally:
        server.shutdown()
        server.server_close()


def cli(
    *args: str | Path, base_url: str, cwd: Path, azure: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "RUNPORT_", "AZURE_OPENAI_"))
    }
    env.update(RUNPORT_OPENAI_BASE_URL=base_url, RUNPORT_OPENAI_MODEL="m", PYTHONIOENCODING="utf-8")
    if azure is not None:
        endpoint = base_url.replace(f"user:{PASSWORD}@", "").split("/v1")[0]
        env.update(AZURE_OPENAI_ENDPOINT=endpoint, RUNPORT_AZURE_OPENAI_MODEL="m", **azure)
    return subprocess.run(
        [sys.executable, "-m", "runport.cli", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def assert_no_secret(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} reached {where}: {text[-2000:]}"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copy(QUICK / "contract.yaml", tmp_path / "contract.yaml")
    request = {"inputs": {"topic": "rivers", "audience": "poets"}}
    (tmp_path / "input.json").write_text(json.dumps(request), encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text(json.dumps(request) + "\n", encoding="utf-8")
    return tmp_path


def test_the_upstream_does_echo_the_credentials(upstream: str, folder: Path) -> None:
    # the premise: the 401 is reported, and it is the upstream's own message
    done = cli("run", "contract.yaml", "--input", "input.json", "--adapter", "openai",
               base_url=upstream, cwd=folder)  # fmt: skip
    assert done.returncode != 0
    assert "TQX_RUNTIME_PERMANENT" in done.stdout + done.stderr
    assert "invalid credentials for http://[redacted]@127.0.0.1" in done.stdout + done.stderr
    assert "api-key=[redacted]" in done.stdout + done.stderr
    assert_no_secret("runport run's output", done.stdout + done.stderr)


def test_a_recorded_scenario_holds_no_credentials(upstream: str, folder: Path) -> None:
    done = cli("record", "contract.yaml", "--input", "input.json", "--adapter", "openai",
               "--out", "fixtures/refused.yaml", base_url=upstream, cwd=folder)  # fmt: skip
    assert done.returncode == 0, done.stderr
    scenario = (folder / "fixtures" / "refused.yaml").read_text(encoding="utf-8")
    assert "kind: fail" in scenario
    assert_no_secret("the recorded scenario", scenario)
    assert_no_secret("the recorded input", (folder / "fixtures" / "refused.input.json").read_text())
    assert_no_secret("runport record's stderr", done.stderr + done.stdout)


def test_a_batch_output_holds_no_credentials(upstream: str, folder: Path) -> None:
    done = cli("batch", "contract.yaml", "--inputs", "rows.jsonl", "--adapter", "openai",
               "--out", "out.jsonl", base_url=upstream, cwd=folder)  # fmt: skip
    assert done.returncode == 2, done.stderr
    output = (folder / "out.jsonl").read_text(encoding="utf-8")
    assert "TQX_RUNTIME_PERMANENT" in output
    assert_no_secret("the batch output", output)
    assert_no_secret("the batch summary", (folder / "out.summary.json").read_text())
    assert_no_secret("runport batch's stderr", done.stderr + done.stdout)


@pytest.mark.parametrize("variable", ["AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"])
def test_an_azure_credential_the_upstream_echoes_reaches_no_output(
    upstream: str, folder: Path, variable: str
) -> None:
    """Azure's ``api-key`` (or an Entra ID token) put back bare in the 401's message: short
    and plain, only the adapter's own secrets can catch it."""
    azure = {variable: API_KEY_VALUE}
    done = cli("run", "contract.yaml", "--input", "input.json", "--adapter", "azure-openai",
               base_url=upstream, cwd=folder, azure=azure)  # fmt: skip
    assert done.returncode != 0
    assert "invalid credentials [redacted] for" in done.stdout + done.stderr
    assert_no_secret("runport run's output", done.stdout + done.stderr)
    done = cli("record", "contract.yaml", "--input", "input.json", "--adapter", "azure-openai",
               "--out", "refused.yaml", base_url=upstream, cwd=folder, azure=azure)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert_no_secret("the recorded scenario", (folder / "refused.yaml").read_text())
    assert_no_secret("runport record's stderr", done.stderr + done.stdout)
    done = cli("batch", "contract.yaml", "--inputs", "rows.jsonl", "--adapter", "azure-openai",
               "--out", "out.jsonl", base_url=upstream, cwd=folder, azure=azure)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "TQX_RUNTIME_PERMANENT" in (folder / "out.jsonl").read_text(encoding="utf-8")
    assert_no_secret("the batch output", (folder / "out.jsonl").read_text(encoding="utf-8"))
    assert_no_secret("runport batch's stderr", done.stderr + done.stdout)
