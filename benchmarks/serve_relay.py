"""``runport serve`` relaying an OpenAI-compatible upstream to many chat clients, beside its
relay floor, on one transport or several.

Processes, each started once and kept for every round, all on 127.0.0.1:

- the upstream: ``async_streams.py``'s pre-rendered OpenAI-compatible server (a role chunk,
  ``--deltas`` text deltas, a finish chunk, a usage chunk, ``[DONE]``; one write per
  response), its CPU not counted;
- ``runport/<transport>``: the real app — ``create_app`` from ``runport.server`` on one
  ``AsyncOpenAIChatAdapter`` every request shares, pointed at the upstream, served by
  ``run_server`` (``runport serve``'s uvicorn: the guarded h11 protocol, the request guard);
- ``floor/<transport>``: the minimal relay — a bare Starlette route under stock uvicorn (h11)
  that posts the same upstream request on the same transport, splits the upstream's SSE
  frames, reads each chunk's text with ``json.loads`` and writes it as the UI stream's
  ``text-delta`` frame, framed by the frames runport sends before the first delta and after
  the last (recorded from runport at start: the receipt and the finish are runport's work).
  Its bytes are checked equal to runport's at start, per-stream ids aside.

Each round, a client process (raw asyncio sockets: the clients cost little of the two cores)
opens ``--clients`` connections at the same moment, posts one chat on each — ``POST
/v1/contracts/{id}/chat`` with the AI SDK's default chat transport body — and reads the UI
message stream to its end; every client must get every ``text-delta`` in order and the
``finish`` chunk. Contenders are interleaved round by round after a warm-up round. Reported,
median (min–max) over ``--rounds``: the server process's CPU time per relayed delta
(utime+stime from /proc ÷ clients × deltas), deltas per second of wall time, and the time to
the first ``text-delta`` (p50, p99); then runport ÷ floor per transport, of the medians and
round by round (a round's two ran back to back, so their ratio moves less with the load).

The transport is a parameter (``--transports``); each is one line of ``TRANSPORTS``: what
the floor reads with (an ``httpx.AsyncClient`` factory, or ``None`` for httpx's default pool
sharded as the adapter shards its own) and the adapter's keyword arguments. ``--profile``
runs the runport server of the first transport under cProfile for one round and prints own
time by package and the top functions.

    .venv/bin/uv sync --all-packages --group bench   # for the httpx-aiohttp transport
    .venv/bin/python benchmarks/serve_relay.py [--clients 1000] [--deltas 200] [--rounds 3]
    .venv/bin/python benchmarks/serve_relay.py --transports httpx h11 --rounds 3
    .venv/bin/python benchmarks/serve_relay.py --profile --transports httpx --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import io
import json
import os
import pstats
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from async_streams import start_server  # noqa: E402  the pre-rendered upstream
from h11_transport import H11Transport  # noqa: E402  the benchmarks' own transport
from serve_fanout import (  # noqa: E402  the orchestration both servers' benchmarks share
    _free_port,
    _raise_file_limit,
    _wait_for,
    cpu_seconds,
    percentile,
)

CONTRACT = {
    "api_version": "runport/v1alpha1",
    "id": "bench.story",
    "version": "1.0.0",
    "description": "A story, streamed.",
    "inputs": {"topic": {"schema": {"type": "string", "minLength": 1}, "required": True}},
    "messages": [{"role": "user", "content": "A story about {{ inputs.topic }}"}],
    "output_schema": {"type": "string"},
}
PATH = "/v1/contracts/bench.story/chat"


def chat_body(number: int) -> bytes:
    """The AI SDK default chat transport's body, for chat ``number`` (one run per chat at once)."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "foxes"}]}
    chat = {"id": f"chat-{number}", "trigger": "submit-message", "messageId": None}
    return json.dumps({**chat, "messages": [message]}).encode()


TIMEOUT = 600
SHARD = 50
"""Streams one floor client carries before the next opens, on httpx's default pool (the
adapter's ``SHARD_SIZE``: one httpx pool of hundreds of live streams scans its connections)."""


def _httpx_aiohttp() -> httpx.AsyncClient:
    import aiohttp
    import httpx_aiohttp

    transport = httpx_aiohttp.AiohttpTransport(
        client=lambda: aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    )
    return httpx.AsyncClient(transport=transport, timeout=TIMEOUT)


def _runport_aiohttp() -> httpx.AsyncClient:
    """runport's own aiohttp transport (what ``transport="aiohttp"`` puts under each shard),
    one unbounded pool, so the floor reads the upstream on exactly what runport does."""
    from runport.http._aiohttp import AiohttpTransport

    transport = AiohttpTransport(httpx.Limits(max_connections=None, max_keepalive_connections=None))
    return httpx.AsyncClient(transport=transport, timeout=TIMEOUT)


class Transport(NamedTuple):
    client: Callable[[], httpx.AsyncClient] | None
    """The ``httpx.AsyncClient`` both servers read the upstream with (one per process), or
    ``None``: the adapter's own pool, and for the floor httpx clients of ``SHARD`` streams."""
    options: dict[str, Any]
    """More keyword arguments for ``AsyncOpenAIChatAdapter`` (a transport switch of its own)."""


TRANSPORTS: dict[str, Transport] = {
    "httpx": Transport(None, {}),
    "h11": Transport(lambda: httpx.AsyncClient(transport=H11Transport(), timeout=TIMEOUT), {}),
    "httpx-aiohttp": Transport(_httpx_aiohttp, {}),
    "aiohttp": Transport(_runport_aiohttp, {}),
}


# --- the servers (each run in its own process) ---------------------------------------------


def serve_runport(
    port: int, upstream: str, transport: str, profile: str | None, unfrozen: bool = False
) -> None:
    from runport.core import parse_contract
    from runport.openai import AsyncOpenAIChatAdapter
    from runport.server import create_app, run_server

    chosen = TRANSPORTS[transport]
    client = None if chosen.client is None else chosen.client()
    adapter = AsyncOpenAIChatAdapter(
        base_url=upstream,
        model="m",
        timeout=TIMEOUT,
        response_format_mode="none",
        http_client=client,
        **chosen.options,
    )
    app = create_app([parse_contract(CONTRACT)], adapter)
    # ``unfrozen``: the server as it was before ``run_server`` kept what it loaded out of the
    # cyclic collector's walks (undone once it listens, before any request)
    ready = (lambda url: gc.unfreeze()) if unfrozen else None
    _profiled(profile, lambda: run_server(app, port=port, max_connections=4096, on_ready=ready))


def serve_floor(port: int, upstream: str, transport: str, frames_file: str) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    recorded = json.loads(Path(frames_file).read_text())
    head = [frame.encode() for frame in recorded["head"]]  # each frame without its id: line
    tail = [frame.encode() for frame in recorded["tail"]]
    part = recorded["part"].encode()
    headers = recorded["headers"]
    url = upstream + "/chat/completions"
    chosen = TRANSPORTS[transport]
    single = None if chosen.client is None else chosen.client()
    limits = httpx.Limits(max_connections=SHARD, max_keepalive_connections=SHARD)
    shards: list[list[Any]] = []  # [client, streams in flight]

    def take() -> list[Any]:
        if single is not None:
            return [single, 0]
        for shard in shards:
            if shard[1] < SHARD:
                break
        else:
            shard = [httpx.AsyncClient(limits=limits, timeout=TIMEOUT), 0]
            shards.append(shard)
        shard[1] += 1
        return shard

    async def chat(request: Request) -> StreamingResponse:
        call = json.loads(await request.body())
        topic = "\n".join(part["text"] for part in call["messages"][-1]["parts"])
        payload = {
            "model": "m",
            "messages": [{"role": "user", "content": "A story about " + topic}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        body = json.dumps(payload, separators=(",", ":")).encode()
        run_id = secrets.token_hex(16)
        numbered = f"id: {run_id}:".encode()
        delta = b'\ndata: {"type":"text-delta","id":"' + part + b'","delta":'

        async def stream() -> AsyncIterator[bytes]:
            seq = 0
            for frame in head:
                seq += 1
                yield numbered + str(seq).encode() + b"\n" + frame
            shard = take()
            try:
                async with shard[0].stream(
                    "POST", url, content=body, headers={"Content-Type": "application/json"}
                ) as response:
                    held = b""
                    async for data in response.aiter_raw():
                        *frames, held = (held + data).split(b"\n\n")
                        for frame in frames:
                            if not frame.startswith(b"data: {"):
                                continue  # [DONE]
                            for choice in json.loads(frame[6:])["choices"]:
                                text = choice["delta"].get("content")
                                if text:
                                    seq += 1
                                    yield (
                                        numbered
                                        + str(seq).encode()
                                        + delta
                                        + json.dumps(text, ensure_ascii=False).encode()
                                        + b"}\n\n"
                                    )
            finally:
                shard[1] -= 1
            for frame in tail:
                seq += 1
                yield numbered + str(seq).encode() + b"\n" + frame

        return StreamingResponse(stream(), headers={**headers, "x-runport-run-id": run_id})

    app = Starlette(routes=[Route(PATH, chat, methods=["POST"])])
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, http="h11", log_level="warning", backlog=4096
    )
    uvicorn.Server(config).run()


def _profiled(target: str | None, run: Callable[[], None]) -> None:
    """``run``, under cProfile when ``target`` names a file: the profile is switched on by
    SIGUSR1 and written there by SIGUSR2 (the orchestration profiles one round)."""
    if target is None:
        run()
        return
    profiler = cProfile.Profile()
    signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())

    def write(*_: object) -> None:
        profiler.disable()
        profiler.dump_stats(target)

    signal.signal(signal.SIGUSR2, write)
    run()


# --- the clients (a process of their own) --------------------------------------------------

DELTA = re.compile(rb'\ndata: \{"type":"text-delta","id":"[^"]*","delta":(.*)\}\n\n$')


async def _client(port: int, number: int = 0) -> tuple[float, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = chat_body(number)
    head = (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    writer.write(head + body)
    first = -1.0
    held: list[bytes] = []
    while data := await reader.read(65536):
        held.append(data)
        if first < 0 and b'"text-delta"' in data:
            first = time.perf_counter() - started
    writer.close()
    return first, b"".join(held)


def frames_of(response: bytes) -> tuple[bytes, list[bytes]]:
    """The head and the SSE frames of one whole HTTP/1.1 response, chunked or not."""
    head, _, body = response.partition(b"\r\n\r\n")
    if b"chunked" in head.lower():
        joined, rest = [], body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if not size:
                break
            joined.append(rest[:size])
            rest = rest[size + 2 :]
        body = b"".join(joined)
    # ``: ping`` heartbeats are comments, not events.
    return head, [frame + b"\n\n" for frame in body.split(b"\n\n") if frame and frame[:1] != b":"]


def check(frames: list[bytes], deltas: int) -> None:
    texts = [match for frame in frames if (match := DELTA.search(frame))]
    if len(texts) != deltas:
        shown = b"".join(frames)[:300]
        raise AssertionError(f"a client got {len(texts)} text deltas, not {deltas}: {shown!r}")
    if not any(b'\ndata: {"type":"finish","' in frame for frame in frames[-3:]):
        raise AssertionError("a client's stream has no finish chunk")


def run_clients(port: int, clients: int, deltas: int) -> None:
    """One round: every client at once; prints the times to first delta, the wall time."""
    _raise_file_limit()

    async def main() -> tuple[list[float], float]:
        started = time.perf_counter()
        got = await asyncio.gather(*(_client(port, number) for number in range(clients)))
        wall = time.perf_counter() - started
        for _, response in got:
            check(frames_of(response)[1], deltas)
        return [first for first, _ in got], wall

    firsts, wall = asyncio.run(main())
    print(json.dumps({"firsts": firsts, "wall": wall}))


# --- the orchestration ---------------------------------------------------------------------


def unnumbered(frames: list[bytes]) -> list[bytes]:
    """``frames`` without the stream's own run id (random per stream), their numbers kept."""
    return [re.sub(rb"^id: [0-9a-f]+:", b"id: :", frame) for frame in frames]


@contextmanager
def process(*arguments: str) -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen([sys.executable, __file__, *arguments])
    try:
        yield child
    finally:
        child.terminate()
        child.wait(10)


def record(port: int) -> tuple[bytes, list[bytes]]:
    return frames_of(asyncio.run(_client(port))[1])


def floor_frames(port: int, deltas: int) -> dict[str, Any]:
    """What the floor sends around the deltas, from one chat on runport (each frame without
    its ``id:`` line), the text part's id and the response headers."""
    head, frames = record(port)
    check(frames, deltas)
    marks = [bool(DELTA.search(frame)) for frame in frames]
    start, end = marks.index(True), len(marks) - marks[::-1].index(True)
    part = re.search(rb'"text-delta","id":"([^"]*)"', frames[start])
    assert part is not None

    def bare(chosen: list[bytes]) -> list[str]:
        return [frame.partition(b"\n")[2].decode() for frame in chosen]

    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.decode().partition(":")
        if name.lower() not in (
            "date",
            "server",
            "transfer-encoding",
            "content-length",
            "connection",
            "x-runport-run-id",
        ):
            headers[name.strip()] = value.strip()
    return {
        "head": bare(frames[:start]),
        "tail": bare(frames[end:]),
        "part": part.group(1).decode(),
        "headers": headers,
    }


def one_round(server: subprocess.Popen[bytes], port: int, clients: int, deltas: int) -> tuple:
    before = cpu_seconds(server.pid)
    out = subprocess.run(
        [sys.executable, __file__, "--clients-run", str(port), str(clients), str(deltas)],
        capture_output=True,
    )
    used = cpu_seconds(server.pid) - before
    if out.returncode:
        raise RuntimeError("a round of clients failed:\n" + out.stderr.decode()[-2000:])
    got = json.loads(out.stdout)
    total = clients * deltas
    return (
        used / total * 1e6,
        total / got["wall"],
        statistics.median(got["firsts"]) * 1e3,
        percentile(got["firsts"], 0.99) * 1e3,
    )


def measure(
    servers: dict[str, tuple[subprocess.Popen[bytes], int]], args: argparse.Namespace
) -> None:
    results: dict[str, list[tuple[float, ...]]] = {name: [] for name in servers}
    for number in range(args.rounds + 1):  # round 0 warms every server up
        for name, (server, port) in servers.items():
            row = one_round(server, port, args.clients, args.deltas)
            if number:
                results[name].append(row)
    print(
        f"\n{args.clients} concurrent chat clients × {args.deltas} deltas, median (min–max) of "
        f"{args.rounds} interleaved rounds:\n"
    )
    print("| server | CPU µs per delta | deltas/s | first delta p50 (ms) | p99 (ms) |")
    print("|---|---|---|---|---|")
    for name, rows in results.items():
        cells = []
        for column, form in zip(
            zip(*rows, strict=True), ("{:.1f}", "{:,.0f}", "{:.0f}", "{:.0f}"), strict=True
        ):
            middle = statistics.median(column)
            cells.append(
                f"{form.format(middle)} ({form.format(min(column))}–{form.format(max(column))})"
            )
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    for transport in args.transports:
        ours, floor = results[f"runport/{transport}"], results[f"floor/{transport}"]
        pairs = [a[0] / b[0] for a, b in zip(ours, floor, strict=True)]
        medians = statistics.median(a[0] for a in ours) / statistics.median(b[0] for b in floor)
        p99 = statistics.median(a[3] for a in ours) / statistics.median(b[3] for b in floor)
        print(
            f"runport/{transport} ÷ floor/{transport}: CPU per delta {medians:.2f}× (round by "
            f"round {min(pairs):.2f}–{max(pairs):.2f}×), first delta p99 {p99:.2f}×"
        )
        if f"runport/{transport} unfrozen" in results:
            before = results[f"runport/{transport} unfrozen"]
            pairs = [a[0] / b[0] for a, b in zip(before, floor, strict=True)]
            medians = statistics.median(a[0] for a in before) / statistics.median(
                b[0] for b in floor
            )
            print(
                f"runport/{transport} unfrozen ÷ floor/{transport}: CPU per delta {medians:.2f}× "
                f"(round by round {min(pairs):.2f}–{max(pairs):.2f}×)"
            )


def profile(
    server: subprocess.Popen[bytes], port: int, target: Path, args: argparse.Namespace
) -> None:
    one_round(server, port, args.clients, args.deltas)  # every connection to the upstream open
    server.send_signal(signal.SIGUSR1)
    one_round(server, port, args.clients, args.deltas)
    server.send_signal(signal.SIGUSR2)
    deadline = time.monotonic() + 60
    while not target.exists() or not target.stat().st_size:
        if time.monotonic() > deadline:
            raise RuntimeError("the server wrote no profile")
        time.sleep(0.1)
    time.sleep(0.5)
    from async_transports import package  # who a profiled function belongs to

    stats = pstats.Stats(str(target))
    raw = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in raw.values())
    by_package: dict[str, float] = {}
    for (filename, _, _), entry in raw.items():
        key = package(filename)
        by_package[key] = by_package.get(key, 0.0) + entry[2]
    print(f"\nthe runport server, one round under cProfile: own time by package ({total:.2f} s)\n")
    for key, seconds in sorted(by_package.items(), key=lambda item: -item[1])[:12]:
        print(f"  {seconds / total:6.1%}  {key}")
    text = io.StringIO()
    pstats.Stats(str(target), stream=text).sort_stats("tottime").print_stats(args.top)
    lines = text.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    print(f"\ntop {args.top} functions by own time\n")
    print("\n".join(lines[start:]).rstrip())


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-runport":
        _raise_file_limit()
        port, upstream, transport, target, unfrozen = sys.argv[2:7]
        serve_runport(int(port), upstream, transport, target or None, unfrozen == "unfrozen")
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-floor":
        _raise_file_limit()
        port, upstream, transport, frames = sys.argv[2:6]
        serve_floor(int(port), upstream, transport, frames)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--clients-run":
        run_clients(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--deltas", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transports", nargs="+", choices=list(TRANSPORTS), default=["httpx"])
    parser.add_argument("--profile", action="store_true", help="profile the runport server")
    parser.add_argument(
        "--compare-unfrozen",
        action="store_true",
        help="also runport as it was before run_server froze its heap (gc.unfreeze on ready)",
    )
    parser.add_argument("--top", type=int, default=25, help="functions listed by --profile")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} CPUs)")
    upstream_process, upstream = start_server(args.deltas, None)
    try:
        with tempfile.TemporaryDirectory() as name:
            run(args, upstream, Path(name))
    finally:
        upstream_process.terminate()
        upstream_process.wait(10)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


def run(args: argparse.Namespace, upstream: str, folder: Path) -> None:
    servers: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
    with contextlib.ExitStack() as stack:
        for transport in args.transports:
            port = _free_port()
            target = str(folder / f"{transport}.prof") if args.profile else ""
            server = stack.enter_context(
                process("--serve-runport", str(port), upstream, transport, target, "")
            )
            _wait_for(port)
            recorded = floor_frames(port, args.deltas)
            frames_file = folder / f"{transport}.json"
            frames_file.write_text(json.dumps(recorded))
            servers[f"runport/{transport}"] = (server, port)
            if args.profile:
                profile(server, port, Path(target), args)
                return
            floor_port = _free_port()
            floor = stack.enter_context(
                process("--serve-floor", str(floor_port), upstream, transport, str(frames_file))
            )
            _wait_for(floor_port)
            ours, theirs = record(port), record(floor_port)
            if unnumbered(ours[1]) != unnumbered(theirs[1]):
                raise AssertionError(f"floor/{transport} does not send the bytes runport sends")
            servers[f"floor/{transport}"] = (floor, floor_port)
            if args.compare_unfrozen:
                before = _free_port()
                servers[f"runport/{transport} unfrozen"] = (
                    stack.enter_context(
                        process("--serve-runport", str(before), upstream, transport, "", "unfrozen")
                    ),
                    before,
                )
                _wait_for(before)
        measure(servers, args)


if __name__ == "__main__":
    main()
