"""Many concurrent streams on the event loop: runport's async adapter, a floor, the official SDK.

A loopback server in another process (asyncio, HTTP/1.1 keep-alive, chunked bodies) answers
every ``POST …/chat/completions`` with the same stream: a role chunk, ``--deltas`` text deltas,
a finish chunk, a usage chunk and ``[DONE]``. Three clients read it, one after another, each
with a pool large enough for every stream at once:

- ``runport``  ``AsyncOpenAIChatAdapter.execute_streaming`` with a counting sink, on the pool
               the adapter makes itself (sharded: no client holds more than fifty streams);
- ``floor``    ``httpx.AsyncClient.stream`` + ``aiter_bytes`` + split on blank lines +
               ``json.loads`` of every frame: the least any consumer that decodes every frame
               can do;
- ``sdk``      ``openai.AsyncOpenAI().chat.completions.create(stream=True)`` accumulating text.

Reported: wall time for ``--streams`` concurrent streams (median of ``--rounds``, contenders
interleaved per round), time to first delta over ``--sequential`` calls made one at a time
(median), and memory per open stream (tracemalloc's peak during a concurrent round, divided by
the number of streams; a separate pass, as tracing slows what it watches). Ratios are printed
against the floor and between runport and the SDK. Not run in CI.

    .venv/bin/python benchmarks/async_streams.py [--streams 500] [--deltas 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable

import httpx
import openai

from runport.contracts import CompiledInteraction, ExecutionRequest, Message, StreamEvent
from runport.openai import AsyncOpenAIChatAdapter

ENVELOPE = (
    '{"id":"chatcmpl-AbCdEf0123456789","object":"chat.completion.chunk","created":1733000000,'
    '"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":'
)
WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]
LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
TIMEOUT = 600  # the memory pass runs under tracemalloc, several times slower: no call may time out


def body(deltas: int) -> bytes:
    def frame(choices: str) -> bytes:
        return b"data: " + (ENVELOPE + choices + "}").encode() + b"\n\n"

    frames = [frame('[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]')]
    for number in range(deltas):
        content = json.dumps(WORDS[number % len(WORDS)])
        frames.append(
            frame('[{"index":0,"delta":{"content":' + content + '},"finish_reason":null}]')
        )
    frames.append(frame('[{"index":0,"delta":{},"finish_reason":"stop"}]'))
    frames.append(frame('[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}'))
    frames.append(b"data: [DONE]\n\n")
    return b"".join(frames)


# --- the server (run in its own process) ---------------------------------------------------


def response(deltas: int) -> bytes:
    """The whole response, rendered once: head, the body in 4 KiB chunks, the last chunk."""
    stream = body(deltas)
    pieces = [stream[start : start + 4096] for start in range(0, len(stream), 4096)]
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
    )
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces)
    return head + chunks + b"0\r\n\r\n"


class Answer(asyncio.Protocol):
    """One connection: every complete request (head plus ``Content-Length`` bytes) is answered
    with one write of the pre-rendered response, so the server's share of the two cores is
    as small as a server's can be (the kernel cuts the write into segments)."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.held = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.held += data
        while True:
            end = self.held.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in self.held[:end].split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.held) < end + 4 + length:
                return
            self.held = self.held[end + 4 + length :]
            assert self.transport is not None
            self.transport.write(self.answer)


async def serve(port: int, deltas: int) -> None:
    answer = response(deltas)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Answer(answer), "127.0.0.1", port, backlog=2048)
    async with server:
        await server.serve_forever()


def start_server(deltas: int, cpu: int | None) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, __file__, "--serve", str(port), str(deltas)]
    if cpu is not None:
        command += ["--server-cpu", str(cpu)]
    process = subprocess.Popen(command)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return process, f"http://127.0.0.1:{port}/v1"


# --- the contenders ------------------------------------------------------------------------

REQUEST = ExecutionRequest(
    interaction=CompiledInteraction(
        compiler="bench/0",
        contract_id="bench",
        contract_version="1.0.0",
        messages=[Message(role="user", content="Go.")],
        output_schema={"type": "string"},
    )
)


class Runport:
    name = "runport"

    def __init__(self, base_url: str, pools: int) -> None:
        adapters = [
            AsyncOpenAIChatAdapter(base_url=base_url, model="m", timeout=TIMEOUT)
            for _ in range(pools)
        ]
        self.adapter = itertools.cycle(adapters).__next__

    async def stream(self, first: Callable[[], None]) -> int:
        count = 0

        def sink(event: StreamEvent) -> None:
            nonlocal count
            if event.kind == "Delta":
                if not count:
                    first()
                count += 1

        await self.adapter().execute_streaming(REQUEST, sink)
        return count


class Floor:
    name = "floor"

    def __init__(self, base_url: str, pools: int) -> None:
        clients = [httpx.AsyncClient(limits=LIMITS, timeout=TIMEOUT) for _ in range(pools)]
        self.client = itertools.cycle(clients).__next__
        self.url = base_url + "/chat/completions"

    async def stream(self, first: Callable[[], None]) -> int:
        count = 0
        held = b""
        payload = {"model": "m", "messages": [{"role": "user", "content": "Go."}], "stream": True}
        async with self.client().stream("POST", self.url, json=payload) as response:
            async for data in response.aiter_bytes():
                *frames, held = (held + data).split(b"\n\n")
                for frame in frames:
                    if frame.startswith(b"data: ") and frame != b"data: [DONE]":
                        chunk = json.loads(frame[6:])
                        for choice in chunk["choices"]:
                            if choice["delta"].get("content"):
                                if not count:
                                    first()
                                count += 1
        return count


class SDK:
    name = "sdk"

    def __init__(self, base_url: str, pools: int) -> None:
        clients = [
            openai.AsyncOpenAI(
                base_url=base_url,
                api_key="sk-bench",
                max_retries=0,
                http_client=httpx.AsyncClient(limits=LIMITS, timeout=TIMEOUT),
            )
            for _ in range(pools)
        ]
        self.client = itertools.cycle(clients).__next__

    async def stream(self, first: Callable[[], None]) -> int:
        count = 0
        parts: list[str] = []
        stream = await self.client().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Go."}], stream=True
        )
        async for chunk in stream:
            for choice in chunk.choices:
                if choice.delta.content:
                    if not count:
                        first()
                    count += 1
                    parts.append(choice.delta.content)
        return count


def _nothing() -> None:
    pass


async def concurrent(
    contender: Runport | Floor | SDK, streams: int, deltas: int
) -> tuple[float, float]:
    """Wall time and the client process's CPU time for ``streams`` concurrent streams."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    counts = await asyncio.gather(*(contender.stream(_nothing) for _ in range(streams)))
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    assert all(count == deltas for count in counts), (contender.name, set(counts))
    return elapsed, used


async def first_delta(contender: Runport | Floor | SDK, calls: int) -> float:
    waits: list[float] = []

    def first() -> None:
        waits.append(time.perf_counter() - start)

    for _ in range(calls):
        start = time.perf_counter()
        await contender.stream(first)
    return statistics.median(waits)


async def memory(contender: Runport | Floor | SDK, streams: int) -> float:
    await contender.stream(_nothing)  # warm the pool and the imports
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    await asyncio.gather(*(contender.stream(_nothing) for _ in range(streams)))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / streams


async def run(base_url: str, args: argparse.Namespace) -> None:
    contenders = [
        Runport(base_url, args.pools),
        Floor(base_url, args.pools),
        SDK(base_url, args.pools),
    ]
    walls: dict[str, list[float]] = {c.name: [] for c in contenders}
    cpus: dict[str, list[float]] = {c.name: [] for c in contenders}
    for contender in contenders:  # warm-up: connections, imports, caches
        await concurrent(contender, min(args.streams, 50), args.deltas)
    for _ in range(args.rounds):
        for contender in contenders:
            elapsed, used = await concurrent(contender, args.streams, args.deltas)
            walls[contender.name].append(elapsed)
            cpus[contender.name].append(used)
    firsts = {c.name: await first_delta(c, args.sequential) for c in contenders}
    memories = {c.name: await memory(c, args.streams) for c in contenders}
    wall = {name: statistics.median(times) for name, times in walls.items()}
    cpu = {name: statistics.median(times) for name, times in cpus.items()}
    pinned = "no CPU pinning" if args.no_pin else "server on CPU 1, client on CPU 0"
    pinned += f"; {args.pools} connection pool(s) per client"
    print(
        f"{args.streams} concurrent streams × {args.deltas} deltas; median of {args.rounds} "
        f"rounds; first delta: median of {args.sequential} sequential calls; {pinned}\n"
    )
    print(
        "| client | wall (s) | ÷ floor | client CPU (s) | CPU µs per delta | CPU ms per stream "
        "| ÷ floor | first delta (ms) | memory per stream (KiB) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    total = args.streams * args.deltas
    for name in ("runport", "floor", "sdk"):
        print(
            f"| {name} | {wall[name]:.2f} | {wall[name] / wall['floor']:.2f}× | {cpu[name]:.2f} | "
            f"{cpu[name] / total * 1e6:.2f} | {cpu[name] / args.streams * 1e3:.2f} | "
            f"{cpu[name] / cpu['floor']:.2f}× | {firsts[name] * 1000:.2f} | "
            f"{memories[name] / 1024:.1f} |"
        )
    print(
        f"\nsdk ÷ runport: {wall['sdk'] / wall['runport']:.1f}× wall time, "
        f"{cpu['sdk'] / cpu['runport']:.1f}× client CPU time"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--deltas", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sequential", type=int, default=200)
    parser.add_argument(
        "--pools",
        type=int,
        default=1,
        help="spread the streams over this many httpx clients per contender (default one)",
    )
    parser.add_argument("--no-pin", action="store_true", help="let both processes run on any CPU")
    parser.add_argument("--serve", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--server-cpu", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        if args.server_cpu is not None:
            os.sched_setaffinity(0, {args.server_cpu})
        asyncio.run(serve(*args.serve))
        return
    pin = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    process, base_url = start_server(args.deltas, 1 if pin else None)
    if pin:
        os.sched_setaffinity(0, {0})
    try:
        asyncio.run(run(base_url, args))
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    main()
