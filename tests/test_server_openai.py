"""``runport serve --adapter openai`` against a keep-alive OpenAI-compatible server on
127.0.0.1: every request goes through one adapter and one connection pool, made when the
server starts and closed when it stops."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "examples" / "quickstart" / "contract.yaml"
ANSWER = "Bytes arrive one by one\nthe pool keeps every socket\nnothing is reopened"
PATH = "/v1/contracts/quickstart.haiku/executions"


class _Upstream(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.connections = 0
        self.open = 0
        self.requests = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    """Chat completions, streamed or not, on connections it keeps open (HTTP/1.1)."""

    protocol_version = "HTTP/1.1"
    server: _Upstream

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1
            self.server.open += 1

    def finish(self) -> None:
        with self.server.lock:
            self.server.open -= 1
        super().finish()

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests += 1
        base = {"id": "chatcmpl-1", "created": 1, "model": request["model"]}
        if request.get("stream"):
            chunks = [
                {**base, "object": "chat.completion.chunk", "choices": [choice]}
                for choice in (
                    {"index": 0, "delta": {"role": "assistant", "content": ANSWER}},
                    {"index": 0, "delta": {}, "finish_reason": "stop"},
                )
            ]
            body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
            self._send("text/event-stream", (body + "data: [DONE]\n\n").encode())
            return
        message = {"role": "assistant", "content": ANSWER}
        completion = {
            **base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 12, "total_tokens": 17},
        }
        self._send("application/json", json.dumps(completion).encode())

    def _send(self, media_type: str, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", media_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def upstream() -> Iterator[_Upstream]:
    pytest.importorskip("runport.openai")
    pytest.importorskip("runport.server")
    server = _Upstream()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _run(http: httpx.Client, streamed: bool) -> None:
    headers = {"Accept": "text/event-stream"} if streamed else {}
    response = http.post(PATH, json={"inputs": {"topic": "pools"}}, headers=headers)
    assert response.status_code == 200
    text = response.text.rsplit("data: ", 1)[1] if streamed else response.text
    envelope = json.loads(text)
    assert envelope["ok"], envelope
    assert envelope["result"]["output"] == ANSWER


def _run_alone(url: str, streamed: bool) -> None:
    with httpx.Client(base_url=url, timeout=30) as http:
        _run(http, streamed)


def test_every_request_goes_through_one_pool_closed_when_the_server_stops(
    upstream: _Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runport.server import prepare, serve_in_background

    monkeypatch.setenv("RUNPORT_OPENAI_BASE_URL", upstream.base_url)
    monkeypatch.setenv("RUNPORT_OPENAI_MODEL", "tiny")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    folder = tmp_path / "contracts"
    folder.mkdir()
    shutil.copy(CONTRACT, folder / "haiku.yaml")
    app = prepare(folder, adapter="openai", warn=pytest.fail)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        for number in range(10):
            _run(http, streamed=number % 2 == 1)
        assert upstream.connections == 1
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda number: _run_alone(url, number % 2 == 1), range(8)))
        for number in range(10):
            _run(http, streamed=number % 2 == 1)
    assert upstream.requests == 28
    # at most one connection per request in flight at once, every one kept for the next
    assert upstream.connections <= 9
    for _ in range(500):
        if upstream.open == 0:
            break
        threading.Event().wait(0.01)
    assert upstream.open == 0, "the server stopped with its upstream connections still open"
