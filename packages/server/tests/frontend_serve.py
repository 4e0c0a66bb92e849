"""What the browser tier's chat tests stand up: ``runport serve`` as a subprocess, a static
site for the bundled page (another origin, as a real frontend is), and an OpenAI-compatible
upstream on loopback that streams at the test's pace and notices when it is hung up on."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


@contextlib.contextmanager
def runport_serve(*args: str | Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """``runport serve --port 0 ARGS`` run from this folder (so ``--tools chat_tools:TOOLS``
    imports); yields its base URL, stops it with Ctrl-C."""
    process = subprocess.Popen(
        [sys.executable, "-m", "runport.cli", "serve", "--port", "0", *map(str, args)],
        cwd=HERE,
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
    drain = threading.Thread(target=process.stderr.read, daemon=True)
    drain.start()
    try:
        yield found.group(1)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        drain.join(timeout=5)
        process.stderr.close()


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True


@contextlib.contextmanager
def static_site(folder: Path) -> Iterator[str]:
    """``folder`` served on a free loopback port."""

    class Files(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = _Quiet(("127.0.0.1", 0), functools.partial(Files, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"


class PacedOpenAI:
    """``POST /v1/chat/completions`` streamed: the first call sends its reasoning and its
    first words, then holds until ``release`` (or until the client hangs up, which
    ``closed`` records); every later call answers at once. ``requests`` keeps the bodies."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.released = threading.Event()
        self.closed = threading.Event()

    def release(self) -> None:
        self.released.set()

    def _respond(self, handler: BaseHTTPRequestHandler) -> None:
        body = json.loads(handler.rfile.read(int(handler.headers["content-length"])))
        self.requests.append(body)
        first = len(self.requests) == 1
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("connection", "close")
        handler.end_headers()
        out = handler.wfile
        out.write(_chunk({"role": "assistant", "reasoning_content": "A lighthouse story: "}))
        out.write(_chunk({"content": "The keeper "}))
        out.flush()
        if first and not self._held(handler.connection):
            self.closed.set()
            return
        out.write(_chunk({"content": "waited."}))
        out.write(_chunk({}, "stop"))
        out.write(b"data: [DONE]\n\n")
        out.flush()

    def _held(self, connection: socket.socket) -> bool:
        """Wait for ``release``; ``False`` as soon as the client has hung up."""
        while not self.released.wait(0.02):
            readable, _, _ = select.select([connection], [], [], 0)
            if readable and connection.recv(1, socket.MSG_PEEK) == b"":
                return False
        return True

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                upstream._respond(self)

        server = _Quiet(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            self.release()
            server.shutdown()
            server.server_close()


class DeletingOpenAI:
    """``POST /v1/chat/completions`` streamed, a model that asks to delete the file the user
    names (``delete_file``, call id ``call-del``) and, once the tool's answer is in the
    conversation, answers ``{"coat": <that answer>}``. ``requests`` keeps the bodies."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def _respond(self, handler: BaseHTTPRequestHandler) -> None:
        body = json.loads(handler.rfile.read(int(handler.headers["content-length"])))
        self.requests.append(body)
        last = body["messages"][-1]
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("connection", "close")
        handler.end_headers()
        out = handler.wfile
        if last["role"] == "user":
            path = str(last["content"]).removeprefix("Which coat for ")
            call = {
                "index": 0,
                "id": "call-del",
                "type": "function",
                "function": {"name": "delete_file", "arguments": json.dumps({"path": path})},
            }
            out.write(_chunk({"role": "assistant", "tool_calls": [call]}))
            out.write(_chunk({}, "tool_calls"))
        else:
            out.write(
                _chunk({"role": "assistant", "content": json.dumps({"coat": last["content"]})})
            )
            out.write(_chunk({}, "stop"))
        out.write(b"data: [DONE]\n\n")
        out.flush()

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                upstream._respond(self)

        server = _Quiet(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            server.shutdown()
            server.server_close()
