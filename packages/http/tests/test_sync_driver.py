"""``HTTPAdapter`` against a loopback server that misbehaves on cue: every upstream fault class
the layer answers for, each ending in one coded failure with the upstream closed."""

from __future__ import annotations

import gzip
import logging
import threading
import time
import tracemalloc
from collections.abc import Iterator

import httpx
import pytest

from runport.conformance.loopback import (
    SSE,
    Connection,
    FaultServer,
    endless,
    fixed_reply,
    head,
    sse_reply,
)
from runport.contracts import Complete, Delta, ErrorCode, ExecutionRequest, Failed, StreamEvent
from runport.http import (
    MAX_RETRY_AFTER_MS,
    PROVIDER_TEXT_LIMIT,
    AsyncHTTPAdapter,
    HTTPAdapter,
    ResponseDecoder,
)
from runport.ports import PortError

from .http_faults import API_KEY, LineCodec, LineDecoder, frames, make_request

READ_TIMEOUT = 0.5


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(5.0, read=READ_TIMEOUT)) as shared:
        yield shared


def adapter_for(server: FaultServer, client: httpx.Client, **kwargs: object) -> HTTPAdapter:
    return HTTPAdapter(LineCodec(), base_url=server.base_url, http_client=client, **kwargs)  # type: ignore[arg-type]


def streamed(adapter: HTTPAdapter, **policy: object) -> tuple[list[StreamEvent], PortError | None]:
    events: list[StreamEvent] = []
    failure: PortError | None = None
    try:
        adapter.execute_streaming(make_request(**policy), events.append)
    except PortError as error:
        failure = error
    assert sum(isinstance(event, Failed | Complete) for event in events) == 1
    terminal = events[-1]
    if failure is None:
        assert isinstance(terminal, Complete)
    else:
        assert isinstance(terminal, Failed)
        assert terminal.code == failure.code
        assert terminal.message == failure.message
    return events, failure


def test_streamed_and_unstreamed_calls_give_equal_receipts(client: httpx.Client) -> None:
    whole = b'{"text": "Hello"}'
    server = FaultServer(
        [
            sse_reply(frames("Hel", "lo")),
            fixed_reply("200 OK", {"Content-Type": "application/json"}, whole),
        ]
    )
    try:
        adapter = adapter_for(server, client)
        events, error = streamed(adapter)
        assert error is None
        assert [e.text for e in events if isinstance(e, Delta)] == ["Hel", "lo"]
        complete = events[-1]
        assert isinstance(complete, Complete)
        assert adapter.execute(make_request()) == complete.receipt
    finally:
        server.close()


def test_consecutive_calls_reuse_one_pooled_keep_alive_connection(client: httpx.Client) -> None:
    server = FaultServer([sse_reply(frames("a", "b"))])
    try:
        adapter = adapter_for(server, client)
        for _ in range(4):
            assert streamed(adapter)[1] is None
            assert adapter.execute(make_request()).text == "ab"
        assert len(server.requests) == 8
        assert server.accepted == 1
    finally:
        server.close()


def test_responses_are_asked_for_without_compression(client: httpx.Client) -> None:
    server = FaultServer([sse_reply(frames("a"))])
    try:
        streamed(adapter_for(server, client))
        assert b"\r\naccept-encoding: identity\r\n" in server.requests[0].lower()
    finally:
        server.close()


@pytest.mark.parametrize(
    ("piece", "every"),
    [(b"x", 0.1), (b": ping\n\n", 0.1)],
    ids=["one byte at a time", "keep-alive comments"],
)
def test_a_trickle_cannot_outlive_the_deadline(
    client: httpx.Client, piece: bytes, every: float
) -> None:
    server = FaultServer([endless(piece, every)])
    try:
        _, error = streamed(adapter_for(server, client, deadline=1.0))
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_TIMEOUT
        assert "deadline (1 s)" in error.message
        assert server.wait_closed()
    finally:
        server.close()


def test_the_requests_deadline_applies_when_smaller(client: httpx.Client) -> None:
    server = FaultServer([endless(b": ping\n\n", 0.1)])
    try:
        adapter = adapter_for(server, client, deadline=60.0)
        with pytest.raises(PortError) as raised:
            adapter.execute(make_request(deadline_s=0.8))
        assert raised.value.code == ErrorCode.RUNTIME_TIMEOUT
        assert "deadline (0.8 s)" in raised.value.message
    finally:
        server.close()


def test_a_gzip_bomb_costs_no_more_than_the_bound(client: httpx.Client) -> None:
    bomb = gzip.compress(b"data: " + b"0" * (64 * 1024 * 1024) + b"\n\n", 9)
    assert len(bomb) < 100 * 1024
    server = FaultServer(
        [
            fixed_reply(
                "200 OK", {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, bomb
            )
        ]
    )
    try:
        adapter = adapter_for(server, client, max_response_bytes=1024 * 1024)
        tracemalloc.start()
        try:
            _, error = streamed(adapter)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE
        assert peak < 8 * 1024 * 1024
    finally:
        server.close()


def test_a_compressed_body_inside_the_bound_is_read(client: httpx.Client) -> None:
    body = gzip.compress(b"".join(frames("zip", "ped")))
    server = FaultServer(
        [
            fixed_reply(
                "200 OK", {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, body
            )
        ]
    )
    try:
        events, error = streamed(adapter_for(server, client))
        assert error is None
        assert [e.text for e in events if isinstance(e, Delta)] == ["zip", "ped"]
    finally:
        server.close()


def test_an_encoding_not_asked_for_is_refused(client: httpx.Client) -> None:
    server = FaultServer([fixed_reply("200 OK", {**SSE, "Content-Encoding": "br"}, b"\x00")])
    try:
        _, error = streamed(adapter_for(server, client))
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    finally:
        server.close()


HOSTILE_REASON = "Bad key " + API_KEY + " \x1b[31mRED\x1b[0m " + "A" * 60_000


def _hostile_status(connection: Connection, request: bytes) -> bool:
    body = (
        b'{"error": {"message": "Invalid model \\u001b[2J name; key sk-live-abcdef123456 '
        + b"z" * 5000
        + b'"}}'
    )
    status = "401 " + HOSTILE_REASON
    connection.write(
        head(status, {"Content-Type": "application/json", "Content-Length": str(len(body))}) + body
    )
    return False


def test_the_reason_phrase_never_reaches_a_message(client: httpx.Client) -> None:
    server = FaultServer([_hostile_status])
    try:
        _, error = streamed(adapter_for(server, client))
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_PERMANENT
        message = error.message
        assert message.startswith("the upstream refused the request (HTTP 401 Unauthorized): ")
        assert "Invalid model" in message
        assert API_KEY not in message
        assert "sk-live-abcdef123456" not in message
        assert "Bad key" not in message
        assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F for ch in message)
        assert len(message) < 100 + PROVIDER_TEXT_LIMIT
    finally:
        server.close()


def test_an_error_body_that_is_not_structured_adds_nothing(client: httpx.Client) -> None:
    server = FaultServer([fixed_reply("500 Oops", {"Content-Type": "text/html"}, b"<h1>boom</h1>")])
    try:
        _, error = streamed(adapter_for(server, client))
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_UNAVAILABLE
        assert error.message == "the upstream failed (HTTP 500 Internal Server Error)"
    finally:
        server.close()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1e308", MAX_RETRY_AFTER_MS),
        ("inf", MAX_RETRY_AFTER_MS),
        ("99999999999999999999999", MAX_RETRY_AFTER_MS),
        ("Fri, 31 Dec 9999 23:59:59 GMT", MAX_RETRY_AFTER_MS),
        ("2", 2000),
        ("nan", None),
        ("soon", None),
    ],
)
def test_retry_after_of_any_size_is_a_bounded_hint(
    client: httpx.Client, value: str, expected: int | None
) -> None:
    server = FaultServer([fixed_reply("429 Too Many Requests", {"Retry-After": value}, b"")])
    try:
        _, error = streamed(adapter_for(server, client))
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_RATE_LIMITED
        assert error.retry_after_ms == expected
    finally:
        server.close()


def test_a_body_that_ends_before_its_marker_is_truncation(client: httpx.Client) -> None:
    server = FaultServer([sse_reply(frames("partial", end=False))])
    try:
        events, error = streamed(adapter_for(server, client))
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED
        assert [e.text for e in events if isinstance(e, Delta)] == ["partial"]
    finally:
        server.close()


class _SoftEndDecoder(LineDecoder):
    """``data: [END]`` makes the answer whole but, unlike ``LineDecoder``'s, says the rest of
    the body still matters (as a Gemini ``finishReason`` does: usage may follow)."""

    def feed(self, data: bytes) -> list[StreamEvent]:
        events = super().feed(data)
        self.finished = False
        return events


class _SoftEndCodec(LineCodec):
    def decoder(
        self, request: ExecutionRequest, *, stream: bool, media_type: str
    ) -> ResponseDecoder:
        return _SoftEndDecoder(request, sse=True)


def test_a_transport_failure_after_the_answer_was_complete_is_a_warning_and_keeps_it(
    client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    def answer_then_stall(connection: Connection, request: bytes) -> bool:
        connection.write(head("200 OK", SSE))
        connection.chunk(b"data: whole\n\ndata: [END]\n\n")
        time.sleep(READ_TIMEOUT * 3)  # past the read timeout
        return False

    server = FaultServer([answer_then_stall])
    try:
        adapter = HTTPAdapter(_SoftEndCodec(), base_url=server.base_url, http_client=client)
        with caplog.at_level(logging.WARNING, logger="runport"):
            events, error = streamed(adapter)
        assert error is None
        assert [e.text for e in events if isinstance(e, Delta)] == ["whole"]
        [record] = [r for r in caplog.records if r.name == "runport.http"]
        assert record.levelno == logging.WARNING
        assert record.getMessage().endswith(
            "the transport failed after the answer was complete (ReadTimeout); keeping it"
        )
    finally:
        server.close()


def test_the_bound_counts_body_bytes_as_read(client: httpx.Client) -> None:
    server = FaultServer([endless(b"data: " + b"x" * 1000 + b"\n\n", 0.0)])
    try:
        _, error = streamed(adapter_for(server, client, max_response_bytes=50_000))
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE
        assert server.wait_closed()
    finally:
        server.close()


def test_a_sink_that_raises_closes_the_upstream_and_leaves_the_adapter_usable(
    client: httpx.Client,
) -> None:
    class Stop(Exception):
        pass

    def sink(event: StreamEvent) -> None:
        raise Stop

    server = FaultServer([endless(b"data: tick\n\n", 0.05), sse_reply(frames("again"))])
    try:
        adapter = adapter_for(server, client)
        with pytest.raises(Stop):
            adapter.execute_streaming(make_request(), sink)
        assert server.wait_closed(0)
        assert adapter.execute(make_request()).text == "again"
    finally:
        server.close()


class KeylessLineCodec(LineCodec):
    """The line protocol with no key of its own: credentials come in the base URL alone."""

    secrets = ()


def test_the_repr_shows_no_credentials() -> None:
    adapter = HTTPAdapter(
        KeylessLineCodec(),
        base_url="https://user:hunter2@example.test/v1?api-key=SECRET&api-version=1",
    )
    try:
        text = repr(adapter)
        assert "hunter2" not in text
        assert "SECRET" not in text
        assert "api-version=1" in text
    finally:
        adapter.close()


def test_a_sync_sink_that_blocks_past_the_deadline_fails_the_call_at_its_next_read(
    client: httpx.Client,
) -> None:
    """A sync sink's time is the caller's own (docs/async.md): nothing interrupts it, and the
    deadline is met as the next read returns."""
    server = FaultServer([endless(b"data: x\n\n", 0.05)])
    events: list[StreamEvent] = []
    held = threading.Event()

    def sink(event: StreamEvent) -> None:
        events.append(event)
        if len(events) == 1:
            held.wait(2.0)  # twice the deadline, on the caller's thread

    try:
        with pytest.raises(PortError) as raised:
            adapter_for(server, client, deadline=1.0).execute_streaming(make_request(), sink)
        assert raised.value.code == ErrorCode.RUNTIME_TIMEOUT
        assert {event.kind for event in events[:-1]} == {"Delta"}
        assert isinstance(events[-1], Failed)
        assert server.wait_closed()
    finally:
        server.close()


@pytest.mark.parametrize("driver", [HTTPAdapter, AsyncHTTPAdapter])
@pytest.mark.parametrize("userinfo", ["user:hunter2@", "user@", ":hunter2@"])
def test_user_info_in_the_base_url_beside_a_key_is_a_configuration_error(
    driver: type[HTTPAdapter] | type[AsyncHTTPAdapter], userinfo: str
) -> None:
    # httpx would send the URL's user-info as Basic auth in place of the key's header
    with pytest.raises(ValueError, match="user-info") as refused:
        driver(LineCodec(), base_url=f"https://{userinfo}example.test/v1")
    assert "hunter2" not in str(refused.value)
    assert API_KEY not in str(refused.value)
