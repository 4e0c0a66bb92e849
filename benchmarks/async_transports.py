"""Async transports side by side: runport on httpx and on aiohttp, bare aiohttp, raw sockets.

The loopback server is ``async_streams.py``'s (another process, pinned to CPU 1 when there are
two: every ``POST …/chat/completions`` answered with one write of an OpenAI-compatible SSE
stream rendered once, HTTP/1.1 keep-alive, chunked). Five clients read the same bytes in this
process (pinned to CPU 0), one after another, contenders interleaved round by round:

- ``runport/httpx``    ``AsyncOpenAIChatAdapter.execute_streaming`` on the pool the adapter
                       makes itself (the default: sharded ``httpx.AsyncClient``s, httpcore under);
- ``runport/aiohttp``  the same adapter with ``transport="aiohttp"``: the same shards and limits,
                       each shard's connections runport's own ``AiohttpTransport``'s (aiohttp's
                       pool and parser under httpx's API; the ``aiohttp`` extra);
- ``runport/httpx-aiohttp``  the same adapter given ``http_client=httpx.AsyncClient(transport=
                       httpx_aiohttp.AiohttpTransport(...))``: the third-party shim (one
                       ``aiohttp.TCPConnector``, no limit), as adr/0068 measured it;
- ``runport/h11``      the same adapter given ``http_client=httpx.AsyncClient(transport=
                       H11Transport())``: ``h11_transport.py``'s transport of the benchmarks'
                       own, asyncio streams with h11 for framing and a list per origin for a
                       pool (no bound, as the aiohttp contenders have none);
- ``aiohttp``          a bare ``aiohttp.ClientSession`` loop: ``post`` + ``content.iter_any()`` +
                       split on blank lines + ``json.loads`` of every frame;
- ``raw``              asyncio streams on plain sockets (``asyncio.open_connection``): the request
                       written as bytes, the chunked body read with ``readuntil``/``readexactly``,
                       the same split and ``json.loads``; connections kept in a list and reused.
                       The floor: no HTTP library at all.

Reported per shape (``--shapes``, default 500 streams × 200 deltas and 5,000 × 20): the
client's CPU time (``time.process_time``) and wall time per delta, median and range over
``--rounds``, each as a ratio to ``raw``; then memory per stream (tracemalloc's peak over one
concurrent round of each shape, divided by its streams: a separate pass, as tracing slows
what it watches), and memory per open stream (a second server, "held", answers each request
with the head and the first delta and then holds the stream open: tracemalloc's current size
once every stream has read its first delta, divided by the streams open; runport/httpx opens
at most ``DEFAULT_ASYNC_LIMITS.max_connections`` at once, the others every one).
``--profile NAME`` runs one round of the first shape for that contender under cProfile, after
a whole round unprofiled, and prints own time summed by package and the top functions.
The load average is printed before and after. Not run in CI.

Install the aiohttp contenders with the ``bench`` dependency group (no package needs them):

    .venv/bin/uv sync --all-packages --group bench
    .venv/bin/python benchmarks/async_transports.py [--rounds 3] [--shapes 500x200 5000x20]
    .venv/bin/python benchmarks/async_transports.py --profile runport/httpx
    .venv/bin/python benchmarks/async_transports.py --quick    # 20 × 20, one round: a smoke run
    .venv/bin/python benchmarks/async_transports.py --memory-only --only runport/h11
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
import resource
import socket
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Protocol

import httpx

try:
    import aiohttp
    import httpx_aiohttp
except ImportError as missing:  # not a dependency of any package: the bench group has them
    raise SystemExit(
        f"{missing.name} is not installed: .venv/bin/uv sync --all-packages --group bench"
    ) from None
from async_streams import body, start_server  # the sibling benchmark's loopback server
from h11_transport import H11Transport  # the benchmarks' own h11-on-asyncio-streams transport

from runport.contracts import CompiledInteraction, ExecutionRequest, Message, StreamEvent
from runport.http import DEFAULT_ASYNC_LIMITS
from runport.openai import AsyncOpenAIChatAdapter

TIMEOUT = 600  # the memory pass runs under tracemalloc, several times slower: no call may time out
PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "Go."}], "stream": True}
REQUEST = ExecutionRequest(
    interaction=CompiledInteraction(
        compiler="bench/0",
        contract_id="bench",
        contract_version="1.0.0",
        messages=[Message(role="user", content="Go.")],
        output_schema={"type": "string"},
    )
)


def _nothing() -> None:
    pass


class Contender(Protocol):
    name: str
    first: Callable[[], None]  # called once per stream, when its first text delta is read
    most_open: int | None  # streams its pool opens at once, if bounded

    async def stream(self) -> int: ...

    async def close(self) -> None: ...


def count_frames(frames: Sequence[bytes]) -> int:
    """Text deltas among complete SSE frames, each decoded with ``json.loads``."""
    count = 0
    for frame in frames:
        if frame.startswith(b"data: ") and frame != b"data: [DONE]":
            for choice in json.loads(frame[6:])["choices"]:
                if choice["delta"].get("content"):
                    count += 1
    return count


class RunportHttpx:
    name = "runport/httpx"
    first = staticmethod(_nothing)
    most_open: int | None = DEFAULT_ASYNC_LIMITS.max_connections

    def __init__(self, base_url: str) -> None:
        self.adapter = AsyncOpenAIChatAdapter(base_url=base_url, model="m", timeout=TIMEOUT)

    async def stream(self) -> int:
        count = 0

        def sink(event: StreamEvent) -> None:
            nonlocal count
            if event.kind == "Delta":
                if not count:
                    self.first()
                count += 1

        await self.adapter.execute_streaming(REQUEST, sink)
        return count

    async def close(self) -> None:
        await self.adapter.aclose()


class RunportAiohttp(RunportHttpx):
    name = "runport/aiohttp"

    def __init__(self, base_url: str) -> None:
        self.adapter = AsyncOpenAIChatAdapter(
            base_url=base_url, model="m", timeout=TIMEOUT, transport="aiohttp"
        )


class RunportHttpxAiohttp(RunportHttpx):
    name = "runport/httpx-aiohttp"
    most_open = None

    def __init__(self, base_url: str) -> None:
        # The transport's own limit would be httpx's (a hundred); the session is made on first
        # use, inside the running loop, with no limit, as the bare aiohttp contender's is.
        transport = httpx_aiohttp.AiohttpTransport(
            client=lambda: aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        )
        self.client = httpx.AsyncClient(transport=transport, timeout=TIMEOUT)
        self.adapter = AsyncOpenAIChatAdapter(
            base_url=base_url, model="m", timeout=TIMEOUT, http_client=self.client
        )

    async def close(self) -> None:
        await self.client.aclose()


class RunportH11(RunportHttpxAiohttp):
    name = "runport/h11"

    def __init__(self, base_url: str) -> None:
        # no bound on the connections, as the aiohttp contenders have none
        self.client = httpx.AsyncClient(transport=H11Transport(), timeout=TIMEOUT)
        self.adapter = AsyncOpenAIChatAdapter(
            base_url=base_url, model="m", timeout=TIMEOUT, http_client=self.client
        )


class BareAiohttp:
    name = "aiohttp"
    first = staticmethod(_nothing)
    most_open = None

    def __init__(self, base_url: str) -> None:
        self.url = base_url + "/chat/completions"
        self.session: aiohttp.ClientSession | None = None

    async def stream(self) -> int:
        if self.session is None:
            self.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),
                timeout=aiohttp.ClientTimeout(total=TIMEOUT),
            )
        count = 0
        held = b""
        async with self.session.post(self.url, json=PAYLOAD) as response:
            async for data in response.content.iter_any():
                *frames, held = (held + data).split(b"\n\n")
                if not count:
                    count = count_frames(frames)
                    if count:
                        self.first()
                else:
                    count += count_frames(frames)
        return count

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()


class RawSockets:
    name = "raw"
    first = staticmethod(_nothing)
    most_open = None

    def __init__(self, base_url: str) -> None:
        host_port = base_url.removeprefix("http://").split("/", 1)[0]
        host, _, port = host_port.partition(":")
        self.host, self.port = host, int(port)
        body = json.dumps(PAYLOAD).encode()
        self.request = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
            b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
            % (host_port.encode(), len(body), body)
        )
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def stream(self) -> int:
        if self.idle:
            reader, writer = self.idle.pop()
        else:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            writer.write(self.request)
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
                raise RuntimeError(f"unexpected response head: {head[:80]!r}")
            count = 0
            held = b""
            while True:
                size = int((await reader.readuntil(b"\r\n"))[:-2], 16)
                if not size:
                    await reader.readexactly(2)
                    break
                data = (await reader.readexactly(size + 2))[:-2]
                *frames, held = (held + data).split(b"\n\n")
                if not count:
                    count = count_frames(frames)
                    if count:
                        self.first()
                else:
                    count += count_frames(frames)
        except BaseException:
            writer.close()  # a stream stopped part-way leaves its connection unusable
            raise
        self.idle.append((reader, writer))
        return count

    async def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


CONTENDERS = (
    RunportHttpx,
    RunportAiohttp,
    RunportHttpxAiohttp,
    RunportH11,
    BareAiohttp,
    RawSockets,
)
NAMES = [contender.name for contender in CONTENDERS]


async def concurrent(contender: Contender, streams: int, deltas: int) -> tuple[float, float]:
    """Wall time and this process's CPU time for ``streams`` concurrent streams."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    counts = await asyncio.gather(*(contender.stream() for _ in range(streams)))
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    if any(count != deltas for count in counts):
        raise RuntimeError(f"{contender.name} read {set(counts)} deltas, not {deltas}")
    return elapsed, used


async def memory(contender: Contender, streams: int, deltas: int) -> float:
    await concurrent(contender, min(streams, 50), deltas)  # warm the pool and the imports
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    await asyncio.gather(*(contender.stream() for _ in range(streams)))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / streams


class Held(asyncio.Protocol):
    """One connection of the held server: every request is answered with the response head
    and its first chunk (the role frame and one text delta), and then nothing, so the
    stream stays open until the client closes it."""

    def __init__(self, opening: bytes) -> None:
        self.opening = opening
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.transport is not None and b"\r\n\r\n" in data:
            self.transport.write(self.opening)


async def serve_held(port: int) -> None:
    frames = body(1).split(b"\n\n")
    first = b"\n\n".join(frames[:2]) + b"\n\n"  # the role frame and one text delta
    opening = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
        b"%x\r\n%s\r\n" % (len(first), first)
    )
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Held(opening), "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


def start_held_server(cpu: int | None) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, __file__, "--serve-held", str(port)]
    if cpu is not None:
        command += ["--server-cpu", str(cpu)]
    process = subprocess.Popen(command)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return process, f"http://127.0.0.1:{port}/v1"


async def held_memory(contender: Contender, streams: int) -> tuple[float, int]:
    """Traced memory per open stream: ``streams`` streams (or as many as the contender's pool
    opens at once) each past its first delta and waiting for more; bytes ÷ streams open."""
    target = min(streams, contender.most_open or streams)
    opened = 0
    everyone = asyncio.Event()

    def arrived() -> None:
        nonlocal opened
        opened += 1
        if opened == target:
            everyone.set()

    contender.first = arrived
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tasks = [asyncio.ensure_future(contender.stream()) for _ in range(target)]
    try:
        await asyncio.wait_for(everyone.wait(), TIMEOUT)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        contender.first = _nothing
    return held / target, target


async def open_memories(url: str, counts: list[int]) -> None:
    print("\nMemory per open stream: streams each past their first delta, held open by the")
    print("server; tracemalloc's current size ÷ streams open (KiB)\n")
    print("| client | " + " | ".join(f"{count} open" for count in counts) + " |")
    print("|---|" + "---|" * len(counts))
    for make in CONTENDERS:
        cells = []
        for count in counts:
            contender = make(url)
            try:
                per_stream, target = await held_memory(contender, count)
            finally:
                await contender.close()
            bounded = f" ({target} open: its pool's limit)" if target < count else ""
            cells.append(f"{per_stream / 1024:.1f}{bounded}")
        print(f"| {make.name} | " + " | ".join(cells) + " |")


def spread(values: list[float], scale: float) -> str:
    low, middle, high = min(values), statistics.median(values), max(values)
    return f"{middle * scale:.2f} ({low * scale:.2f}–{high * scale:.2f})"


def descriptors_enough(streams: int) -> None:
    """Raise this process's open-file limit to its ceiling, and say so when the contenders'
    kept connections (each keeps its pool open across rounds) may still not fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    kept = sum(min(streams, make.most_open or streams) for make in CONTENDERS)
    if kept + 200 > hard:
        print(
            f"warning: the contenders may keep {kept} connections open at once, and this "
            f"process may open {hard} files: run fewer with --only if a round fails with "
            "'Too many open files'"
        )


async def measure(base_url: str, streams: int, deltas: int, rounds: int) -> None:
    descriptors_enough(streams)
    contenders: list[Contender] = [make(base_url) for make in CONTENDERS]
    walls: dict[str, list[float]] = {name: [] for name in NAMES}
    cpus: dict[str, list[float]] = {name: [] for name in NAMES}
    try:
        for contender in contenders:  # warm-up: connections, imports, caches
            await concurrent(contender, min(streams, 50), deltas)
        for _ in range(rounds):
            for contender in contenders:
                elapsed, used = await concurrent(contender, streams, deltas)
                walls[contender.name].append(elapsed)
                cpus[contender.name].append(used)
    finally:
        for contender in contenders:
            await contender.close()
    total = streams * deltas
    cpu_floor = statistics.median(cpus["raw"])
    wall_floor = statistics.median(walls["raw"])
    print(f"\n{streams} concurrent streams × {deltas} deltas, {rounds} round(s), median (range)\n")
    print("| client | CPU µs per delta | CPU ÷ raw | wall µs per delta | wall ÷ raw |")
    print("|---|---|---|---|---|")
    for name in NAMES:
        cpu_ratio = [value / cpu_floor for value in cpus[name]]
        wall_ratio = [value / wall_floor for value in walls[name]]
        print(
            f"| {name} | {spread(cpus[name], 1e6 / total)} | {spread(cpu_ratio, 1)}× | "
            f"{spread(walls[name], 1e6 / total)} | {spread(wall_ratio, 1)}× |"
        )


async def memories(urls: list[tuple[str, int, int]]) -> None:
    print("\nMemory per stream: tracemalloc's peak over one concurrent round ÷ streams (KiB)\n")
    print("| client | " + " | ".join(f"{s} × {d}" for _, s, d in urls) + " |")
    print("|---|" + "---|" * len(urls))
    for make in CONTENDERS:
        cells = []
        for url, streams, deltas in urls:
            contender = make(url)
            try:
                cells.append(f"{await memory(contender, streams, deltas) / 1024:.1f}")
            finally:
                await contender.close()
        print(f"| {make.name} | " + " | ".join(cells) + " |")


def package(filename: str) -> str:
    """Who a profiled function belongs to: a package under site-packages, runport's own, the
    standard library's module, or the built-ins (C functions, listed by cProfile as ``~``)."""
    if filename == "~":
        return "built-ins (C)"
    parts = filename.replace("\\", "/").split("/")
    if "packages" in parts and "runport" in parts:  # runport's own, by workspace package
        return "runport." + parts[parts.index("packages") + 1]
    if "runport" in parts:
        return "runport"
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].removesuffix(".py")
    if "benchmarks" in parts:
        return "the benchmark's own loop"
    if len(parts) < 2:  # <frozen …>, <string>
        return filename
    return "stdlib " + (parts[-2] if parts[-2] == "asyncio" else parts[-1].removesuffix(".py"))


async def profile(base_url: str, name: str, streams: int, deltas: int, top: int) -> None:
    make = dict(zip(NAMES, CONTENDERS, strict=True))[name]
    contender = make(base_url)
    try:
        await concurrent(contender, streams, deltas)  # a whole round first: every connection open
        profiler = cProfile.Profile()
        profiler.enable()
        await concurrent(contender, streams, deltas)
        profiler.disable()
    finally:
        await contender.close()
    stats = pstats.Stats(profiler)
    raw = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in raw.values())
    by_package: dict[str, float] = {}
    for (filename, _, _), entry in raw.items():
        key = package(filename)
        by_package[key] = by_package.get(key, 0.0) + entry[2]
    print(f"\n{name}, {streams} × {deltas} under cProfile: own time by package ({total:.2f} s)\n")
    for key, seconds in sorted(by_package.items(), key=lambda item: -item[1])[:10]:
        print(f"  {seconds / total:6.1%}  {key}")
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    lines = text.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    print(f"\ntop {top} functions by own time\n")
    print("\n".join(lines[start:]).rstrip())


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def keep(names: list[str]) -> None:
    """Run only the contenders ``names`` and the floor."""
    global CONTENDERS, NAMES
    CONTENDERS = tuple(c for c in CONTENDERS if c.name in names or c.name == "raw")
    NAMES = [contender.name for contender in CONTENDERS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["500x200", "5000x20"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    parser.add_argument("--profile", choices=NAMES, help="profile one round of this contender")
    parser.add_argument("--top", type=int, default=15, help="functions listed by --profile")
    parser.add_argument("--quick", action="store_true", help="20 × 20, one round: a smoke run")
    parser.add_argument("--no-pin", action="store_true", help="let both processes run on any CPU")
    parser.add_argument(
        "--memory-only", action="store_true", help="only the two memory passes, no timed rounds"
    )
    parser.add_argument(
        "--only", nargs="+", choices=NAMES, help="these contenders (and raw, the floor) only"
    )
    parser.add_argument("--serve-held", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--server-cpu", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_held:
        if args.server_cpu is not None:
            os.sched_setaffinity(0, {args.server_cpu})
        asyncio.run(serve_held(args.serve_held))
        return
    if args.quick:
        args.shapes, args.rounds = ["20x20"], 1
    if args.only:
        keep(args.only)
    shapes = [tuple(int(part) for part in shape.split("x")) for shape in args.shapes]
    pin = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    servers = [start_server(deltas, 1 if pin else None) for _, deltas in shapes]
    servers.append(start_held_server(1 if pin else None))
    if pin:
        os.sched_setaffinity(0, {0})
    print(load() + ("; server on CPU 1, client on CPU 0" if pin else "; no CPU pinning"))
    try:
        urls = [(url, s, d) for (s, d), (_, url) in zip(shapes, servers, strict=False)]
        if args.profile:
            url, streams, deltas = urls[0]
            asyncio.run(profile(url, args.profile, streams, deltas, args.top))
        else:
            if not args.memory_only:
                for url, streams, deltas in urls:
                    asyncio.run(measure(url, streams, deltas, args.rounds))
            if not args.no_memory:
                asyncio.run(memories(urls))
                asyncio.run(open_memories(servers[-1][1], [streams for streams, _ in shapes]))
    finally:
        for process, _ in servers:
            process.terminate()
            process.wait(10)
    print("\n" + load())


if __name__ == "__main__":
    sys.exit(main())
