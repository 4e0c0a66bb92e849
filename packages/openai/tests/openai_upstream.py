"""Test doubles for the adapter's upstream: chat-completion transcripts, a loopback HTTP server
that plays them (and misbehaves on cue), and an httpx transport that notices closed responses.

The server is the shared loopback upstream, ``runport.conformance.loopback.FaultServer``, playing
each queued reply with its own chunked framing, so every byte on the wire is under the test's
control.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal

import httpx

from runport.conformance.loopback import Connection, FaultServer, Seen, head
from runport.conformance.providers import OBJECT_SCHEMA as PROVIDER_OBJECT_SCHEMA

API_KEY = "sk-test-SECRET-4f1c9a"
"""Planted so tests can prove it never shows up in events, errors or logs."""

OBJECT_SCHEMA: dict[str, Any] = {**PROVIDER_OBJECT_SCHEMA, "additionalProperties": False}
"""Strict structured outputs want every object closed."""


# --- chat-completion chunks and bodies -------------------------------------------------------

_ENVELOPE = {
    "id": "chatcmpl-test",
    "object": "chat.completion.chunk",
    "created": 1700000000,
    "model": "test-model",
}


def chunk(delta: dict[str, Any] | None = None, *, finish: str | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {**_ENVELOPE, "choices": [choice]}


def role_chunk() -> dict[str, Any]:
    return chunk({"role": "assistant", "content": ""})


def text_chunk(text: str) -> dict[str, Any]:
    return chunk({"content": text})


def tool_chunk(
    index: int, *, call_id: str | None = None, name: str | None = None, arguments: str | None = None
) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index}
    function: dict[str, Any] = {}
    if call_id is not None:
        fragment["id"] = call_id
        fragment["type"] = "function"
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    if function:
        fragment["function"] = function
    return chunk({"tool_calls": [fragment]})


def finish_chunk(reason: str = "stop") -> dict[str, Any]:
    return chunk(finish=reason)


def usage_chunk(prompt: int = 7, completion: int = 3) -> dict[str, Any]:
    return {
        **_ENVELOPE,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def sse(
    chunks: Iterable[dict[str, Any] | bytes],
    *,
    done: bool = True,
    newline: str = "\n",
    space: bool = True,
) -> bytes:
    """``chunks`` as an event-stream body. ``bytes`` items are written verbatim (comments,
    garbage); dicts become ``data:`` frames."""
    prefix = b"data: " if space else b"data:"
    end = newline.encode()
    out = bytearray()
    for item in chunks:
        if isinstance(item, bytes):
            out += item
        else:
            out += prefix + json.dumps(item, ensure_ascii=False).encode() + end + end
    if done:
        out += prefix + b"[DONE]" + end + end
    return bytes(out)


def completion(
    text: str | None = None,
    tool_calls: list[tuple[str, str, str]] | None = None,
    *,
    finish: str | None = "stop",
    usage: tuple[int, int] | None = (7, 3),
) -> dict[str, Any]:
    """A whole ``chat.completion``; ``tool_calls`` as ``(id, name, arguments text)``."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in tool_calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return body


# --- the loopback server ---------------------------------------------------------------------


@dataclass(frozen=True)
class Stall:
    """Stop writing until the test calls ``upstream.release()`` (or ``seconds`` pass)."""

    seconds: float = 10.0


@dataclass(frozen=True)
class Cut:
    """Close the connection mid-body: FIN, no chunked terminator."""


@dataclass(frozen=True)
class Reset:
    """Abort the connection: RST (``SO_LINGER`` 0)."""


Part = bytes | Stall | Cut | Reset


@dataclass
class Reply:
    """What the server answers to one request. ``parts`` are written one HTTP chunk each (or
    raw, for ``length``/``close`` framing), with misbehaviour where the script says."""

    parts: list[Part] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    framing: Literal["chunked", "length", "close"] = "chunked"

    @classmethod
    def json(cls, body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
        return cls(
            parts=[json.dumps(body).encode()],
            status=status,
            headers={"Content-Type": "application/json", **(headers or {})},
            framing="length",
        )


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


class _Gone(Exception):
    """The client went away while the reply was being written."""


class LoopbackUpstream:
    """The shared loopback upstream (``runport.conformance.loopback``) answering each POST with
    the next queued ``Reply``. It records what it was sent, and whether a client went away
    mid-answer."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self.disconnects = 0
        self.released = threading.Event()
        self._lock = threading.Lock()
        self._active = 0
        self._idle = threading.Condition(self._lock)
        self._server = FaultServer([self._answer])

    @property
    def base_url(self) -> str:
        return self._server.base_url

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def release(self) -> None:
        self.released.set()

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Whether every answer in progress finished (its client read it all or went away)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._active == 0, timeout)

    def close(self) -> None:
        self.release()
        self._server.close()

    def _take(self, recorded: Recorded) -> Reply | None:
        with self._lock:
            self.requests.append(recorded)
            self._active += 1
            return self.replies.pop(0) if self.replies else None

    def _done(self, *, disconnected: bool) -> None:
        with self._idle:
            self._active -= 1
            self.disconnects += disconnected
            self._idle.notify_all()

    def _answer(self, connection: Connection, request: bytes) -> bool:
        # Each part goes out when written: no Nagle delay between a head and its body.
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        parsed = Seen.parse(request)
        reply = self._take(Recorded(parsed.target, parsed.headers, parsed.body))
        disconnected = False
        try:
            return self._play(connection, reply or Reply(status=500, parts=[b"no reply queued"]))
        except _Gone:
            disconnected = True
            return False
        finally:
            self._done(disconnected=disconnected)

    def _play(self, connection: Connection, reply: Reply) -> bool:
        def write(data: bytes) -> None:
            if not connection.write(data):
                raise _Gone

        headers = dict(reply.headers)
        data = [part for part in reply.parts if isinstance(part, bytes)]
        if reply.framing == "chunked":
            headers["Transfer-Encoding"] = "chunked"
        elif reply.framing == "length":
            headers["Content-Length"] = str(sum(map(len, data)))
        else:
            headers["Connection"] = "close"
        write(head(f"{reply.status} {HTTPStatus(reply.status).phrase}", headers))
        for part in reply.parts:
            if isinstance(part, bytes):
                if reply.framing != "chunked":
                    write(part)
                elif part:
                    write(b"%x\r\n%s\r\n" % (len(part), part))
            elif isinstance(part, Stall):
                self.released.wait(part.seconds)
            elif isinstance(part, Cut):
                connection.sock.shutdown(socket.SHUT_RDWR)
                return False
            else:
                connection.reset()
                return False
        if reply.framing == "chunked":
            write(b"0\r\n\r\n")
        elif reply.framing == "close":
            connection.sock.shutdown(socket.SHUT_WR)
            return False
        return True


# --- transports ------------------------------------------------------------------------------


class _TrackedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, log: list[_TrackedStream]) -> None:
        self._inner = inner
        self.closed = False
        log.append(self)

    def __iter__(self) -> Iterator[bytes]:
        yield from self._inner

    def close(self) -> None:
        self.closed = True
        self._inner.close()


class TrackingTransport(httpx.BaseTransport):
    """The real HTTP transport, noting each response and whether it was closed — how a test
    proves the adapter released its upstream before an exception left it."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()
        self.streams: list[_TrackedStream] = []

    @property
    def all_closed(self) -> bool:
        return all(stream.closed for stream in self.streams)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_TrackedStream(response.stream, self.streams),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._inner.close()


class ChunkedBody(httpx.BaseTransport):
    """Serves ``reads`` in memory, exactly as given: each item is one read of the body. Used
    where a test needs the read boundaries themselves (UTF-8 split across reads)."""

    def __init__(self, reads: list[bytes], content_type: str = "text/event-stream") -> None:
        self.reads = reads
        self.content_type = content_type
        self.bodies: list[Any] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.read()))
        return httpx.Response(
            200, headers={"Content-Type": self.content_type}, content=iter(self.reads)
        )
