"""The loopback upstream every provider's tests share: a raw-socket HTTP/1.1 server on 127.0.0.1
whose every byte a test writes, and the replies it plays.

Written on ``socket`` rather than ``http.server`` so a test can send what no well-behaved server
would: a reason phrase full of escapes, a gzip bomb, a body that never ends, a connection cut
mid-chunk. The server counts the connections it accepted and notes which ones the client closed,
so tests can prove pooling and prompt release. Request *n* is played by ``handlers[n]`` (the last
one repeats); a handler is a plain function of the connection and the request's bytes.

An adapter author's tests use it beside the suite: ``serving(json_reply({...}))`` is an upstream
for one test, ``Playback`` one whose answer a property test swaps per example.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, BinaryIO

__all__ = [
    "SSE",
    "Connection",
    "FaultServer",
    "Handler",
    "Playback",
    "Seen",
    "endless",
    "fixed_reply",
    "head",
    "json_reply",
    "rechunk",
    "seen",
    "serving",
    "sse_reply",
    "stream_reply",
    "trickle",
]


@dataclass
class Connection:
    """One accepted connection: what a handler writes on."""

    sock: socket.socket
    closed_by_client: threading.Event = field(default_factory=threading.Event)
    resetting: bool = False

    def write(self, data: bytes) -> bool:
        """``False`` once the client has gone."""
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed_by_client.set()
            return False
        return True

    def chunk(self, data: bytes) -> bool:
        """``data`` as one HTTP/1.1 chunk."""
        return self.write(b"%x\r\n%s\r\n" % (len(data), data))

    def reset(self) -> None:
        """Abort the connection with a TCP RST (``SO_LINGER`` 0) once the handler returns
        ``False``, instead of waiting for the client to close it."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.resetting = True


Handler = Callable[[Connection, bytes], bool]
"""Writes one response on the connection; ``True`` keeps the connection for another request,
``False`` waits for the client to close it (a handler may shut the socket down first, or
``reset`` the connection)."""


class FaultServer:
    """Plays ``handlers[n]`` for request *n* (the last one repeats). ``requests`` holds each
    request's bytes (head and body), ``connections`` each connection accepted."""

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
                    if connection.resetting:
                        reader.close()  # the last reference: leaving ``with`` sends the RST
                    else:
                        _await_close(connection, self._stop)
                    return


def _read_request(reader: BinaryIO) -> bytes | None:
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


# --- what the server saw ---------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """A request the server answered, parsed: its method, target, headers (lower-cased names)
    and JSON body (``None`` when it had none)."""

    method: str
    target: str
    headers: dict[str, str]
    body: Any

    @classmethod
    def parse(cls, request: bytes) -> Seen:
        """A request's bytes (head and body, as ``FaultServer.requests`` holds them), parsed."""
        head_bytes, _, body = request.partition(b"\r\n\r\n")
        lines = head_bytes.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return cls(method, target, headers, json.loads(body) if body else None)


def seen(server: FaultServer, index: int = -1) -> Seen:
    """The server's request ``index``, parsed."""
    return Seen.parse(server.requests[index])


# --- replies ---------------------------------------------------------------------------------


def head(status: str = "200 OK", headers: dict[str, str] | None = None) -> bytes:
    """A response head: the status line (``status`` written as given) and ``headers``."""
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


def stream_reply(events: Sequence[bytes], *, headers: dict[str, str] | None = None) -> Handler:
    """Each item one HTTP chunk of a chunked event-stream response; the connection is kept."""

    def handler(connection: Connection, request: bytes) -> bool:
        connection.write(head("200 OK", {**SSE, **(headers or {})}))
        for piece in events:
            if piece:
                connection.chunk(piece)
        connection.write(b"0\r\n\r\n")
        return True

    return handler


def json_reply(body: Any, status: str = "200 OK", headers: dict[str, str] | None = None) -> Handler:
    """``body`` as JSON (``bytes`` written as given) with its length; the connection is kept."""
    data = json.dumps(body).encode() if not isinstance(body, bytes) else body

    def handler(connection: Connection, request: bytes) -> bool:
        connection.write(
            head(
                status,
                {
                    "Content-Type": "application/json",
                    "Content-Length": str(len(data)),
                    **(headers or {}),
                },
            )
            + data
        )
        return True

    return handler


def fixed_reply(status: str, headers: dict[str, str], body: bytes) -> Handler:
    """``body`` with its length, then the connection closes."""

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


def trickle(first: bytes, piece: bytes, every: float = 0.005) -> Handler:
    """An event stream that opens with ``first`` and then sends ``piece`` every ``every``
    seconds until the client goes (a provider still generating)."""

    def handler(connection: Connection, request: bytes) -> bool:
        connection.write(head("200 OK", SSE))
        connection.chunk(first)
        while connection.chunk(piece):
            time.sleep(every)
        return False

    return handler


def rechunk(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    """``data`` cut at the given offsets (any order, duplicates and out-of-range ignored)."""
    points = sorted({cut for cut in cuts if 0 < cut < len(data)})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


# --- servers ---------------------------------------------------------------------------------


@contextmanager
def serving(*handlers: Handler) -> Iterator[FaultServer]:
    """A loopback server playing ``handlers[n]`` for request *n*, closed on leaving."""
    server = FaultServer(list(handlers))
    try:
        yield server
    finally:
        server.close()


class Playback:
    """A loopback upstream whose answer a test swaps per example (``answer``), so a property
    test serves each example's bytes without a server per example."""

    def __init__(self) -> None:
        self.answer: Handler = stream_reply([])
        self.server = FaultServer([self._handler])
        self.base_url = self.server.base_url.removesuffix("/v1")

    def _handler(self, connection: Connection, request: bytes) -> bool:
        return self.answer(connection, request)

    def close(self) -> None:
        self.server.close()
