"""Compressed bodies over loopback: every gzip member is read, streamed and unstreamed, by both
drivers, inside ``max_response_bytes``; what cannot be read whole is refused, coded (ADR 0045)."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import tracemalloc
import zlib
from collections.abc import Iterator, Sequence

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance.loopback import Connection, FaultServer, Handler, fixed_reply, head
from runport.contracts import Complete, Delta, ErrorCode, ExecutionRequest, Failed, StreamEvent
from runport.http import AsyncHTTPAdapter, Codec, HTTPAdapter, ResponseDecoder
from runport.ports import PortError

from .http_faults import LineCodec, LineDecoder, frames, make_request

TIMEOUT = httpx.Timeout(5.0, read=2.0)
GZIP_SSE = {
    "Content-Type": "text/event-stream",
    "Content-Encoding": "gzip",
    "Transfer-Encoding": "chunked",
}

Answer = tuple[list[str], str | None, tuple[str, str] | None]
"""The deltas' texts, the receipt's text, and the failure's code and message."""


def members(body: bytes, cuts: Sequence[int]) -> bytes:
    """``body`` as gzip members, one per stretch between the ``cuts``."""
    edges = [0, *sorted(cuts), len(body)]
    return b"".join(gzip.compress(body[a:b]) for a, b in itertools.pairwise(edges))


def pieces(data: bytes, sizes: Sequence[int]) -> Iterator[bytes]:
    """``data`` cut into pieces of ``sizes`` (repeated), the last one holding what is left."""
    start = 0
    for size in itertools.cycle(sizes or [len(data) or 1]):
        if start >= len(data):
            return
        yield data[start : start + size]
        start += size


def chunked(headers: dict[str, str], body: bytes, sizes: Sequence[int] = ()) -> Handler:
    """A chunked response writing ``body`` in pieces of ``sizes``, one chunk each."""

    def handler(connection: Connection, request: bytes) -> bool:
        connection.write(head("200 OK", headers))
        for piece in pieces(body, sizes):
            connection.chunk(piece)
        connection.write(b"0\r\n\r\n")
        return True

    return handler


class _CompleteAtEveryEvent(LineDecoder):
    """Whole after every event, and still reading (a server that sends a finish reason on
    every chunk): the decoder alone cannot tell a body cut short."""

    def feed(self, data: bytes) -> list[StreamEvent]:
        events = super().feed(data)
        if events:
            self.complete = True
        self.finished = False
        return events


class _EagerCodec(LineCodec):
    def decoder(
        self, request: ExecutionRequest, *, stream: bool, media_type: str
    ) -> ResponseDecoder:
        return _CompleteAtEveryEvent(request, sse=True)


def sync_answer(
    server: FaultServer, codec: Codec | None = None, *, stream: bool = True, **kwargs: object
) -> Answer:
    with httpx.Client(timeout=TIMEOUT) as client:
        adapter = HTTPAdapter(
            codec or LineCodec(),
            base_url=server.base_url,
            http_client=client,
            **kwargs,  # type: ignore[arg-type]
        )
        events: list[StreamEvent] = []
        try:
            if stream:
                adapter.execute_streaming(make_request(), events.append)
            else:
                events.append(Complete(receipt=adapter.execute(make_request())))
        except PortError as error:
            return _answer(events, error)
        return _answer(events, None)


def async_answer(
    server: FaultServer, codec: Codec | None = None, *, stream: bool = True, **kwargs: object
) -> Answer:
    async def main() -> Answer:
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            adapter = AsyncHTTPAdapter(
                codec or LineCodec(),
                base_url=server.base_url,
                http_client=client,
                **kwargs,  # type: ignore[arg-type]
            )
            events: list[StreamEvent] = []
            try:
                if stream:
                    await adapter.execute_streaming(make_request(), events.append)
                else:
                    events.append(Complete(receipt=await adapter.execute(make_request())))
            except PortError as error:
                return _answer(events, error)
            return _answer(events, None)

    return asyncio.run(main())


def _answer(events: list[StreamEvent], error: PortError | None) -> Answer:
    texts = [e.text for e in events if isinstance(e, Delta)]
    if error is not None:
        assert not events or isinstance(events[-1], Failed)
        return texts, None, (error.code, error.message)
    terminal = events[-1]
    assert isinstance(terminal, Complete)
    return texts, terminal.receipt.text, None


DRIVERS = {"sync": sync_answer, "async": async_answer}


def answer(driver: str, handler: Handler, **kwargs: object) -> Answer:
    server = FaultServer([handler])
    try:
        return DRIVERS[driver](server, **kwargs)
    finally:
        server.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_streamed_body_in_one_member_per_event_is_read_whole(driver: str) -> None:
    body = b"".join(gzip.compress(frame) for frame in frames("zip", "ped"))
    assert answer(driver, chunked(GZIP_SSE, body)) == (["zip", "ped"], "zipped", None)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_member_boundary_inside_an_event_splits_nothing(driver: str) -> None:
    plain = b"".join(frames("first", "second", "third"))
    cuts = [plain.index(b"rst"), plain.index(b"cond") + 1, plain.index(b"[END") + 2]
    for sizes in ([len(plain) * 2], [1], [7, 3]):
        got = answer(driver, chunked(GZIP_SSE, members(plain, cuts), sizes))
        assert got == (["first", "second", "third"], "firstsecondthird", None)


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_answer_after_the_first_member_is_not_cut_off_when_every_event_completes(
    driver: str,
) -> None:
    """The issue's case: a decoder that counts the answer whole at every event took the first
    member's text for the whole answer."""
    body = members(b"".join(frames("cut ", "short", end=False)), [len(b"data: cut \n\n")])
    got = answer(driver, chunked(GZIP_SSE, body), codec=_EagerCodec())
    assert got == (["cut ", "short"], "cut short", None)


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_unstreamed_body_in_two_members_is_read_whole(driver: str) -> None:
    json_gzip = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    body = members(b'{"text": "two members"}', [11])
    got = answer(driver, fixed_reply("200 OK", json_gzip, body), stream=False)
    assert got == ([], "two members", None)


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_error_body_in_two_members_gives_the_providers_whole_message(driver: str) -> None:
    json_gzip = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    message = b'{"error": {"message": "the model is not served here"}}'
    body = members(message, [20, 40])
    _, _, failure = answer(driver, fixed_reply("400 Bad", json_gzip, body))
    assert failure is not None
    assert failure[0] == ErrorCode.RUNTIME_PERMANENT
    assert failure[1].endswith(": the model is not served here")


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_body_cut_inside_a_member_is_truncation(driver: str) -> None:
    """A JSON answer parses whole though its member lacks the gzip trailer: still refused."""
    json_gzip = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    body = gzip.compress(b'{"text": "whole?"}')[:-8]
    _, text, failure = answer(driver, fixed_reply("200 OK", json_gzip, body), stream=False)
    assert text is None
    assert failure == (
        ErrorCode.RUNTIME_STREAM_TRUNCATED,
        "the upstream's compressed body ended partway through",
    )


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("gzip", gzip.compress(b'{"text": "a"}') + b"not gzip"),
        ("deflate", zlib.compress(b'{"text": "a"}') + zlib.compress(b"more")),
    ],
    ids=["gzip", "deflate"],
)
@pytest.mark.parametrize("driver", DRIVERS)
def test_bytes_after_the_compressed_body_are_refused(
    driver: str, encoding: str, body: bytes
) -> None:
    headers = {"Content-Type": "application/json", "Content-Encoding": encoding}
    _, text, failure = answer(driver, fixed_reply("200 OK", headers, body), stream=False)
    assert text is None
    assert failure is not None
    assert failure[0] == ErrorCode.RUNTIME_INVALID_RESPONSE


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_deflate_body_is_read(driver: str) -> None:
    headers = {"Content-Type": "application/json", "Content-Encoding": "deflate"}
    body = zlib.compress(b'{"text": "deflated"}')
    assert answer(driver, fixed_reply("200 OK", headers, body), stream=False) == (
        [],
        "deflated",
        None,
    )


@pytest.mark.parametrize("driver", DRIVERS)
def test_members_that_each_stay_inside_the_bound_are_counted_together(driver: str) -> None:
    member = gzip.compress(b"data: " + b"0" * (512 * 1024) + b"\n\n", 9)
    body = member * 64  # 32 MiB in all, 1 MiB allowed; each member alone is half of it
    tracemalloc.start()
    try:
        _, _, failure = answer(
            driver, chunked(GZIP_SSE, body, [4096]), max_response_bytes=1024 * 1024
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert failure is not None
    assert failure[0] == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE
    assert peak < 8 * 1024 * 1024


def _empty_members_forever(connection: Connection, request: bytes) -> bool:
    connection.write(head("200 OK", GZIP_SSE))
    burst = gzip.compress(b"") * 500
    while connection.chunk(burst):
        pass
    return False


@pytest.mark.parametrize("driver", DRIVERS)
def test_members_that_produce_nothing_are_bounded_by_their_own_bytes(driver: str) -> None:
    """Output alone never reaches the bound; the compressed bytes do, well before the
    deadline."""
    _, _, failure = answer(
        driver, _empty_members_forever, max_response_bytes=200_000, deadline=30.0
    )
    assert failure is not None
    assert failure[0] == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE


def _mock_answer(driver: str, body: bytes) -> Answer:
    """An answer built from bytes by an ``httpx.MockTransport``: read before the adapter
    sees it, and decoded by httpx, which reads one gzip member only."""

    def reply(request: httpx.Request) -> httpx.Response:
        headers = {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}
        return httpx.Response(200, headers=headers, content=body)

    transport = httpx.MockTransport(reply)
    request = make_request()
    events: list[StreamEvent] = []
    try:
        if driver == "sync":
            with httpx.Client(transport=transport) as client:
                adapter = HTTPAdapter(
                    LineCodec(), base_url="http://127.0.0.1:9/v1", http_client=client
                )
                adapter.execute_streaming(request, events.append)
        else:

            async def main() -> None:
                async with httpx.AsyncClient(transport=transport) as client:
                    adapter = AsyncHTTPAdapter(
                        LineCodec(), base_url="http://127.0.0.1:9/v1", http_client=client
                    )
                    await adapter.execute_streaming(request, events.append)

            asyncio.run(main())
    except PortError as error:
        return _answer(events, error)
    return _answer(events, None)


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_answer_read_before_the_adapter_saw_it_keeps_every_member(driver: str) -> None:
    body = b"".join(gzip.compress(frame) for frame in frames("mock", "ed"))
    assert _mock_answer(driver, body) == (["mock", "ed"], "mocked", None)


# -- any split, any chunking: the answer of the uncompressed body -----------------------------

_WORDS = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=12)


class _Upstream:
    """One server for every example: the body of the moment, compressed or not."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.body = b""
        self.sizes: list[int] = []
        self.server = FaultServer([self._reply])

    def _reply(self, connection: Connection, request: bytes) -> bool:
        return chunked(self.headers, self.body, self.sizes)(connection, request)

    def play(self, headers: dict[str, str], body: bytes, sizes: list[int]) -> None:
        self.headers, self.body, self.sizes = headers, body, sizes


@pytest.fixture(scope="module")
def upstream() -> Iterator[_Upstream]:
    played = _Upstream()
    yield played
    played.server.close()


@settings(max_examples=25, deadline=None)
@given(
    texts=st.lists(_WORDS, min_size=1, max_size=5),
    end=st.booleans(),
    cut_fractions=st.lists(st.floats(0, 1), max_size=6),
    sizes=st.lists(st.integers(1, 64), max_size=4),
)
def test_any_split_into_members_and_any_chunking_gives_the_uncompressed_answer(
    upstream: _Upstream,
    texts: list[str],
    end: bool,
    cut_fractions: list[float],
    sizes: list[int],
) -> None:
    plain = b"".join(frames(*texts, end=end))
    sse = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
    upstream.play(sse, plain, [])
    expected = sync_answer(upstream.server)
    cuts = [round(fraction * len(plain)) for fraction in cut_fractions]
    upstream.play(GZIP_SSE, members(plain, cuts), sizes)
    assert sync_answer(upstream.server) == expected
    assert async_answer(upstream.server) == expected
