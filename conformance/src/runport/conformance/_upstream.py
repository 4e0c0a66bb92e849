"""The upstreams ``make_adapter`` is given: a scenario, a loopback HTTP server, or nothing.

``ScriptedUpstream`` is a real HTTP/1.1 server on 127.0.0.1 (threaded, one thread per
connection, ``Connection: close``) that speaks one ``WireProtocol`` (a built-in one or an
author's) and answers its endpoint with the next case of its plan — an event stream when the
request asks for one, one body otherwise — and commits the case's fault on the wire. It counts
requests (law 7), notes whether the client closed the connection when a call ended before the
stream did (laws 6 and 8), and, when paced, withholds each frame until the sink has seen the
previous frame's event (law 4): a ``Pacer`` shared with the suite's recording sink is the only
coordination, so nothing in the suite sleeps or measures time except the bounded waits that turn
a hang into a failure. Every such wait is short and independent of the adapter's own timeouts: a
frame held back past ``PACING_BOUND`` is noted (law 4) and the rest of the transcript released
so the call can end; a stall is held only a little past ``read_timeout``, then the connection is
closed.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import struct
import threading
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from runport.conformance._cases import Case
from runport.conformance._frame_pacing import PACING_BOUND, Pacer, Pacing
from runport.conformance._planted import Planted, body_canary, message_marker
from runport.conformance._protocols import PROTOCOLS, UnknownProtocol, resolve
from runport.conformance._responses import (
    Response,
    SentFrame,
    body_response,
    scenario_turn,
    stream_response,
)
from runport.conformance._wire_protocol import WireContext, WireProtocol, WireRequest
from runport.core import Scenario, parse_scenario

__all__ = [
    "BlackBoxUpstream",
    "ConformanceUsageError",
    "Pacer",
    "Pacing",
    "ScenarioUpstream",
    "ScriptedUpstream",
    "Upstream",
]

READ_TIMEOUT: Final = 10.0
"""Seconds: the ``read_timeout`` of an upstream whose plan never stalls, so no case waits on
it; long, so a loaded two-core machine never mistakes a slow frame for a stall.
``make_adapter`` should pass ``upstream.read_timeout`` on."""

STALL_READ_TIMEOUT: Final = 0.5
"""Seconds: the ``read_timeout`` of an upstream whose plan stalls. A stall case sends its frames
at once (or each as soon as the sink saw the last), so the only silence the client waits
through is the stall itself, and every stall case ends half a second after it."""

CLOSE_BOUND: Final = 2.0
"""Seconds the upstream waits for the client to close after a call ended mid-stream (an
adapter closes before its exception leaves ``execute_streaming``, so this is slack only)."""

STALL_SLACK: Final = 2.0
"""Seconds past ``read_timeout`` a stalled response is held open, in a call the suite drives,
before the upstream gives up on the client's read timeout, closes, and notes that the adapter
did not honour it."""

STALL_BOUND: Final = 30.0
"""Seconds a stalled response is held open at most when the upstream is used on its own."""

MODEL: Final = "runport-conformance-model"


class ConformanceUsageError(AttributeError):
    """The suite was used in a way it cannot be: ``make_adapter`` asked its upstream for
    something its protocol does not have, a protocol is unknown, or a run checked nothing."""


def _protocol(protocol: str | WireProtocol) -> WireProtocol:
    try:
        wire = resolve(protocol)
    except UnknownProtocol:
        wire = None
    if wire is None:
        raise ConformanceUsageError(
            f"no scripted upstream speaks {protocol!r}; expected one of {sorted(PROTOCOLS)} "
            "or a runport.conformance.WireProtocol"
        )
    return wire


class Upstream:
    """What ``make_adapter(upstream)`` receives.

    Every upstream carries ``read_timeout`` (pass it on, so stall cases end quickly),
    ``api_key`` (a planted secret: pass it on; law 10 checks it never leaks) and ``model``.
    ``scenario`` exists for ``protocol = "scenario"``, ``base_url`` for the HTTP protocols.
    """

    protocol: str | None = None
    """The name of the protocol the upstream speaks (``None``: black box)."""

    def __init__(self, *, read_timeout: float = READ_TIMEOUT) -> None:
        self.read_timeout = read_timeout
        self.api_key = "sk-runport-conformance-" + secrets.token_hex(12)
        self.body_marker = message_marker()
        """What a protocol writes in the provider's error messages (a caller may see it)."""
        self.body_canary = body_canary()
        """What the suite plants in error bodies beside that message (a caller may not)."""
        self.model = MODEL

    @property
    def scenario(self) -> Scenario:
        raise ConformanceUsageError(
            f"a {self.protocol or 'black-box'} upstream has no scenario "
            '(only protocol = "scenario" does)'
        )

    @property
    def base_url(self) -> str:
        raise ConformanceUsageError(
            f"a {self.protocol or 'black-box'} upstream has no base_url "
            "(only a protocol served over HTTP has one)"
        )

    @property
    def secrets(self) -> tuple[str, ...]:
        """What must never appear in events, errors, receipts or logs (law 10). These are the
        API key and the body canary, which the upstream plants in error bodies beside the
        provider's message."""
        return (self.api_key, self.body_canary)

    def close(self) -> None:
        """Release what the upstream holds (nothing, unless it is a server)."""


class BlackBoxUpstream(Upstream):
    """For ``protocol = None``: the suite scripts nothing, the adapter talks to whatever it
    talks to (``sample_requests()`` choose the requests)."""

    protocol = None


class ScenarioUpstream(Upstream):
    """For ``protocol = "scenario"`` (an ``in_process`` protocol): ``scenario`` holds one
    turn per planned call."""

    def __init__(
        self,
        plan: Sequence[Case],
        *,
        read_timeout: float = READ_TIMEOUT,
        protocol: str | WireProtocol = "scenario",
    ) -> None:
        super().__init__(read_timeout=read_timeout)
        wire = _protocol(protocol)
        if not wire.in_process:
            raise ConformanceUsageError(f"{wire.name!r} is served over HTTP: use ScriptedUpstream")
        self.protocol = wire.name
        context = WireContext(model=self.model, marker=self.body_marker)
        turns = [scenario_turn(wire, wire.played(case), context) for case in plan]
        self._scenario = parse_scenario(
            {"api_version": "runport.mock/v1", "id": "runport-conformance", "turns": turns},
            source="<runport.conformance runport-conformance>",
        )

    @property
    def scenario(self) -> Scenario:
        return self._scenario


# --------------------------------------------------------------------------------------------
# The loopback server
# --------------------------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request the upstream answered, and how the exchange ended."""

    number: int
    path: str
    headers: dict[str, str]
    body: Any
    stream: bool
    case: str
    played: Case | None = None
    wire: WireRequest | None = None
    """The request as the protocol saw it."""
    """The case (as the protocol plays it) this request was answered with."""
    source: Case | None = None
    """That case as the plan gave it (before the protocol played it)."""
    seen_at_start: int = 0
    """Progress events the caller had seen when this request began (composites, law 7)."""
    ended_early: bool = False
    client_closed: bool | None = None
    held_at: tuple[int, int] | None = None
    """When a frame's event was held back: (progress events owed, progress events seen)."""
    stall_outlived: float | None = None
    """Set (to the seconds held) when a stall outlived the client's read timeout by far."""
    refusal: str | None = None
    """Why the upstream answered with the API's own HTTP 400 (a rule the API enforces)."""
    protocol_error: str | None = None
    """The traceback of the ``WireProtocol`` when rendering this answer raised."""
    read_on: str | None = None
    """Set when an unstreamed answer past the bound was held back and the client, having
    read past the bound, neither failed nor closed (law 8: it measures only what it buffered)."""
    promptness: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    finished: threading.Event = field(default_factory=threading.Event)

    def settle(self, timeout: float = CLOSE_BOUND + 1) -> RecordedRequest:
        """Wait until the upstream is done with this exchange (it may still be watching
        whether the client closes), so what it noted can be read."""
        self.finished.wait(timeout)
        return self


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # The thread smoke connects eight clients at once: the default backlog of 5 would drop
    # SYNs, and a dropped SYN is a one-second retry — longer than the read timeout.
    request_queue_size = 64
    upstream: ScriptedUpstream


class ScriptedUpstream(Upstream):
    """For a protocol served over HTTP (a built-in one's name — ``"openai-chat"`` is the
    default — or any ``WireProtocol``): a loopback server speaking it.

    Request *n* is answered with ``plan[n]`` (a request past the plan gets HTTP 400, so a
    retrying adapter fails visibly rather than hanging). ``requests`` records each one. With
    ``per_call`` (the suite sets it for a composite adapter), every request made during the
    suite's *n*-th call is answered with ``plan[n]``: each member a composite tries sees the
    same turn.
    ``pacing="every"`` withholds every frame until the previous frame's event reached the
    sink; ``"last"`` paces only the last progress frame, so a reset never races the client's
    reads; ``"off"`` paces nothing (concurrent calls share the upstream, not a pacer).
    ``read_timeout`` is ``STALL_READ_TIMEOUT`` when the plan stalls, else ``READ_TIMEOUT``.
    """

    def __init__(
        self,
        plan: Sequence[Case],
        *,
        pacing: Pacing = "last",
        read_timeout: float | None = None,
        protocol: str | WireProtocol = "openai-chat",
    ) -> None:
        wire = _protocol(protocol)
        if wire.in_process:
            raise ConformanceUsageError(
                f"{wire.name!r} is played in-process, not served: use ScenarioUpstream"
            )
        if read_timeout is None:
            stalls = any(case.fault is not None and case.fault.kind == "stall" for case in plan)
            read_timeout = STALL_READ_TIMEOUT if stalls else READ_TIMEOUT
        super().__init__(read_timeout=read_timeout)
        self.protocol = wire.name
        self.wire = wire
        """The ``WireProtocol`` the upstream speaks."""
        self.cases = tuple(plan)
        """The plan as given; ``plan`` holds each case as the protocol plays it."""
        self.plan = tuple(wire.played(case) for case in plan)
        self.pacing = pacing
        self.pacer = Pacer()
        self.requests: list[RecordedRequest] = []
        self.per_call = False
        self.shared = False
        """The suite sets it for concurrent calls, which get no pacing and no per-call turns."""
        self._calls = -1
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._closing = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.upstream = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="runport-conformance-upstream",
            daemon=True,
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.wire.root}"

    def close(self) -> None:
        self._closing.set()
        self.pacer.end()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def planned(self, before: int) -> Case | None:
        """The case (as given) the next request is answered with, ``before`` requests in."""
        with self._lock:
            turn = max(self._calls, 0) if self.per_call else before
        return self.cases[turn] if turn < len(self.cases) else None

    def begin_call(self) -> None:
        """The suite starts its next call (the turn ``per_call`` plays moves on)."""
        with self._lock:
            self._calls += 1

    # -- used by the handler ------------------------------------------------------------------

    def _begin(
        self, sock: socket.socket, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[RecordedRequest, WireRequest, Case | None, str | None]:
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        parts = urlsplit(path)
        request = WireRequest(
            method="POST",
            path=parts.path,
            query=parse_qs(parts.query),
            headers=headers,
            body=raw,
            json=body,
        )
        route = self.wire.recognise(request)
        refused = route if isinstance(route, str) else None
        stream = route is True
        with self._lock:
            self._sockets.add(sock)
            number = len(self.requests)
            turn = max(self._calls, 0) if self.per_call else number
            case = self.plan[turn] if turn < len(self.plan) else None
            record = RecordedRequest(
                number, path, headers, body, stream, case.name if case else "<past the plan>", case
            )
            record.source = self.cases[turn] if case is not None else None
            record.wire = request
            record.seen_at_start = self.pacer.seen
            self.requests.append(record)
        return record, request, case, refused

    def _done(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the suite's output is its report, not an access log."""

    def handle(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.handle_one_request()
        self.close_connection = True

    def do_GET(self) -> None:
        self._plain(404, b'{"error": {"message": "not found", "type": "invalid_request_error"}}')

    def do_POST(self) -> None:
        upstream = self.server.upstream
        raw = self._read_body()
        headers = {key.lower(): value for key, value in self.headers.items()}
        record, request, case, refused = upstream._begin(self.connection, self.path, headers, raw)
        try:
            if case is None:
                self._plain(400, b'{"error": {"message": "no scripted response left"}}')
                return
            if refused is not None:
                self._plain(404, json.dumps({"error": {"message": refused}}).encode())
                return
            wire = upstream.wire
            rule = wire.check(request, case)
            if rule is not None:
                record.refusal = rule.reason
                self._plain(rule.status, rule.body, wire.body_content_type)
                return
            garbage = case.fault is not None and case.fault.kind == "garbage"
            marker = upstream.body_canary if garbage else upstream.body_marker
            context = WireContext(model=upstream.model, marker=marker, request=request)
            render = stream_response if record.stream else body_response
            planted: Any = Planted(wire, upstream.body_canary)
            try:
                response = render(planted, case, context)
            except Exception as error:  # the protocol's own code: say so, do not hang up
                record.protocol_error = "".join(traceback.format_exception(error)).rstrip()
                self._plain(500, b'{"error": {"message": "the WireProtocol failed"}}')
                return
            self._play(upstream, record, response, prefix_only=case.prefix_only)
        finally:
            upstream._done(self.connection)
            record.finished.set()

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _plain(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        self.connection.sendall(head.encode("latin-1") + body)

    def _write(self, frame: SentFrame, chunked: bool) -> None:
        pieces = [frame.data]
        if frame.split:
            cut = next((i + 1 for i, byte in enumerate(frame.data) if byte >= 0xC0), None)
            if cut is not None:
                pieces = [frame.data[:cut], frame.data[cut:]]
        for piece in pieces:
            if chunked:
                piece = f"{len(piece):x}\r\n".encode("ascii") + piece + b"\r\n"
            self.connection.sendall(piece)

    def _play(
        self,
        upstream: ScriptedUpstream,
        record: RecordedRequest,
        response: Response,
        *,
        prefix_only: bool,
    ) -> None:
        lines = [f"HTTP/1.1 {response.status} {HTTPStatus(response.status).phrase}"]
        lines += [f"{name}: {value}" for name, value in response.headers]
        if response.chunked:
            lines.append("Transfer-Encoding: chunked")
        else:
            lines.append(f"Content-Length: {response.declared}")
        lines.append("Connection: close")
        self.connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        paced_call = record.stream and upstream.pacing != "off" and upstream.pacer.armed
        pacer = upstream.pacer if paced_call else None
        paced = upstream.pacing == "every"
        most = max((frame.owes for frame in response.frames), default=0)
        last_progress = next(
            (i for i, frame in enumerate(response.frames) if most and frame.owes == most), -1
        )
        owed = 0
        frames = response.frames
        for position, frame in enumerate(frames):
            if pacer is not None and pacer.ended:
                self._await_close(record)
                return
            self._write(frame, response.chunked)
            if position == response.hold_after and self._held_until_closed(record, response):
                return
            if pacer is None or frame.owes <= owed:
                continue
            owed = frame.owes
            if not (paced or position == last_progress):
                continue
            outcome = pacer.wait_for(owed)
            if outcome == "timeout":
                record.held_at = record.held_at or (owed, pacer.seen)
                record.promptness.append(
                    f"the upstream sent frame {position} (progress event #{owed}) and held the "
                    f"next back, but {PACING_BOUND:g} s later the sink had seen only "
                    f"{pacer.seen} progress event(s): the adapter held event #{owed} back "
                    "waiting for more input (it buffers); the rest was released so the call "
                    "could end"
                )
                paced = False
                pacer = None
            elif outcome == "ended":
                if pacer.seen < owed and not pacer.stopped and not prefix_only:
                    record.held_at = record.held_at or (owed, pacer.seen)
                    record.withheld.append(
                        f"the upstream sent frame {position} (progress event #{owed}) and held "
                        f"the next back, but the call ended with the sink having seen "
                        f"{pacer.seen} progress event(s): the adapter waited for more input "
                        f"before delivering event #{owed} (it buffers)"
                    )
                if position < len(frames) - 1:
                    self._await_close(record)
                    return
        if response.ending == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            return
        if response.ending == "stall":
            driven = upstream.pacer.armed
            bound = upstream.read_timeout + STALL_SLACK if driven else STALL_BOUND
            self._await_close(record, bound=bound, early=False)
            if record.client_closed is False and driven:
                record.stall_outlived = bound
            return
        if response.chunked:
            self.connection.sendall(b"0\r\n\r\n")

    def _held_until_closed(self, record: RecordedRequest, response: Response) -> bool:
        """Hold the rest of an oversize body until the client closes: ``True`` when it did
        (nothing more is sent), else the upstream notes it read on, and sends the rest so
        the call can end."""
        assert response.hold_after is not None
        sent = sum(len(frame.data) for frame in response.frames[: response.hold_after + 1])
        self._await_close(record, bound=PACING_BOUND)
        if record.client_closed:
            return True
        self.connection.settimeout(None)
        record.client_closed = None
        record.ended_early = False
        record.read_on = (
            f"the upstream sent {sent} of the body's {response.declared} bytes and held the "
            f"rest back; {PACING_BOUND:g} s later the client had neither failed nor closed "
            "the connection: it waited for the rest "
            "(the bound is checked on what was read, before a body is buffered or parsed)"
        )
        return False

    def _await_close(
        self, record: RecordedRequest, *, bound: float = CLOSE_BOUND, early: bool = True
    ) -> None:
        """Hold the connection until the client closes it (or ``bound`` passes)."""
        record.ended_early = early
        self.connection.settimeout(bound)
        try:
            while self.connection.recv(65536):
                pass
        except TimeoutError:
            record.client_closed = False
            return
        except OSError:
            pass
        record.client_closed = True
