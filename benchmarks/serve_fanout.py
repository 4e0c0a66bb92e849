"""``runport serve`` streaming to many SSE clients at once, beside a bare Starlette floor.

Servers, each a real uvicorn process of its own on 127.0.0.1, started once and kept for
every round:

- ``runport/mock``    ``runport serve`` as its command builds it (``runport.server.prepare``
                      and ``run_server``: the guarded h11 protocol, the request guard), the
                      mock playing a scenario of ``--deltas`` text deltas;
- ``runport/openai``  the same with ``--adapter openai`` against a loopback OpenAI-compatible
                      upstream (another process: ``async_streams.py``'s pre-rendered server,
                      the same number of deltas), its CPU not counted;
- ``floor/… bytes``   a bare Starlette app under stock uvicorn (h11) whose route reads the
                      body and answers with a ``StreamingResponse`` yielding, one frame per
                      write, the very bytes the runport server sent for the same request
                      (recorded from it at start): what serving these events costs with no
                      adapter, no contract and no envelope behind them — and, for the openai
                      row, no upstream either;
- ``floor/openai relay`` the like-for-like floor of ``runport/openai``: a bare Starlette route
                      that posts the same upstream request with ``httpx.AsyncClient`` (clients
                      of at most 50 streams, as the adapter pools them), splits the upstream's
                      SSE frames, reads each chunk's text with ``json.loads`` and yields it as
                      runport's own ``Delta`` frame, then the ``Complete`` and envelope frames
                      runport sent (recorded: the receipt is runport's work). Its bytes are
                      checked equal to runport's at start, so ``runport/openai`` over it is what
                      runport's own work costs on the same stream.

Each round opens ``--clients`` connections at the same moment from a client process (raw
asyncio sockets, so the client costs little of the two cores), posts one streamed execution
on each and reads every response to its end; every client must get every event, in order,
and an ok envelope. Contenders are interleaved round by round. Reported per contender, median
and spread (min–max) over ``--rounds``: the server process's CPU time per event (utime+stime
from /proc, divided by the SSE frames sent), events per second (frames over the round's wall
time) and the time to first event (p50 and p99 over the clients; from each client's request
being written to the first ``event:`` byte read).

Two in-process measurements follow, in CPU time, medians of interleaved rounds: ``astream``
per event against the sync ``execute_contract(on_event=…)`` on the same mock turn, and one
non-streamed call through ``OpenAIChatAdapter`` over ``httpx.MockTransport`` against a bare
``httpx.Client.post`` + ``json.loads`` of the same bytes (and a mocked ``execute``).

    .venv/bin/python benchmarks/serve_fanout.py [--clients 200 1000] [--deltas 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import resource
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

CONTRACT = """api_version: runport/v1alpha1
id: bench.story
version: 1.0.0
description: A story, streamed.
inputs: {topic: {schema: {type: string, minLength: 1}, required: true}}
messages:
  - role: user
    content: "A story about {{ inputs.topic }}"
output_schema: {type: string}
"""
WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]
PATH = "/v1/contracts/bench.story/executions"
BODY = b'{"inputs": {"topic": "foxes"}}'


def scenario(deltas: int) -> str:
    events = [{"kind": "delta", "text": WORDS[n % len(WORDS)]} for n in range(deltas)]
    events.append({"kind": "finish", "finish_reason": "stop"})
    turn = {"events": events}
    return json.dumps({"api_version": "runport.mock/v1", "id": "bench.story", "turns": [turn]})


def _raise_file_limit() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- the servers (each run in its own process) ---------------------------------------------


def serve_runport(folder: str, port: int, adapter: str) -> None:
    from runport.server import prepare, run_server

    scenario_file = str(Path(folder) / "scenario.json") if adapter == "mock" else None
    app = prepare(Path(folder) / "contracts", adapter=adapter, scenario=scenario_file, warn=print)
    run_server(app, port=port, max_connections=4096)


def serve_floor(frames_file: str, port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    frames = [frame.encode() for frame in json.loads(Path(frames_file).read_text())]

    async def execute(request: Request) -> StreamingResponse:
        await request.body()

        async def stream() -> AsyncIterator[bytes]:
            for frame in frames:
                yield frame

        return StreamingResponse(stream(), media_type="text/event-stream")

    app = Starlette(routes=[Route(PATH, execute, methods=["POST"])])
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, http="h11", log_level="warning", backlog=4096
    )
    uvicorn.Server(config).run()


RELAY_SHARD = 50
"""Streams one relay client carries before the next opens (the adapter's ``SHARD_SIZE``: one
httpx pool of hundreds of live streams spends its CPU scanning its connections)."""


def serve_relay(upstream: str, tail_file: str, port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    # runport's Complete and envelope frames, each without its id line (the relay numbers its own)
    tail = [frame.partition("\n")[2].encode() for frame in json.loads(Path(tail_file).read_text())]
    url = upstream + "/chat/completions"
    limits = httpx.Limits(max_connections=RELAY_SHARD, max_keepalive_connections=RELAY_SHARD)
    shards: list[list[Any]] = []  # [client, streams in flight]

    def take() -> list[Any]:
        for shard in shards:
            if shard[1] < RELAY_SHARD:
                break
        else:
            shard = [httpx.AsyncClient(limits=limits, timeout=600), 0]
            shards.append(shard)
        shard[1] += 1
        return shard

    async def execute(request: Request) -> StreamingResponse:
        topic = json.loads(await request.body())["inputs"]["topic"]
        payload = {
            "model": "m",
            "messages": [{"role": "user", "content": "A story about " + topic}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        body = json.dumps(payload, separators=(",", ":")).encode()

        run_id = secrets.token_hex(16)
        prefix = f"id: {run_id}:".encode()

        async def stream() -> AsyncIterator[bytes]:
            seq = 0
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
                                        prefix
                                        + str(seq).encode()
                                        + b'\nevent: Delta\ndata: {"kind":"Delta","text":'
                                        + json.dumps(text, ensure_ascii=False).encode()
                                        + b"}\n\n"
                                    )
            finally:
                shard[1] -= 1
            for frame in tail:
                seq += 1
                yield prefix + str(seq).encode() + b"\n" + frame

        headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
        headers["x-runport-run-id"] = run_id
        return StreamingResponse(
            stream(), media_type="text/event-stream; charset=utf-8", headers=headers
        )

    app = Starlette(routes=[Route(PATH, execute, methods=["POST"])])
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, http="h11", log_level="warning", backlog=4096
    )
    uvicorn.Server(config).run()


def serve_upstream(port: int, deltas: int) -> None:
    import async_streams

    asyncio.run(async_streams.serve(port, deltas))


# --- the clients (a process of their own) --------------------------------------------------


async def _client(port: int) -> tuple[float, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(BODY)}\r\nConnection: close\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    writer.write(head + BODY)
    first = -1.0
    held: list[bytes] = []
    while data := await reader.read(65536):
        held.append(data)
        if first < 0 and b"event: " in data:
            first = time.perf_counter() - started
    writer.close()
    return first, b"".join(held)


def frames_of(response: bytes) -> list[bytes]:
    """The SSE frames of one whole HTTP/1.1 response (chunked or not), in order."""
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
    return [frame + b"\n\n" for frame in body.split(b"\n\n") if frame and frame[:1] != b":"]


def kind_of(frame: bytes) -> bytes:
    """A frame's ``event:`` line (the ``id:`` line before it numbers the stream)."""
    for line in frame.split(b"\n"):
        if line.startswith(b"event: "):
            return line
    return b""


def check(frames: list[bytes], deltas: int) -> None:
    kinds = [kind_of(frame) for frame in frames]
    expected = [b"event: Delta"] * deltas + [b"event: Complete", b"event: envelope"]
    if kinds != expected:
        raise AssertionError(f"a client got {len(kinds)} frames, not the {len(expected)} sent")
    if b'"ok":true' not in frames[-1]:
        raise AssertionError("a client's envelope is not ok")


def unnumbered(frames: list[str]) -> list[str]:
    """``frames`` without the stream's own id (random per stream), its numbers kept."""
    return [re.sub(r"^id: [0-9a-f]+:", "id: :", frame) for frame in frames]


def run_clients(port: int, clients: int, deltas: int) -> None:
    """One round: every client at once; prints the times to first event, the wall time."""
    _raise_file_limit()

    async def main() -> tuple[list[float], float]:
        started = time.perf_counter()
        got = await asyncio.gather(*(_client(port) for _ in range(clients)))
        wall = time.perf_counter() - started
        for _, response in got:
            check(frames_of(response), deltas)
        return [first for first, _ in got], wall

    firsts, wall = asyncio.run(main())
    print(json.dumps({"firsts": firsts, "wall": wall}))


# --- the orchestration ---------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no server came up on port {port}")


@contextmanager
def process(
    *arguments: str, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen(
        [sys.executable, __file__, *arguments], env={**os.environ, **(env or {})}
    )
    try:
        yield child
    finally:
        child.terminate()
        child.wait(10)


def record(port: int) -> list[str]:
    """The frames one streamed execution gets from the server on ``port``."""
    response = asyncio.run(_client(port))[1]
    return [frame.decode() for frame in frames_of(response)]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def fanout(args: argparse.Namespace, folder: Path) -> None:
    names = ("upstream", "mock", "openai", "floor-m", "floor-o", "relay")
    ports = {name: _free_port() for name in names}
    upstream = f"http://127.0.0.1:{ports['upstream']}/v1"
    upstream_env = {
        "RUNPORT_OPENAI_BASE_URL": upstream,
        "RUNPORT_OPENAI_MODEL": "m",
        "RUNPORT_OPENAI_RESPONSE_FORMAT": "none",
    }
    with (
        process("--serve-upstream", str(ports["upstream"]), str(args.deltas)),
        process("--serve-runport", str(folder), str(ports["mock"]), "mock") as mock,
        process(
            "--serve-runport", str(folder), str(ports["openai"]), "openai", env=upstream_env
        ) as openai_server,
    ):
        for port in (ports["upstream"], ports["mock"], ports["openai"]):
            _wait_for(port)
        for name, source in (("floor-m", "mock"), ("floor-o", "openai")):
            frames = record(ports[source])
            check([frame.encode() for frame in frames], args.deltas)
            (folder / f"{name}.json").write_text(json.dumps(frames))
        # The relay sends runport's Complete and envelope frames as recorded.
        (folder / "relay.json").write_text(json.dumps(frames[-2:]))
        with (
            process("--serve-floor", str(folder / "floor-m.json"), str(ports["floor-m"])) as fm,
            process("--serve-floor", str(folder / "floor-o.json"), str(ports["floor-o"])) as fo,
            process(
                "--serve-relay", upstream, str(folder / "relay.json"), str(ports["relay"])
            ) as relay,
        ):
            for name in ("floor-m", "floor-o", "relay"):
                _wait_for(ports[name])
            if unnumbered(record(ports["relay"])) != unnumbered(frames):
                raise AssertionError("the relay floor does not send the bytes runport sends")
            servers = {
                "runport/mock": (mock, ports["mock"]),
                "floor/mock bytes": (fm, ports["floor-m"]),
                "runport/openai": (openai_server, ports["openai"]),
                "floor/openai relay": (relay, ports["relay"]),
                "floor/openai bytes": (fo, ports["floor-o"]),
            }
            for clients in args.clients:
                measure(servers, clients, args)


FLOORS = {
    "runport/mock": ("floor/mock bytes",),
    "runport/openai": ("floor/openai relay", "floor/openai bytes"),
}
"""Each runport row's floors, the like-for-like one first (the table's ÷ floor columns)."""


def measure(
    servers: dict[str, tuple[subprocess.Popen[bytes], int]], clients: int, args: argparse.Namespace
) -> None:
    frames = args.deltas + 2
    results: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in servers}
    for round_number in range(args.rounds + 1):  # round 0 warms every server up
        for name, (server, port) in servers.items():
            before = cpu_seconds(server.pid)
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--clients-run",
                    str(port),
                    str(clients),
                    str(args.deltas),
                ],
                check=True,
                capture_output=True,
            ).stdout
            used = cpu_seconds(server.pid) - before
            got = json.loads(out)
            if round_number:
                results[name].append(
                    (
                        used / (clients * frames) * 1e6,
                        clients * frames / got["wall"],
                        statistics.median(got["firsts"]) * 1e3,
                        percentile(got["firsts"], 0.99) * 1e3,
                    )
                )
    print(
        f"\n{clients} concurrent clients × {args.deltas} deltas ({frames} SSE frames each), "
        f"median (min–max) of {args.rounds} interleaved rounds:\n"
    )
    print(
        "| server | CPU µs per event | ÷ floor | events/s | first event p50 (ms) | p99 (ms) "
        "| p99 ÷ floor |"
    )
    print("|---|---|---|---|---|---|---|")
    medians = {
        name: [statistics.median(column) for column in zip(*rows, strict=True)]
        for name, rows in results.items()
    }
    for name, rows in results.items():
        floor = medians[FLOORS.get(name, (name,))[0]]
        columns = list(zip(*rows, strict=True))
        spread = [f"{min(c):.1f}–{max(c):.1f}" for c in columns]
        median = medians[name]
        print(
            f"| {name} | {median[0]:.1f} ({spread[0]}) | {median[0] / floor[0]:.2f}× | "
            f"{median[1]:,.0f} | {median[2]:.0f} ({spread[2]}) | {median[3]:.0f} ({spread[3]}) | "
            f"{median[3] / floor[3]:.2f}× |"
        )
    print()
    for name, floors in FLOORS.items():
        for floor_name in floors:
            # Round by round: each round's contenders ran back to back, so their ratio moves
            # less with the machine's load than the ratio of the medians.
            pairs = zip(results[name], results[floor_name], strict=True)
            cpu = [ours[0] / theirs[0] for ours, theirs in pairs]
            ratio = medians[name][0] / medians[floor_name][0]
            print(
                f"{name} ÷ {floor_name}: CPU per event {ratio:.2f}× "
                f"(round by round {min(cpu):.2f}–{max(cpu):.2f}×), first event p99 "
                f"{medians[name][3] / medians[floor_name][3]:.2f}×"
            )


# --- in process: astream against the sync path, and one unstreamed OpenAI call ------------


def _median_ratio(
    a: Callable[[], float], b: Callable[[], float], rounds: int
) -> tuple[list[float], list[float]]:
    first: list[float] = []
    second: list[float] = []
    for _ in range(rounds):
        gc.collect()
        first.append(a())
        gc.collect()
        second.append(b())
    return first, second


def _line(name: str, values: list[float], floor: list[float]) -> str:
    median, base = statistics.median(values), statistics.median(floor)
    return f"| {name} | {median:.2f} ({min(values):.2f}–{max(values):.2f}) | {median / base:.2f}× |"


def per_event(args: argparse.Namespace) -> None:
    """``astream`` beside the sync path in short rounds, each pair run back to back (in
    alternating order): on a loaded machine the ratio of each pair moves far less than either
    side, so the median of the pairs' ratios is the figure, with its quartiles."""
    import yaml

    from runport.application import astream, execute_contract
    from runport.core import parse_contract, parse_scenario
    from runport.mock import AsyncScriptedRuntime, ScriptedRuntime

    contract = parse_contract(yaml.safe_load(CONTRACT))
    played = parse_scenario(json.loads(scenario(args.deltas)))
    inputs = {"topic": "foxes"}
    turns = 20
    rounds = args.rounds * 24
    events = args.deltas + 1

    def sync() -> float:
        start = time.process_time()
        for _ in range(turns):
            seen: list[object] = []
            execute_contract(contract, ScriptedRuntime(played), inputs=inputs, on_event=seen.append)
        return (time.process_time() - start) / (turns * events) * 1e6

    async def streamed() -> float:
        start = time.process_time()
        for _ in range(turns):
            async with astream(contract, AsyncScriptedRuntime(played), inputs=inputs) as stream:
                async for _event in stream:
                    pass
            assert stream.envelope.ok
        return (time.process_time() - start) / (turns * events) * 1e6

    loop = asyncio.new_event_loop()
    sync(), loop.run_until_complete(streamed())  # warm both up
    sync_us: list[float] = []
    astream_us: list[float] = []
    for number in range(rounds):
        gc.collect()
        if number % 2:
            sync_us.append(sync())
            astream_us.append(loop.run_until_complete(streamed()))
        else:
            astream_us.append(loop.run_until_complete(streamed()))
            sync_us.append(sync())
    loop.close()
    ratios = [a / b for a, b in zip(astream_us, sync_us, strict=True)]
    low, _, high = statistics.quantiles(ratios, n=4)
    print(
        f"\nOne mock turn of {args.deltas} deltas, µs of CPU per event, median (min–max) "
        f"of {rounds} rounds of {turns} turns, astream's beside the sync path's:\n"
    )
    print("| path | µs per event | ÷ sync, median of the rounds (quartiles) |")
    print("|---|---|---|")
    for name, values in (
        ("`execute_contract(on_event=…)` (sync)", sync_us),
        ("`astream`", astream_us),
    ):
        median = statistics.median(values)
        spread = f"{median:.2f} ({min(values):.2f}–{max(values):.2f})"
        share = (
            "1.00×"
            if values is sync_us
            else (f"{statistics.median(ratios):.2f}× ({low:.2f}–{high:.2f})")
        )
        print(f"| {name} | {spread} | {share} |")


def openai_call(args: argparse.Namespace) -> None:
    from runport.contracts import CompiledInteraction, ExecutionRequest, Message
    from runport.core import parse_scenario
    from runport.mock import ScriptedRuntime
    from runport.openai import AsyncOpenAIChatAdapter, OpenAIChatAdapter

    text = "".join(WORDS)
    body = json.dumps(
        {
            "id": "chatcmpl-AbCdEf0123456789",
            "object": "chat.completion",
            "created": 1733000000,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 10, "total_tokens": 22},
        }
    ).encode()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    client = httpx.Client(transport=httpx.MockTransport(answer))
    adapter = OpenAIChatAdapter(base_url="http://upstream.test/v1", model="m", http_client=client)
    request = ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="bench/0",
            contract_id="bench",
            contract_version="1.0.0",
            messages=[Message(role="user", content="Go.")],
            output_schema={"type": "string"},
        )
    )
    payload = {"model": "m", "messages": [{"role": "user", "content": "Go."}]}
    played = parse_scenario(
        {
            "api_version": "runport.mock/v1",
            "id": "bench",
            "turns": [
                {
                    "events": [
                        {"kind": "delta", "text": text},
                        {"kind": "finish", "finish_reason": "stop"},
                    ]
                }
            ],
        }
    )
    calls = 2000

    def timed(work: Callable[[], object]) -> Callable[[], float]:
        def run() -> float:
            start = time.process_time()
            for _ in range(calls):
                work()
            return (time.process_time() - start) / calls * 1e6

        return run

    def bare() -> object:
        return json.loads(
            client.post("http://upstream.test/v1/chat/completions", json=payload).content
        )

    async_client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    async_adapter = AsyncOpenAIChatAdapter(
        base_url="http://upstream.test/v1", model="m", http_client=async_client
    )
    loop = asyncio.new_event_loop()

    def timed_async(work: Callable[[], Awaitable[object]]) -> Callable[[], float]:
        async def calls_in_a_row() -> None:
            for _ in range(calls):
                await work()

        def run() -> float:
            start = time.process_time()
            loop.run_until_complete(calls_in_a_row())
            return (time.process_time() - start) / calls * 1e6

        return run

    async def bare_async() -> object:
        response = await async_client.post("http://upstream.test/v1/chat/completions", json=payload)
        return json.loads(response.content)

    assert adapter.execute(request).text == text
    assert loop.run_until_complete(async_adapter.execute(request)).text == text
    rounds = args.rounds * 3
    columns: dict[str, list[float]] = {
        name: [] for name in ("adapter", "bare", "mock", "async adapter", "async bare")
    }
    work: dict[str, Callable[[], float]] = {
        "adapter": timed(lambda: adapter.execute(request)),
        "bare": timed(bare),
        "mock": timed(lambda: ScriptedRuntime(played).execute(request)),
        "async adapter": timed_async(lambda: async_adapter.execute(request)),
        "async bare": timed_async(bare_async),
    }
    for _ in range(rounds):
        for name, run in work.items():
            gc.collect()
            columns[name].append(run())
    loop.run_until_complete(async_client.aclose())
    loop.close()
    print(
        "\nOne unstreamed chat completion over httpx.MockTransport, µs of CPU per call, "
        f"median (min–max) of {rounds} interleaved rounds of {calls} calls:\n"
    )
    print("| call | µs per call | ÷ bare httpx + json.loads | round by round |")
    print("|---|---|---|---|")
    rows = (
        ("`OpenAIChatAdapter.execute`", "adapter", "bare"),
        ("bare `httpx.Client.post` + `json.loads`", "bare", "bare"),
        ("`ScriptedRuntime.execute` (the mock)", "mock", "bare"),
        ("`AsyncOpenAIChatAdapter.execute`", "async adapter", "async bare"),
        ("bare `httpx.AsyncClient.post` + `json.loads`", "async bare", "async bare"),
    )
    for label, name, base in rows:
        # Each round's contenders ran back to back: their ratio moves less with the load.
        pairs = sorted(a / b for a, b in zip(columns[name], columns[base], strict=True))
        print(
            _line(label, columns[name], columns[base])
            + f" {statistics.median(pairs):.2f}× ({pairs[0]:.2f}–{pairs[-1]:.2f}×) |"
        )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1].startswith("--serve-"):
        _raise_file_limit()
        role, *rest = sys.argv[1:]
        if role == "--serve-runport":
            serve_runport(rest[0], int(rest[1]), rest[2])
        elif role == "--serve-floor":
            serve_floor(rest[0], int(rest[1]))
        elif role == "--serve-relay":
            serve_relay(rest[0], rest[1], int(rest[2]))
        else:
            serve_upstream(int(rest[0]), int(rest[1]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--clients-run":
        run_clients(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--deltas", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=["fanout", "astream", "openai"], default=None)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} CPUs)")
    if args.only in (None, "fanout"):
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            (folder / "contracts").mkdir()
            (folder / "contracts" / "story.yaml").write_text(CONTRACT)
            (folder / "scenario.json").write_text(scenario(args.deltas))
            fanout(args, folder)
    if args.only in (None, "astream"):
        per_event(args)
    if args.only in (None, "openai"):
        openai_call(args)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
