"""What ``--resumable`` costs per event, and how soon a resume starts replaying.

One streamed run of ``--events`` small deltas (an adapter that sends them as fast as it can),
driven through the whole ASGI app — routing, the request guard, the run, the SSE frames — with
a ``send`` that only counts bytes, so the server's own work is what is measured (no socket,
no client):

- ``plain``      ``create_app(...)``: the run lives in its connection (today's default);
- ``memory``     ``create_app(..., event_log=MemoryEventLog())``: the run goes to the log in
                 this process, and the connection reads it from there;
- ``redis``      ``create_app(..., event_log=RedisEventLog(url))`` against a ``redis-server``
                 the benchmark starts on a free loopback port (when one is on PATH).

Times are this process's CPU time (``time.process_time``) per event — Redis's own CPU is its
process's, not ours, so the wall time per event is given too — interleaved rounds, median.
Then, over real loopback HTTP (uvicorn, httpx), the time from sending ``GET
/v1/runs/{id}/events`` with a ``Last-Event-ID`` halfway through a finished run to the first
replayed frame arriving, per log. Not run in CI: timings belong to a quiet machine.

    .venv/bin/python benchmarks/resumable.py [--events 20000] [--rounds 7]

Bar (issue 27): ``memory`` at most 1.15x ``plain`` per event.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import httpx
from starlette.types import ASGIApp, Message

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
)
from runport.core import build_receipt, parse_contract
from runport.ports import AsyncRuntimeAdapter, AsyncSink, deliver
from runport.server import EventLog, MemoryEventLog, create_app, serve_in_background

CONTRACT = parse_contract(
    {
        "api_version": "runport/v1alpha1",
        "id": "bench",
        "version": "1.0.0",
        "messages": [{"role": "user", "content": [{"kind": "text", "value": "Go."}]}],
        "output_schema": {"type": "string"},
    }
)
PATH = "/v1/contracts/bench/executions"
BODY = b'{"inputs": {}}'


class Deltas(AsyncRuntimeAdapter):
    """``count`` deltas of a short text, as fast as the sink takes them."""

    DESCRIPTOR = AdapterDescriptor(id="deltas", version="0.1.0", capabilities=["streaming", "text"])

    def __init__(self, count: int) -> None:
        self.count = count

    def descriptor(self) -> AdapterDescriptor:
        return self.DESCRIPTOR

    def receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        text = "a few words " * self.count
        return build_receipt(request, adapter=self.DESCRIPTOR, text=text, finish_reason="stop")

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.receipt(request)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        delta = Delta(text="a few words ")
        for _ in range(self.count):
            await deliver(sink, delta)
        receipt = self.receipt(request)
        await deliver(sink, Complete(receipt=receipt))
        return receipt


def _scope() -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": PATH,
        "raw_path": PATH.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"accept", b"text/event-stream"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(BODY)).encode()),
        ],
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 40000),
    }


async def one_run(app: ASGIApp) -> int:
    """One streamed run through the app; the bytes it sent."""
    sent = 0
    done = asyncio.Event()
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": BODY, "more_body": False}
        await asyncio.Event().wait()  # the client never goes away
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        nonlocal sent
        if message["type"] == "http.response.body":
            sent += len(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await app(_scope(), receive, send)
    assert done.is_set()
    return sent


async def measure(app: ASGIApp, events: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per event of one run."""
    cpu, wall = time.process_time(), time.perf_counter()
    await one_run(app)
    return (
        (time.process_time() - cpu) / events * 1e6,
        (time.perf_counter() - wall) / events * 1e6,
    )


async def interleaved(
    apps: dict[str, ASGIApp], events: int, rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Every app once per round, on one loop (a Redis client belongs to its loop)."""
    cpu: dict[str, list[float]] = {name: [] for name in apps}
    wall: dict[str, list[float]] = {name: [] for name in apps}
    for app in apps.values():
        await one_run(app)  # warm: the log opened, the scripts loaded
    for _ in range(rounds):
        for name, app in apps.items():
            per_cpu, per_wall = await measure(app, events)
            cpu[name].append(per_cpu)
            wall[name].append(per_wall)
    return cpu, wall


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def redis_server() -> Iterator[str | None]:
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    import redis

    with tempfile.TemporaryDirectory() as folder:
        port = free_port()
        process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", folder, "--save", ""],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(port=port)
        for _ in range(500):
            with contextlib.suppress(redis.ConnectionError):
                client.ping()
                break
            time.sleep(0.01)
        client.close()
        try:
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.kill()
            process.wait()


def time_to_replay(log: EventLog, events: int, rounds: int) -> float:
    """Median ms from sending a resume halfway through a finished run to its first frame."""
    app = create_app([CONTRACT], Deltas(events), event_log=log)
    times: list[float] = []
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        for _ in range(rounds):
            run = http.post(PATH, content=BODY, headers=headers)
            run_id = run.headers["x-runport-run-id"]
            halfway = {"Last-Event-ID": f"{run_id}:{events // 2}"}
            started = time.perf_counter()
            with http.stream("GET", f"/v1/runs/{run_id}/events", headers=halfway) as resumed:
                lines = resumed.iter_lines()
                first = next(lines)
                times.append((time.perf_counter() - started) * 1000)
                for _ in lines:  # read it out: a connection cut mid-write is noisy
                    pass
            assert first == f"id: {run_id}:{events // 2 + 1}", first
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with redis_server() as url:
        from runport.server import RedisEventLog

        apps: dict[str, ASGIApp] = {
            "plain": create_app([CONTRACT], Deltas(args.events)),
            "memory": create_app([CONTRACT], Deltas(args.events), event_log=MemoryEventLog()),
        }
        if url is not None:
            apps["redis"] = create_app(
                [CONTRACT], Deltas(args.events), event_log=RedisEventLog(url)
            )
        else:
            print("(no redis-server on PATH: the redis log is not measured)")
        cpu, wall = asyncio.run(interleaved(apps, args.events, args.rounds))
        plain = statistics.median(cpu["plain"])
        print(f"{args.events} deltas per run, {args.rounds} rounds, median per event:")
        print(f"{'log':<8} {'CPU µs':>8} {'wall µs':>8} {'CPU ÷ plain':>12}")
        for name in apps:
            median = statistics.median(cpu[name])
            print(
                f"{name:<8} {median:>8.2f} {statistics.median(wall[name]):>8.2f}"
                f" {median / plain:>11.2f}x"
            )
        logs: dict[str, EventLog] = {"memory": MemoryEventLog()}
        if url is not None:
            logs["redis"] = RedisEventLog(url)
        print("from a resume's request to its first replayed frame (loopback HTTP), median:")
        for name, log in logs.items():
            print(f"{name:<8} {time_to_replay(log, args.events, args.rounds):>8.2f} ms")
    print("bar (issue 27): memory at most 1.15x plain per event")


if __name__ == "__main__":
    main()
