"""`runport run … --adapter openai` end to end: the CLI finds the provider through its entry point
and streams a real SSE response from a server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "examples" / "quickstart"
PIECES = ["Bytes ", "arrive ", "one by one"]


def _frame(payload: object) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


class _Handler(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, object]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m", "created": 0}
        self.wfile.write(
            _frame({**chunk, "choices": [{"index": 0, "delta": {"role": "assistant"}}]})
        )
        for piece in PIECES:
            self.wfile.write(
                _frame({**chunk, "choices": [{"index": 0, "delta": {"content": piece}}]})
            )
        self.wfile.write(
            _frame({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        )
        self.wfile.write(
            _frame({**chunk, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}})
        )
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def upstream() -> Iterator[str]:
    pytest.importorskip("runport.openai")
    _Handler.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _runport(upstream: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``runport *args`` pointed at ``upstream`` with a planted key, on the quickstart input."""
    env = {
        **os.environ,
        "RUNPORT_OPENAI_BASE_URL": upstream,
        "RUNPORT_OPENAI_MODEL": "tiny",
        "OPENAI_API_KEY": "sk-planted-secret",
    }
    inputs = ["--input", str(QUICK / "input.json"), "--adapter", "openai", "--json"]
    return subprocess.run(
        [sys.executable, "-m", "runport.cli", *args, *inputs],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_run_streams_from_an_openai_compatible_server(upstream: str) -> None:
    result = _runport(upstream, "run", str(QUICK / "contract.yaml"))
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["kind"] for e in events] == ["Delta", "Delta", "Delta", "Complete"]
    receipt = events[-1]["receipt"]
    assert receipt["text"] == "".join(PIECES)
    assert receipt["adapter"]["id"] == "openai-chat"
    assert receipt["usage"] == {"input_tokens": 9, "output_tokens": 3}
    assert "sk-planted-secret" not in result.stdout + result.stderr
    (request,) = _Handler.seen
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-planted-secret"
    body = request["body"]
    assert isinstance(body, dict)
    assert body["stream"] is True
    assert body["model"] == "tiny"
    assert body["temperature"] == 0.7


def test_run_without_the_provider_settings_is_a_one_line_error() -> None:
    pytest.importorskip("runport.openai")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNPORT_OPENAI")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "runport.cli",
            "run",
            str(QUICK / "contract.yaml"),
            "--input",
            str(QUICK / "input.json"),
            "--adapter",
            "openai",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert "RUNPORT_OPENAI_BASE_URL" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_vv_shows_the_wire_on_stderr_without_the_key(upstream: str) -> None:
    result = _runport(upstream, "-vv", "run", str(QUICK / "contract.yaml"))
    assert result.returncode == 0, result.stderr
    logged = [line for line in result.stderr.splitlines() if line.startswith("runport: ")]
    target = f"POST {upstream}/chat/completions"
    assert logged[:3] == [
        "runport: DEBUG runport.application: adapter 'openai' from "
        "runport.openai:create_adapter (runport-openai)",
        f"runport: INFO runport.openai: openai adapter: {upstream}, model tiny, with an API key",
        f"runport: DEBUG runport.http: {target}: sending (streamed)",
    ]
    assert logged[3].startswith(f"runport: DEBUG runport.http: {target}: status 200, read ")
    assert "sk-planted-secret" not in result.stdout + result.stderr
    assert not any(piece in result.stderr for piece in PIECES[1:])  # no model text either
