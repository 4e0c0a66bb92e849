"""Test doubles for the HTTP layer: a raw-socket HTTP/1.1 loopback server whose every byte a
test writes (reason phrases, encodings, trickles, stalls), and a small line-protocol codec.

Written on ``socket`` rather than ``http.server`` so a test can send what no well-behaved
server would: a reason phrase full of escapes, a gzip bomb, a body that never ends. The server
counts the connections it accepted and notes which ones the client closed, so tests can prove
pooling and prompt release.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from runport.contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Message,
    StreamEvent,
    fingerprint,
)
from runport.http import Codec, HTTPRequest, ResponseDecoder, SSEDecoder, encode_json
from runport.ports import PortError

API_KEY = "sk-http-test-SECRET-9d2e71"


def make_request(text: str = "hello", **policy: Any) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test/0",
            contract_id="http-test",
            contract_version="1.0.0",
            messages=[Message(role="user", content=text)],
            output_schema={"type": "string"},
            runtime_policy=policy,
        )
    )


# --- a codec -------------------------------------------------------------------------------

DESCRIPTOR = AdapterDescriptor(id="lines", version="1.0.0", capabilities=["streaming", "text"])


class LineCodec(Codec):
    """``POST …/lines``. Streamed: SSE ``data:`` frames of text, ``data: [END]`` the marker.
    Unstreamed: ``{"text": …}``. Errors: ``{"error": {"message": …}}``."""

    secrets = (API_KEY,)

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = {"prompt": request.interaction.messages[-1].content, "stream": stream}
        return HTTPRequest("POST", "lines", encode_json(body), {"x-key": API_KEY})

    def decoder(
        self, request: ExecutionRequest, *, stream: bool, media_type: str
    ) -> ResponseDecoder:
        return LineDecoder(request, sse=media_type == "text/event-stream")

    def error_text(self, body: Any) -> Any:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            return body["error"].get("message")
        return None


class LineDecoder(ResponseDecoder):
    def __init__(self, request: ExecutionRequest, *, sse: bool) -> None:
        self.request = request
        self.sse = SSEDecoder() if sse else None
        self.parts: list[str] = []
        self.raw: list[bytes] = []

    def feed(self, data: bytes) -> list[StreamEvent]:
        if self.sse is None:
            self.raw.append(data)
            return []
        events: list[StreamEvent] = []
        for _, payload in self.sse.feed(data):
            if payload == b"[END]":
                self.complete = self.finished = True
                break
            text = payload.decode()
            self.parts.append(text)
            events.append(Delta(text=text))
        return events

    def end(self) -> list[StreamEvent]:
        if self.sse is not None:
            return []
        try:
            text = json.loads(b"".join(self.raw))["text"]
        except (ValueError, KeyError, TypeError):
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "not a lines answer") from None
        self.parts.append(text)
        self.complete = True
        return [Delta(text=text)]

    def receipt(self) -> ExecutionReceipt:
        if not self.complete:
            raise PortError(ErrorCode.RUNTIME_STREAM_TRUNCATED, "no [END]")
        text = "".join(self.parts) or None
        return ExecutionReceipt(
            adapter=DESCRIPTOR,
            request_fingerprint=fingerprint(self.request.interaction),
            output_fingerprint=fingerprint(text),
            output=text,
            output_schema_valid=True,
            text=text,
        )


# --- the server ----------------------------------------------------------------------------


@dataclass
class Connection:
    sock: socket.socket
    closed_by_client: threading.Event = field(default_factory=threading.Event)

    def write(self, data: bytes) -> bool:
        """``False`` once the client has gone."""
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed_by_client.set()
            return False
        return True

    def chunk(self, data: bytes) -> bool:
        return self.write(b"%x\r\n%s\r\n" % (len(data), data))


Handler = Callable[[Connection, bytes], bool]
"""Writes one response on the connection; ``True`` keeps the connection for another request."""


class FaultServer:
    """Plays ``handlers[n]`` for request *n* (the last one repeats)."""

    def __init__(self, handlers: Sequence[Handler]) -> None:
        self.handlers = list(handlers)
        self.accepted = 0
        self.requests: list[bytes] = []
        self.connections: list[Connection] = []
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def close(self) -> None:
        self._stop.set()
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        self._listener.close()

    def wait_closed(self, index: int = -1, timeout: float = 5.0) -> bool:
        """Whether connection ``index`` was closed by the client within ``timeout``."""
        deadline = time.monotonic() + timeout
        while not self.connections and time.monotonic() < deadline:
            time.sleep(0.01)
        return bool(self.connections) and self.connections[index].closed_by_client.wait(
            max(0.0, deadline - time.monotonic())
        )

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            connection = Connection(sock)
            self.connections.append(connection)
            threading.Thread(target=self._connection, args=(connection,), daemon=True).start()

    def _connection(self, connection: Connection) -> None:
        with connection.sock:
            reader = connection.sock.makefile("rb")
            while not self._stop.is_set():
                request = _read_request(reader)
                if request is None:
                    connection.closed_by_client.set()
                    return
                self.requests.append(request)
                handler = self.handlers[min(len(self.requests), len(self.handlers)) - 1]
                if not handler(connection, request):
                    _await_close(connection, self._stop)
                    return


def _read_request(reader: Any) -> bytes | None:
    try:
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            line = reader.readline()
            if not line:
                return None
            head += line
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return head + reader.read(length)
    except OSError:
        return None


def _await_close(connection: Connection, stop: threading.Event) -> None:
    connection.sock.settimeout(0.05)
    while not stop.is_set():
        try:
            if connection.sock.recv(1024) == b"":
                break
        except TimeoutError:
            continue
        except OSError:
            break
    connection.closed_by_client.set()


# --- handlers ------------------------------------------------------------------------------


def head(status: str = "200 OK", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}".encode("latin-1")]
    lines += [f"{name}: {value}".encode("latin-1") for name, value in (headers or {}).items()]
    return b"\r\n".join(lines) + b"\r\n\r\n"


SSE = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}


def sse_reply(frames: Sequence[bytes], *, keep: bool = True) -> Handler:
    """A whole chunked SSE response (``keep``: the connection serves another request)."""

    def handler(connection: Connection, request: bytes) -> bool:
        headers = dict(SSE) if keep else {**SSE, "Connection": "close"}
        connection.write(head("200 OK", headers))
        for frame in frames:
            connection.chunk(frame)
        connection.write(b"0\r\n\r\n")
        return keep

    return handler


def fixed_reply(status: str, headers: dict[str, str], body: bytes) -> Handler:
    def handler(connection: Connection, request: bytes) -> bool:
        connection.write(
            head(status, {**headers, "Content-Length": str(len(body)), "Connection": "close"})
            + body
        )
        return False

    return handler


def endless(piece: bytes, every: float, headers: dict[str, str] | None = None) -> Handler:
    """An SSE body that never ends: ``piece`` every ``every`` seconds until the client goes."""

    def handler(connection: Connection, request: bytes) -> bool:
        connection.write(head("200 OK", headers or SSE))
        while connection.chunk(piece):
            time.sleep(every)
        return False

    return handler


def echo(connection: Connection, request: bytes) -> bool:
    """Five frames naming the call (``{prompt}/0`` … ``{prompt}/4``): calls kept apart show."""
    prompt = json.loads(request.partition(b"\r\n\r\n")[2])["prompt"]
    connection.write(head("200 OK", SSE))
    for index in range(5):
        connection.chunk(f"data: {prompt}/{index}\n\n".encode())
    connection.chunk(b"data: [END]\n\n")
    connection.write(b"0\r\n\r\n")
    return True


def frames(*texts: str, end: bool = True) -> list[bytes]:
    out = [f"data: {text}\n\n".encode() for text in texts]
    return [*out, b"data: [END]\n\n"] if end else out


def chunks_of(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]
