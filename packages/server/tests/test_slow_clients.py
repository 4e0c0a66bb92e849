"""Slow and half-sent requests against a real uvicorn on 127.0.0.1, over bare sockets: none of
them holds a connection past its deadline, and many of them do not lock a normal client out.

The deadlines are set small here (a fraction of a second), so nothing waits long; every wait is
bounded, and what is asserted is what happened, never how long it took.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette

from runport.application import async_adapter_factory
from runport.server import create_app, serve_in_background

from .conftest import SCENARIO, PacedUpstream, catalog

STORY = "/v1/contracts/demo.story/executions"
DEADLINE_S = 0.5
"""The head and body deadlines the servers here are given."""
BOUND_S = 10.0
"""How long a test waits, at most, for something that should happen within ``DEADLINE_S``."""


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


@contextlib.contextmanager
def _sockets(url: str, count: int, first_bytes: bytes) -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(_address(url), timeout=BOUND_S)
            if first_bytes:
                sock.sendall(first_bytes)
            opened.append(sock)
        yield opened
    finally:
        for sock in opened:
            sock.close()


def _closed_by_server(sock: socket.socket) -> bytes:
    """Everything the server sent until it closed the connection; fails if it did not close
    it within ``BOUND_S``."""
    received = b""
    sock.settimeout(BOUND_S)
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail(f"the server still held the connection after {BOUND_S} s: {received!r}")
    return received


def _half_head(host: str = "127.0.0.1") -> bytes:
    return f"POST {STORY} HTTP/1.1\r\nHost: {host}\r\nContent-Type: app".encode()


@pytest.fixture
def app() -> Starlette:
    return create_app(catalog(), async_adapter_factory("mock", scenario=SCENARIO))


def test_a_half_sent_request_head_is_closed_after_the_header_timeout(app: Starlette) -> None:
    with (
        serve_in_background(app, header_timeout=DEADLINE_S) as url,
        _sockets(url, 3, _half_head()) as heads,
        _sockets(url, 1, b"") as silent,
    ):
        for sock in [*heads, *silent]:
            assert _closed_by_server(sock) == b""
        with httpx.Client(base_url=url) as http:
            assert http.get("/v1/contracts").status_code == 200


def test_a_head_sent_a_byte_at_a_time_gets_no_more_time(app: Starlette) -> None:
    """The deadline is for the whole head: trickling bytes does not extend it."""
    head = _half_head() + b"lication/json\r\nContent-Length: 2\r\n"
    with (
        serve_in_background(app, header_timeout=DEADLINE_S) as url,
        socket.create_connection(_address(url), timeout=BOUND_S) as sock,
    ):
        started = time.monotonic()
        closed = False
        for byte in head:
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.05)
            if time.monotonic() - started > BOUND_S:
                break
        # the whole head takes seconds to trickle; the server gave up long before
        assert closed or _closed_by_server(sock) == b""


def test_a_body_that_stops_arriving_is_408_and_the_connection_closes() -> None:
    app = create_app(
        catalog(), async_adapter_factory("mock", scenario=SCENARIO), body_timeout=DEADLINE_S
    )
    with (
        serve_in_background(app, header_timeout=BOUND_S) as url,
        socket.create_connection(_address(url), timeout=BOUND_S) as sock,
    ):
        sock.sendall(
            f"POST {STORY} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n".encode()
            + b'{"inputs": '
        )
        answer = _closed_by_server(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in head.lower()
    error = json.loads(body)["error"]
    assert error["code"] == "TQX_DATA_INVALID"
    assert f"did not arrive within {DEADLINE_S:g} s" in error["message"]


def test_the_rest_of_a_refused_body_is_not_waited_for_forever() -> None:
    """A request refused before its body was read (here: too large) is answered at once; a
    client that then keeps the body coming slowly is cut off at the head deadline."""
    small = create_app(
        catalog(), async_adapter_factory("mock", scenario=SCENARIO), max_body_bytes=10
    )
    with (
        serve_in_background(small, header_timeout=DEADLINE_S) as url,
        socket.create_connection(_address(url), timeout=BOUND_S) as sock,
    ):
        sock.sendall(
            f"POST {STORY} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{".encode()
        )
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(65536)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 413 ")
        sent_until = time.monotonic() + BOUND_S
        closed = False
        while time.monotonic() < sent_until:
            try:
                sock.sendall(b" ")
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.05)
        assert closed, "the server kept reading the refused body"


def test_many_half_sent_requests_do_not_lock_out_a_normal_client(app: Starlette) -> None:
    """Three times the connection bound of half-sent heads, with a head deadline far longer
    than the test: the oldest of them make room, so whole requests are still served."""
    with (
        serve_in_background(app, header_timeout=60, max_connections=20) as url,
        _sockets(url, 60, _half_head()) as heads,
        httpx.Client(base_url=url) as http,
    ):
        for _ in range(5):
            response = http.post(STORY, json={"inputs": {"topic": "ships"}})
            assert response.status_code == 200
            assert response.json()["ok"]
        # the newest half-sent heads are still open; the oldest were closed for room
        assert _closed_by_server(heads[0]) == b""
        heads[-1].settimeout(0.05)
        with pytest.raises(TimeoutError):
            heads[-1].recv(1)


def test_past_the_connection_bound_busy_connections_are_kept_and_new_requests_are_503(
    paced: PacedUpstream,
) -> None:
    """Connections being served are never closed for room: a request past the bound is told
    to come back (503), and served once there is room."""
    sse = {"Accept": "text/event-stream"}
    body = {"inputs": {"topic": "ships"}}
    with (
        serve_in_background(create_app(catalog(), paced.adapter), max_connections=3) as url,
        contextlib.ExitStack() as stack,
    ):
        clients = [stack.enter_context(httpx.Client(base_url=url)) for _ in range(4)]
        paced.release(1)
        busy = [
            stack.enter_context(client.stream("POST", STORY, json=body, headers=sse))
            for client in clients[:3]
        ]
        assert [response.status_code for response in busy] == [200, 200, 200]
        refused = clients[3].post(STORY, json=body)
        assert refused.status_code == 503
        paced.release_all()
        for response in busy:
            assert b"event: envelope" in response.read()
        with httpx.Client(base_url=url) as http:
            assert http.post(STORY, json=body).json()["ok"]


@pytest.mark.parametrize(
    ("option", "value"),
    [("header_timeout", 0), ("header_timeout", float("inf")), ("max_connections", 0)],
)
def test_unusable_server_bounds_are_refused(app: Starlette, option: str, value: float) -> None:
    with pytest.raises(ValueError, match=option), serve_in_background(app, **{option: value}):
        pass
