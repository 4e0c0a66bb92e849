"""``AsyncHTTPAdapter``: the same faults give the same codes and messages as the sync driver;
cancellation at any point closes the upstream; concurrent streams on one adapter stay apart."""

from __future__ import annotations

import asyncio
import gzip
import time
from collections.abc import Awaitable, Callable

import httpx
import pytest

from runport.conformance.loopback import (
    SSE,
    Connection,
    FaultServer,
    Handler,
    endless,
    fixed_reply,
    head,
    sse_reply,
)
from runport.contracts import Complete, Delta, Failed, StreamEvent
from runport.http import AsyncHTTPAdapter, HTTPAdapter
from runport.ports import PortError

from .http_faults import LineCodec, echo, frames, make_request

TIMEOUT = httpx.Timeout(5.0, read=0.5)

Outcome = tuple[list[StreamEvent], tuple[str, str, int | None] | None]


def sync_outcome(server: FaultServer, **kwargs: object) -> Outcome:
    with httpx.Client(timeout=TIMEOUT) as client:
        adapter = HTTPAdapter(LineCodec(), base_url=server.base_url, http_client=client, **kwargs)  # type: ignore[arg-type]
        events: list[StreamEvent] = []
        try:
            adapter.execute_streaming(make_request(), events.append)
        except PortError as error:
            return events, (error.code, error.message, error.retry_after_ms)
        return events, None


def async_outcome(server: FaultServer, **kwargs: object) -> Outcome:
    async def main() -> Outcome:
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            adapter = AsyncHTTPAdapter(
                LineCodec(),
                base_url=server.base_url,
                http_client=client,
                **kwargs,  # type: ignore[arg-type]
            )
            events: list[StreamEvent] = []
            try:
                await adapter.execute_streaming(make_request(), events.append)
            except PortError as error:
                return events, (error.code, error.message, error.retry_after_ms)
            return events, None

    return asyncio.run(main())


def _silent(connection: Connection, request: bytes) -> bool:
    connection.write(head("200 OK", SSE))
    return False  # and then nothing, until the client goes


def _reason_injection(connection: Connection, request: bytes) -> bool:
    body = b'{"error": {"message": "no such model \\u001b[31m sk-abcdef1234567890"}}'
    status = "404 gone sk-zzzzzzzzzzzzzzzzzz \x1b[2J" + "B" * 5000
    connection.write(head(status, {"Content-Length": str(len(body))}) + body)
    return False


FAULTS: dict[str, tuple[Callable[[], Handler], dict[str, object]]] = {
    "complete": (lambda: sse_reply(frames("a", "b")), {}),
    "truncated": (lambda: sse_reply(frames("a", end=False)), {}),
    "trickle": (lambda: endless(b"x", 0.1), {"deadline": 0.8}),
    "ping stall": (lambda: endless(b": ping\n\n", 0.1), {"deadline": 0.8}),
    "silence": (lambda: _silent, {}),
    "too large": (
        lambda: endless(b"data: " + b"x" * 500 + b"\n\n", 0.0),
        {"max_response_bytes": 20_000},
    ),
    "gzip bomb": (
        lambda: fixed_reply(
            "200 OK",
            {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"},
            gzip.compress(b"data: " + b"0" * (16 * 1024 * 1024) + b"\n\n"),
        ),
        {"max_response_bytes": 100_000},
    ),
    "reason phrase": (lambda: _reason_injection, {}),
    "retry-after overflow": (lambda: fixed_reply("429 Slow", {"Retry-After": "1e308"}, b""), {}),
    "503 with a date": (
        lambda: fixed_reply("503 X", {"Retry-After": "Mon, 01 Jan 2001 00:00:00 GMT"}, b""),
        {},
    ),
    "not sse": (lambda: fixed_reply("200 OK", {"Content-Type": "application/json"}, b"{bad"), {}),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_faults_give_the_same_codes_and_messages_async(fault: str) -> None:
    make_handler, kwargs = FAULTS[fault]
    outcomes = []
    for run in (sync_outcome, async_outcome):
        server = FaultServer([make_handler()])
        try:
            outcomes.append(run(server, **kwargs))
            assert server.wait_closed() or fault == "complete"
        finally:
            server.close()
    (sync_events, sync_error), (async_events, async_error) = outcomes
    assert async_error == sync_error
    assert [e for e in async_events if not isinstance(e, Complete)] == [
        e for e in sync_events if not isinstance(e, Complete)
    ]
    terminals = [e for e in async_events if isinstance(e, Complete | Failed)]
    assert len(terminals) == 1
    assert terminals[0] is async_events[-1]


FRAMES = 5


@pytest.mark.parametrize("position", range(FRAMES + 1))
def test_cancellation_at_every_event_position_closes_the_upstream(position: int) -> None:
    """The stream sends FRAMES deltas, then keep-alives forever; the caller's task is
    cancelled as event ``position`` arrives (``FRAMES``: while waiting for more)."""
    server = FaultServer([_deltas_then_pings(FRAMES), sse_reply(frames("again"))])

    async def main() -> None:
        adapter = AsyncHTTPAdapter(LineCodec(), base_url=server.base_url, timeout=TIMEOUT)
        async with adapter:
            seen: list[StreamEvent] = []
            reached = asyncio.Event()

            async def sink(event: StreamEvent) -> None:
                seen.append(event)
                if len(seen) == position + 1:
                    reached.set()
                    await asyncio.sleep(10)  # cancelled here, inside the sink's await

            task = asyncio.create_task(adapter.execute_streaming(make_request(), sink))
            if position < FRAMES:
                await reached.wait()
            else:
                while len(seen) < FRAMES:
                    await asyncio.sleep(0.01)
            count = len(seen)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert len(seen) == count  # nothing after the cancellation
            assert not any(isinstance(e, Complete | Failed) for e in seen)
            assert await asyncio.to_thread(server.wait_closed, 0)
            receipt = await adapter.execute(make_request())
            assert receipt.text == "again"

    try:
        asyncio.run(main())
    finally:
        server.close()


def _deltas_then_pings(count: int) -> Handler:
    def handler(connection: Connection, request: bytes) -> bool:
        connection.write(head("200 OK", SSE))
        for index in range(count):
            connection.chunk(f"data: d{index}\n\n".encode())
        while connection.chunk(b": ping\n\n"):
            time.sleep(0.05)
        return False

    return handler


def test_two_hundred_concurrent_streams_on_one_adapter_never_mix() -> None:
    server = FaultServer([echo])

    async def one(adapter: AsyncHTTPAdapter, name: str) -> list[str]:
        texts: list[str] = []

        async def sink(event: StreamEvent) -> None:
            if isinstance(event, Delta):
                texts.append(event.text)
            await asyncio.sleep(0)

        receipt = await adapter.execute_streaming(make_request(name), sink)
        assert receipt.text == "".join(texts)
        return texts

    async def main() -> list[list[str]]:
        async with AsyncHTTPAdapter(LineCodec(), base_url=server.base_url, timeout=10.0) as adapter:
            return await asyncio.gather(*(one(adapter, f"s{n}") for n in range(200)))

    try:
        results = asyncio.run(main())
    finally:
        server.close()
    for n, texts in enumerate(results):
        assert texts == [f"s{n}/{index}" for index in range(5)]


def test_an_awaitable_sink_is_awaited_before_the_next_event() -> None:
    server = FaultServer([sse_reply(frames("a", "b", "c"))])
    log: list[str] = []

    def sink(event: StreamEvent) -> Awaitable[None]:
        log.append(f"got {event.kind}")

        async def slow() -> None:
            await asyncio.sleep(0.01)
            log.append("done")

        return slow()

    async def main() -> None:
        async with AsyncHTTPAdapter(LineCodec(), base_url=server.base_url) as adapter:
            await adapter.execute_streaming(make_request(), sink)

    try:
        asyncio.run(main())
    finally:
        server.close()
    assert log == ["got Delta", "done"] * 3 + ["got Complete", "done"]


def test_the_adapter_binds_to_no_loop_and_serves_two() -> None:
    server = FaultServer([sse_reply(frames("x"))])
    adapter = AsyncHTTPAdapter(LineCodec(), base_url=server.base_url)

    async def call() -> str | None:
        async with adapter:  # releases this loop's client; the adapter stays usable
            return (await adapter.execute(make_request())).text

    try:
        assert asyncio.run(call()) == "x"
        assert asyncio.run(call()) == "x"  # a second loop, its own client
    finally:
        server.close()


# --- a sink that never returns (issue 22, item 10) -----------------------------------------

HOLD_GUARD = 10.0
"""Turns a call that would hang for ever into a test failure; never a timing assertion."""


def _held(
    server: FaultServer, holds: Callable[[StreamEvent], bool], deadline: float = 1.0
) -> Outcome:
    """One streamed call at ``deadline`` whose sink awaits, for each event ``holds``
    picks, an ``asyncio.Event`` that is never set."""

    async def main() -> Outcome:
        never = asyncio.Event()
        events: list[StreamEvent] = []

        async def sink(event: StreamEvent) -> None:
            events.append(event)
            if holds(event):
                await never.wait()

        async with AsyncHTTPAdapter(
            LineCodec(), base_url=server.base_url, timeout=TIMEOUT, deadline=deadline
        ) as adapter:
            try:
                async with asyncio.timeout(HOLD_GUARD):
                    await adapter.execute_streaming(make_request(), sink)
            except PortError as error:
                return events, (error.code, error.message, error.retry_after_ms)
            return events, None

    try:
        return asyncio.run(main())
    finally:
        server.close()


def test_a_sink_that_never_returns_cannot_hold_the_call_past_its_deadline() -> None:
    server = FaultServer([endless(b"data: x\n\n", 0.05)])
    events, error = _held(server, lambda event: True)
    assert error is not None
    assert error[:2] == ("TQX_RUNTIME_TIMEOUT", "the call passed its deadline (1 s)")
    assert server.wait_closed()
    assert [event.kind for event in events] == ["Delta", "Failed"]
    assert isinstance(events[-1], Failed)
    assert events[-1].code == "TQX_RUNTIME_TIMEOUT"


def test_a_sink_that_never_returns_from_complete_still_gets_the_receipt() -> None:
    server = FaultServer([sse_reply(frames("a", "b"))])
    # A deadline the whole answer arrives well within, even on a loaded machine.
    events, error = _held(server, lambda event: isinstance(event, Complete), deadline=2.0)
    assert error is None
    assert [event.kind for event in events] == ["Delta", "Delta", "Complete"]
    assert isinstance(events[-1], Complete)
    assert events[-1].receipt.text == "ab"


def test_a_sink_that_never_returns_from_failed_still_gets_the_error() -> None:
    server = FaultServer([fixed_reply("503 Busy", {}, b"")])
    events, error = _held(server, lambda event: True, deadline=2.0)
    assert error is not None
    assert error[0] == "TQX_RUNTIME_UNAVAILABLE"
    assert [event.kind for event in events] == ["Failed"]


def test_a_sinks_own_timeout_error_still_propagates() -> None:
    server = FaultServer([sse_reply(frames("a"))])

    async def main() -> None:
        async def sink(event: StreamEvent) -> None:
            if isinstance(event, Complete):
                raise TimeoutError("the sink's own")

        async with AsyncHTTPAdapter(LineCodec(), base_url=server.base_url) as adapter:
            with pytest.raises(TimeoutError, match="the sink's own"):
                await adapter.execute_streaming(make_request(), sink)

    try:
        asyncio.run(main())
    finally:
        server.close()
