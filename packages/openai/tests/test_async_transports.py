"""The async adapter on either transport (``transport="httpx"``, the default, or ``"aiohttp"``):
every hostile upstream ends in the same code on both, with the httpx exception httpx's own
transport raises as its cause; a caller's stop closes the connection it was reading; the pool's
connection limit holds; and the switch is checked where it is given (docs/async.md)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import httpx
import pytest

from runport.conformance.providers import make_request, run_streamed_async
from runport.contracts import Delta, ErrorCode, StreamEvent
from runport.http import TRANSPORT_VARIABLE
from runport.openai import AsyncOpenAIChatAdapter, OpenAIChatAdapter
from runport.ports import PortError

from .openai_upstream import (
    API_KEY,
    Cut,
    LoopbackUpstream,
    Reply,
    Reset,
    Stall,
    finish_chunk,
    sse,
    text_chunk,
)

TRANSPORTS = ["httpx", "aiohttp"]


def aiohttp_maker() -> type:
    """What makes the aiohttp shards' transports, taken from an adapter (the class is
    runport.http's own, in a module of its own)."""
    maker = AsyncOpenAIChatAdapter(
        base_url="http://127.0.0.1:9/v1", model="m", transport="aiohttp"
    )._transport
    assert isinstance(maker, type)
    assert maker.__name__ == "AiohttpTransport"
    return maker


SHORT_READ = httpx.Timeout(5.0, read=0.2)
"""A stall outlasts the read timeout at once; no test asserts on timing."""


@pytest.fixture(scope="module")
def upstream() -> Iterator[LoopbackUpstream]:
    server = LoopbackUpstream()
    yield server
    server.close()


def adapter(base_url: str, transport: str, **options: object) -> AsyncOpenAIChatAdapter:
    return AsyncOpenAIChatAdapter(
        base_url=base_url,
        model="m",
        api_key=API_KEY,
        timeout=SHORT_READ,
        transport=transport,
        **options,  # type: ignore[arg-type]
    )


def failure(
    upstream: LoopbackUpstream, transport: str, reply: Reply
) -> tuple[list[str], PortError]:
    upstream.released.clear()
    upstream.queue(reply)
    outcome = run_streamed_async(adapter(upstream.base_url, transport), make_request())
    upstream.release()
    assert upstream.wait_idle()
    assert outcome.error is not None, f"expected a failure, got {outcome.receipt!r}"
    return outcome.deltas, outcome.error


HOSTILE = {
    "stall-before-any-byte": (Reply([Stall()]), [], ErrorCode.RUNTIME_TIMEOUT, httpx.ReadTimeout),
    "stall-mid-stream": (
        Reply([sse([text_chunk("so far")], done=False), Stall()]),
        ["so far"],
        ErrorCode.RUNTIME_TIMEOUT,
        httpx.ReadTimeout,
    ),
    "cut-mid-stream": (
        Reply([sse([text_chunk("partial")], done=False), Cut()]),
        ["partial"],
        ErrorCode.RUNTIME_UNAVAILABLE,
        httpx.RemoteProtocolError,
    ),
    "reset-after-finish-reason": (
        Reply([sse([text_chunk("done"), finish_chunk()], done=False), Reset()]),
        ["done"],
        ErrorCode.RUNTIME_UNAVAILABLE,
        httpx.TransportError,  # h11 sees a reset as a peer that went away, or a read error
    ),
    "eof-before-the-marker": (
        Reply([sse([text_chunk("Hel")], done=False)]),
        ["Hel"],
        ErrorCode.RUNTIME_STREAM_TRUNCATED,
        type(None),
    ),
    "json-body-shorter-than-declared": (
        Reply(
            [b'{"choices": [', Cut()],
            headers={"Content-Type": "application/json", "Content-Length": "400"},
            framing="close",
        ),
        [],
        ErrorCode.RUNTIME_UNAVAILABLE,
        httpx.RemoteProtocolError,
    ),
    "error-status": (
        Reply.json({"error": {"message": "overloaded"}}, status=503),
        [],
        ErrorCode.RUNTIME_UNAVAILABLE,
        type(None),
    ),
}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_upstream_fails_alike_on_either_transport(
    upstream: LoopbackUpstream, transport: str, name: str
) -> None:
    reply, kept, code, cause = HOSTILE[name]
    deltas, error = failure(upstream, transport, reply)
    assert (deltas, error.code) == (kept, code)
    assert isinstance(error.__cause__, cause), repr(error.__cause__)
    assert API_KEY not in str(error)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_connection_is_a_connect_error_not_a_timeout(transport: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
        outcome = run_streamed_async(adapter(url, transport), make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert isinstance(outcome.error.__cause__, httpx.ConnectError)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_caller_stop_closes_the_connection_and_the_adapter_serves_on(
    upstream: LoopbackUpstream, transport: str
) -> None:
    """The sink raises on the first delta while the upstream still writes: the response is
    closed (the upstream sees its client go), never returned to the pool half read, and the
    next call on the same adapter is answered whole."""
    upstream.released.clear()
    upstream.queue(
        Reply([sse([text_chunk("one")], done=False), Stall(), sse([text_chunk("two")])]),
        Reply([sse([text_chunk("again"), finish_chunk()])]),
    )
    gone = upstream.disconnects
    runport = adapter(upstream.base_url, transport)

    class Stop(Exception):
        pass

    def sink(event: StreamEvent) -> None:
        if isinstance(event, Delta):
            raise Stop

    async def main() -> str:
        try:
            with pytest.raises(Stop):
                await runport.execute_streaming(make_request(), sink)
            await asyncio.sleep(0)  # the loop's turn that closes the socket (call_soon)
            upstream.release()  # the stalled writer writes on, to a closed connection
            assert await asyncio.to_thread(upstream.wait_idle)
            return str((await runport.execute(make_request())).text)
        finally:
            await runport.aclose()

    assert asyncio.run(main()) == "again"
    assert upstream.disconnects == gone + 1


def test_the_aiohttp_pool_holds_its_connection_limit(upstream: LoopbackUpstream) -> None:
    """One connection allowed: while a stream holds it, a second call waits for it and fails
    with the pool's timeout (aiohttp times the wait and the connect as one), as on httpx's own
    pool."""
    upstream.released.clear()
    upstream.queue(Reply([sse([text_chunk("held")], done=False), Stall()]))

    async def main() -> PortError:
        transport = aiohttp_maker()(httpx.Limits(max_connections=1))
        async with httpx.AsyncClient(
            transport=transport, timeout=httpx.Timeout(5.0, connect=0.2, pool=0.2)
        ) as client:
            runport = AsyncOpenAIChatAdapter(
                base_url=upstream.base_url, model="m", api_key=API_KEY, http_client=client
            )
            first = asyncio.ensure_future(runport.execute(make_request()))
            while not upstream.requests or upstream._active == 0:
                await asyncio.sleep(0)  # until the first holds the one connection
            with pytest.raises(PortError) as second:
                await runport.execute(make_request())
            upstream.release()
            with pytest.raises(PortError):
                await first  # released with no marker: truncated
            return second.value

    before = len(upstream.requests)
    error = asyncio.run(main())
    assert error.code == ErrorCode.RUNTIME_TIMEOUT, repr(error.__cause__)
    assert isinstance(error.__cause__, httpx.TimeoutException)
    assert len(upstream.requests) == before + 1  # the second never reached the upstream
    assert upstream.wait_idle()


def test_the_shards_an_adapter_makes_run_on_aiohttp_with_their_share(
    upstream: LoopbackUpstream,
) -> None:
    upstream.queue(Reply([sse([text_chunk("hi"), finish_chunk()])]))
    runport = adapter(upstream.base_url, "aiohttp")

    async def main() -> list[httpx.AsyncBaseTransport]:
        try:
            await runport.execute(make_request())
            return [client._transport for client in runport._shards_here().clients]
        finally:
            await runport.aclose()

    transports = asyncio.run(main())
    assert [type(each) for each in transports] == [aiohttp_maker()]
    assert transports[0]._limits.max_connections == 50  # type: ignore[attr-defined]


def test_the_environment_variable_chooses_the_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TRANSPORT_VARIABLE, "aiohttp")
    runport = AsyncOpenAIChatAdapter(base_url="http://127.0.0.1:9/v1", model="m")
    assert runport._transport is aiohttp_maker()
    monkeypatch.setenv(TRANSPORT_VARIABLE, "curl")
    with pytest.raises(ValueError, match=f"{TRANSPORT_VARIABLE} must be one of httpx, aiohttp"):
        AsyncOpenAIChatAdapter(base_url="http://127.0.0.1:9/v1", model="m")
    # the keyword wins over the variable
    assert (
        AsyncOpenAIChatAdapter(
            base_url="http://127.0.0.1:9/v1", model="m", transport="httpx"
        )._transport
        is None
    )


def test_the_switch_is_refused_where_it_cannot_apply() -> None:
    with pytest.raises(ValueError, match="transport must be one of"):
        AsyncOpenAIChatAdapter(base_url="http://127.0.0.1:9/v1", model="m", transport="h2")
    with pytest.raises(ValueError, match="not both"):
        AsyncOpenAIChatAdapter(
            base_url="http://127.0.0.1:9/v1",
            model="m",
            transport="aiohttp",
            http_client=httpx.AsyncClient(),
        )
    with pytest.raises(ValueError, match="for the async adapters"):
        OpenAIChatAdapter(base_url="http://127.0.0.1:9/v1", model="m", transport="aiohttp")
