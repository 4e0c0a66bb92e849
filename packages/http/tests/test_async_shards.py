"""The pool an async adapter makes for itself: shards of at most ``SHARD_SIZE`` exchanges,
filled first-come, within ``DEFAULT_ASYNC_LIMITS``; every slot given back however a call ends."""

from __future__ import annotations

import asyncio
import json

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance.loopback import Connection, FaultServer, fixed_reply
from runport.contracts import Delta, StreamEvent
from runport.http import DEFAULT_ASYNC_LIMITS, AsyncHTTPAdapter
from runport.http._shards import SHARD_SIZE, Shards
from runport.ports import PortError

from .http_faults import LineCodec, echo, make_request


def _shards_of(adapter: AsyncHTTPAdapter) -> Shards:
    return adapter._own[asyncio.get_running_loop()]


async def _held_burst(
    adapter: AsyncHTTPAdapter, tag: str, calls: int
) -> tuple[list[str], list[int]]:
    """``calls`` streamed calls, each held at its first delta until all have one, so every
    one is in flight at once: their texts, and the shards' in-flight counts at that moment."""
    opened = 0
    everyone = asyncio.Event()
    peak: list[int] = []

    async def one(name: str) -> str:
        first = True

        async def sink(event: StreamEvent) -> None:
            nonlocal opened, first
            if isinstance(event, Delta) and first:
                first = False
                opened += 1
                if opened == calls:
                    peak.extend(_shards_of(adapter).busy)
                    everyone.set()
                await everyone.wait()

        return (await adapter.execute_streaming(make_request(name), sink)).text or ""

    texts = await asyncio.gather(*(one(f"{tag}{n}") for n in range(calls)))
    return texts, peak


def test_calls_beyond_a_shard_spread_over_more_and_all_complete() -> None:
    server = FaultServer([echo])
    calls = 2 * SHARD_SIZE + 20

    async def main() -> tuple[list[str], list[int], list[int]]:
        async with AsyncHTTPAdapter(LineCodec(), base_url=server.base_url, timeout=10.0) as adapter:
            texts, peak = await _held_burst(adapter, "c", calls)
            return texts, peak, _shards_of(adapter).busy

    try:
        texts, peak, after = asyncio.run(main())
    finally:
        server.close()
    assert peak == [SHARD_SIZE, SHARD_SIZE, 20]
    assert after == [0, 0, 0]
    assert texts == ["".join(f"c{n}/{index}" for index in range(5)) for n in range(calls)]


def test_steady_traffic_keeps_its_connections_alive_across_shards() -> None:
    """Two bursts past one shard: the keep-alive allowance goes to the first shards whole, so
    the second burst reuses every connection the first opened."""
    server = FaultServer([echo])
    calls = SHARD_SIZE + 20

    async def main() -> None:
        async with AsyncHTTPAdapter(LineCodec(), base_url=server.base_url, timeout=10.0) as adapter:
            await _held_burst(adapter, "a", calls)
            await _held_burst(adapter, "b", calls)

    try:
        asyncio.run(main())
        assert len(server.requests) == 2 * calls
        assert server.accepted == calls
    finally:
        server.close()


def test_sequential_calls_stay_on_the_first_shard_and_reuse_its_connection() -> None:
    server = FaultServer([echo])

    async def main() -> int:
        async with AsyncHTTPAdapter(LineCodec(), base_url=server.base_url) as adapter:
            for number in range(4):
                assert (await adapter.execute(make_request(f"q{number}"))).text == "".join(
                    f"q{number}/{index}" for index in range(5)
                )
                await adapter.execute_streaming(make_request("s"), lambda event: None)
            return len(_shards_of(adapter).clients)

    try:
        assert asyncio.run(main()) == 1
        assert len(server.requests) == 8
        assert server.accepted == 1
    finally:
        server.close()


def _by_prompt(connection: Connection, request: bytes) -> bool:
    if json.loads(request.partition(b"\r\n\r\n")[2])["prompt"] == "fail":
        return fixed_reply("500 Oops", {"Content-Type": "text/plain"}, b"down")(connection, request)
    return echo(connection, request)


class _SinkBroke(Exception):
    pass


@settings(max_examples=settings.default.max_examples // 4, deadline=None)
@given(st.lists(st.sampled_from(["ok", "fail", "sink", "cancel"]), min_size=1, max_size=70))
def test_every_slot_is_given_back_however_the_call_ends(kinds: list[str]) -> None:
    server = FaultServer([_by_prompt])

    async def one(adapter: AsyncHTTPAdapter, kind: str) -> str:
        def sink(event: StreamEvent) -> None:
            if isinstance(event, Delta) and kind == "sink":
                raise _SinkBroke
            if isinstance(event, Delta) and kind == "cancel":
                task = asyncio.current_task()
                assert task is not None
                task.cancel()

        async def cancellable() -> None:
            await adapter.execute_streaming(make_request(kind), sink)
            await asyncio.sleep(0)  # the cancel asked for by a sink lands here at the latest

        try:
            await asyncio.create_task(cancellable())
        except PortError as error:
            return error.code
        except (_SinkBroke, asyncio.CancelledError) as error:
            return type(error).__name__
        return "ok"

    async def main() -> tuple[list[str], list[int]]:
        async with AsyncHTTPAdapter(LineCodec(), base_url=server.base_url, timeout=10.0) as adapter:
            ends = await asyncio.gather(*(one(adapter, kind) for kind in kinds))
            return ends, _shards_of(adapter).busy

    try:
        ends, busy = asyncio.run(main())
    finally:
        server.close()
    expected = {"ok": "ok", "sink": "_SinkBroke", "cancel": "CancelledError"}
    for kind, end in zip(kinds, ends, strict=True):
        if kind == "fail":
            assert end.startswith("TQX_")
        else:
            assert end == expected[kind]
    assert busy
    assert not any(busy)


def test_aclose_closes_every_shard_and_the_adapter_stays_usable() -> None:
    server = FaultServer([echo])
    calls = SHARD_SIZE + 5

    async def main() -> tuple[list[httpx.AsyncClient], str | None]:
        adapter = AsyncHTTPAdapter(LineCodec(), base_url=server.base_url, timeout=10.0)
        opened = 0
        everyone = asyncio.Event()

        async def sink(event: StreamEvent) -> None:
            nonlocal opened
            if isinstance(event, Delta) and event.text.endswith("/0"):
                opened += 1
                if opened == calls:
                    everyone.set()
                await everyone.wait()

        await asyncio.gather(
            *(adapter.execute_streaming(make_request(f"a{n}"), sink) for n in range(calls))
        )
        clients = _shards_of(adapter).clients
        await adapter.aclose()
        again = (await adapter.execute(make_request("again"))).text
        await adapter.aclose()
        return clients, again

    try:
        clients, again = asyncio.run(main())
    finally:
        server.close()
    assert len(clients) == 2
    assert all(client.is_closed for client in clients)
    assert again == "".join(f"again/{index}" for index in range(5))


@settings(max_examples=settings.default.max_examples // 4, deadline=None)
@given(
    size=st.integers(min_value=1, max_value=400),
    connections=st.integers(min_value=1, max_value=1000),
    kept=st.integers(min_value=0, max_value=1000),
    takes=st.integers(min_value=0, max_value=120),
)
def test_the_shards_together_stay_within_the_limits(
    size: int, connections: int, kept: int, takes: int
) -> None:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=kept)
    shards = Shards(httpx.Timeout(1.0), limits, size)
    taken = [shards.take() for _ in range(takes)]
    opened = [share.max_connections for share in shards.limits]
    alive = [share.max_keepalive_connections for share in shards.limits]
    count = len(shards.clients)
    assert None not in opened
    assert None not in alive
    assert sum(number or 0 for number in opened) <= max(connections, 1)
    assert sum(number or 0 for number in alive) <= kept
    # The allowance goes to the first shards whole: each keeps all it can open until it runs out.
    room = min(size, max(connections, 1))
    assert alive == [max(0, min(room, kept - number * room)) for number in range(count)]
    assert sum(shards.busy) == takes
    if takes and count * size >= takes:
        assert max(shards.busy) <= size  # the pools queue nothing while the shards have room
    for shard in taken:
        shards.give(shard)
    assert not any(shards.busy)


def test_the_default_limits_divide_into_whole_shards() -> None:
    connections = DEFAULT_ASYNC_LIMITS.max_connections
    assert connections is not None
    assert connections % SHARD_SIZE == 0
