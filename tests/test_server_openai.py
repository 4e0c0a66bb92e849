"""``runport serve --adapter openai`` against a keep-alive OpenAI-compatible server on
127.0.0.1: every request goes through one adapter and one connection pool, made when the
server starts and closed when it stops; a client that goes away mid-answer closes the
adapter's upstream connection."""

from __future__ import annotations

import json
import select
import shutil
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "examples" / "quickstart" / "contract.yaml"
ANSWER = "Bytes arrive one by one\nthe pool keeps every socket\nnothing is reopened"
PATH = "/v1/contracts/quickstart.haiku/executions"
JSON = {"Content-Type": "application/json"}


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


class _Held(ThreadingHTTPServer):
    """An OpenAI-compatible upstream that sends the first bytes of its answer, streamed or
    not, then holds the rest until the test lets it go, and records a client that closed
    the connection meanwhile."""

    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _HeldHandler)
        self.sent = threading.Event()
        self.closed = threading.Event()
        self.go_on = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def hold(self, connection: socket.socket) -> bool:
        """Wait for ``go_on``; ``False`` (and ``closed`` set) when the client hung up first."""
        while not self.go_on.is_set():
            readable, _, _ = select.select([connection], [], [], 0.02)
            if readable:
                try:
                    gone = connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    self.closed.set()
                    return False
        return True


class _HeldHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Held

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        base = {"id": "chatcmpl-1", "created": 1, "model": request["model"]}
        if request.get("stream"):
            chunk = {**base, "object": "chat.completion.chunk"}
            first, rest = (
                f"data: {json.dumps({**chunk, 'choices': [choice]})}\n\n".encode()
                for choice in (
                    {"index": 0, "delta": {"role": "assistant", "content": "Bytes "}},
                    {"index": 0, "delta": {}, "finish_reason": "stop"},
                )
            )
            rest += b"data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
        else:
            message = {"role": "assistant", "content": ANSWER}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            body = json.dumps({**base, "object": "chat.completion", "choices": [choice]})
            first, rest = body[:20].encode(), body[20:].encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(first) + len(rest)))
        self.end_headers()
        try:
            self.wfile.write(first)
            self.wfile.flush()
            self.server.sent.set()
            if self.server.hold(self.connection):
                self.wfile.write(rest)
                self.wfile.flush()
        except OSError:
            self.server.closed.set()


@pytest.fixture
def held() -> Iterator[_Held]:
    pytest.importorskip("runport.openai")
    pytest.importorskip("runport.server")
    server = _Held()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield server
    finally:
        server.go_on.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("streamed", [True, False], ids=["events", "json"])
def test_a_client_that_goes_away_mid_answer_closes_the_openai_upstream(
    held: _Held, streamed: bool
) -> None:
    from runport.application import load_catalog
    from runport.openai import create_async_adapter
    from runport.server import create_app, serve_in_background

    adapter = create_async_adapter(
        base_url=held.base_url, model="tiny", api_key="sk-loopback", response_format_mode="none"
    )
    app = create_app(load_catalog(CONTRACT.parent, warn=pytest.fail), adapter)
    body = json.dumps({"inputs": {"topic": "pools"}}).encode()
    with serve_in_background(app) as url:
        if streamed:
            with (
                httpx.Client(base_url=url, timeout=30) as http,
                http.stream(
                    "POST", PATH, content=body, headers={"Accept": "text/event-stream", **JSON}
                ) as response,
            ):
                assert response.status_code == 200
                for line in response.iter_lines():
                    if line == "event: Delta":
                        break
        else:
            # No byte comes back before the whole answer: hang up once the upstream is
            # sending it.
            where = urlsplit(url)
            with socket.create_connection((where.hostname, where.port), timeout=30) as client:
                head = f"POST {PATH} HTTP/1.1\r\nHost: {where.netloc}\r\n"
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                client.sendall(head.encode() + body)
                assert held.sent.wait(30), "the upstream was never called"
        assert held.closed.wait(30), "the upstream connection stayed open after the client left"


def test_a_resumable_run_stopped_by_delete_closes_the_openai_upstream(held: _Held) -> None:
    from runport.application import load_catalog
    from runport.openai import create_async_adapter
    from runport.server import MemoryEventLog, create_app, serve_in_background

    adapter = create_async_adapter(
        base_url=held.base_url, model="tiny", api_key="sk-loopback", response_format_mode="none"
    )
    catalog = load_catalog(CONTRACT.parent, warn=pytest.fail)
    app = create_app(catalog, adapter, event_log=MemoryEventLog())
    body = {"inputs": {"topic": "pools"}}
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        events = {"Accept": "text/event-stream"}
        with http.stream("POST", PATH, json=body, headers=events) as response:
            assert response.status_code == 200
            run_id = response.headers["x-runport-run-id"]
            lines = response.iter_lines()
            for line in lines:
                if line == "event: Delta":
                    break
            assert http.delete(f"/v1/runs/{run_id}").status_code == 202
            assert held.closed.wait(30), "the upstream connection stayed open after the stop"
            assert "event: envelope" in list(lines)
