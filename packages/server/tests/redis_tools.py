"""What the Redis tests run: their own ``redis-server`` on a free loopback port in a temporary
folder, an OpenAI-compatible upstream the test paces piece by piece, and ``runport serve``
processes pointed at both."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import redis

from .conftest import CONTRACTS


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class RedisServer:
    command: list[str]
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it (again, on the same port) and wait until it answers."""
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + 30
        try:
            while True:
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    assert self.process.poll() is None, "redis-server exited at start"
                    assert time.monotonic() < deadline, "redis-server did not start"
                    time.sleep(0.02)
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A ``redis-server`` of its own: nothing saved, nothing shared with another test."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise AssertionError("no redis-server on PATH: apt-get install -y redis-server")
    with tempfile.TemporaryDirectory(prefix="runport-redis-") as folder:
        port = free_port()
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", folder]
        command += ["--save", "", "--appendonly", "no", "--protected-mode", "yes"]
        server = RedisServer(command, port)
        server.start()
        try:
            yield server
        finally:
            server.stop()


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "paced",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


@dataclass
class PacedOpenAI:
    """An OpenAI-compatible chat upstream that sends one of ``pieces`` each time the test
    releases one, and records a call whose client hung up before the end."""

    pieces: list[str]
    released: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    hung_up: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    calls: int = 0
    url: str = ""

    def release(self, count: int = 1) -> None:
        for _ in range(count):
            self.released.release()

    def release_all(self) -> None:
        self.release(len(self.pieces))

    def _wait(self, connection: socket.socket) -> bool:
        """Wait for a release; ``False`` when the client hung up meanwhile."""
        while not self.released.acquire(timeout=0.02):
            readable, _, _ = select.select([connection], [], [], 0)
            if readable and connection.recv(1, socket.MSG_PEEK) == b"":
                return False
        return True

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        self.calls += 1
        request.rfile.read(int(request.headers.get("content-length", "0")))
        request.send_response(200)
        request.send_header("content-type", "text/event-stream")
        request.send_header("connection", "close")
        request.end_headers()
        try:
            request.wfile.write(_chunk({"role": "assistant", "content": ""}))
            request.wfile.flush()
            for piece in self.pieces:
                if not self._wait(request.connection):
                    self.hung_up.set()
                    return
                request.wfile.write(_chunk({"content": piece}))
                request.wfile.flush()
            request.wfile.write(_chunk({}, "stop") + b"data: [DONE]\n\n")
            request.wfile.flush()
            self.finished.set()
        except OSError:
            self.hung_up.set()


@contextmanager
def paced_openai(pieces: list[str]) -> Iterator[PacedOpenAI]:
    upstream = PacedOpenAI(pieces)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            upstream.serve(self)

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    upstream.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield upstream
    finally:
        upstream.release(1000)
        server.shutdown()
        server.server_close()


@dataclass
class ServeProcess:
    process: subprocess.Popen[str]
    url: str
    said: list[str]


def serve_command(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "runport.cli", "serve", "--port", "0", *map(str, args)]


@contextmanager
def runport_serve(event_log: str, upstream: str, *args: str) -> Iterator[ServeProcess]:
    """``runport serve --resumable`` on a free port, with the OpenAI adapter on ``upstream``."""
    env = {
        **os.environ,
        "PYTHONIOENCODING": "utf-8",
        "RUNPORT_OPENAI_BASE_URL": upstream,
        "RUNPORT_OPENAI_MODEL": "paced",
        "RUNPORT_OPENAI_RESPONSE_FORMAT": "none",
    }
    command = serve_command(
        "--contracts", CONTRACTS, "--adapter", "openai", "--resumable", "--event-log", event_log
    )
    process = subprocess.Popen([*command, *args], stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    said: list[str] = []
    for line in process.stderr:
        said.append(line)
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/", line)
        if found:
            break
    else:
        process.wait(timeout=30)
        process.stderr.close()
        raise AssertionError("".join(said))
    stderr = process.stderr
    drain = threading.Thread(target=lambda: said.extend(stderr), daemon=True)
    drain.start()
    try:
        yield ServeProcess(process, found.group(1), said)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        drain.join(timeout=30)
        stderr.close()
