"""200 concurrent SSE clients over loopback: every client gets every event, in order.

The time to first event is printed (p50/p99), never asserted: speed is a measurement, not a
pass/fail condition on a shared machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import CONTRACTS, SCENARIO, parse_sse, split_stream
from .frontend_runs import CHAT_SCENARIO
from .sse_frames import strip_ids

CLIENTS = 200
SEAL = re.compile(r'"seal":"([0-9a-f]{64})"')


async def _one(
    http: httpx.AsyncClient, topic: str, path: str = "/v1/contracts/demo.story/executions"
) -> tuple[float, str]:
    started = time.perf_counter()
    first: float | None = None
    body: list[str] = []
    if path.endswith("/chat"):
        # one question in many chats: each chat is its own run, the answers all alike
        message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Delft"}]}
        request: dict[str, object] = {"id": topic, "messages": [message]}
    else:
        request = {"inputs": {"topic": topic}}
    async with http.stream(
        "POST", path, json=request, headers={"Accept": "text/event-stream"}
    ) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_text():
            if first is None:
                first = time.perf_counter() - started
            body.append(chunk)
    assert first is not None
    return first, "".join(body)


async def _all(url: str, path: str | None = None) -> list[tuple[float, str]]:
    limits = httpx.Limits(max_connections=CLIENTS + 10, max_keepalive_connections=CLIENTS + 10)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as http:
        calls = (
            _one(http, f"topic {n}") if path is None else _one(http, f"topic {n}", path)
            for n in range(CLIENTS)
        )
        return await asyncio.gather(*calls)


SERVER = """
import sys
from runport.application import async_adapter_factory, load_catalog
from runport.server import create_app, run_server

app = create_app(
    load_catalog(__import__("pathlib").Path(sys.argv[1]), warn=print),
    async_adapter_factory("mock", scenario=sys.argv[2]),
    tools=[lambda city: {"city": city}] if len(sys.argv) > 3 else (),
)
run_server(app, port=0, on_ready=lambda url: print(url, flush=True))
"""


@contextlib.contextmanager
def _server_process(scenario: Path = SCENARIO, *tools: str) -> Iterator[str]:
    """The server in a process of its own, so the clients do not share its interpreter."""
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(CONTRACTS), str(scenario), *tools],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    try:
        yield process.stdout.readline().strip()
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)


def test_200_concurrent_sse_clients_lose_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with _server_process() as url:
        assert url.startswith("http://127.0.0.1:")
        results = asyncio.run(_all(url))
    assert len(results) == CLIENTS
    outputs = set()
    for _, text in results:
        frames = parse_sse(text)
        events, envelope = split_stream(frames)
        assert [event.kind for event in events] == ["Delta", "Delta", "Delta", "Complete"]
        assert envelope.ok
        assert envelope.result is not None
        outputs.add(envelope.result.output)
    assert outputs == {"The lighthouse keeper counted ships that never came."}
    firsts = sorted(first * 1000 for first, _ in results)
    p50 = statistics.median(firsts)
    p99 = firsts[int(len(firsts) * 0.99) - 1]
    with capsys.disabled():
        print(
            f"\n{CLIENTS} concurrent SSE clients over loopback: time to first event "
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {firsts[-1]:.1f} ms"
        )


def test_200_concurrent_chat_streams_lose_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with _server_process(CHAT_SCENARIO, "tools") as url:
        results = asyncio.run(_all(url, "/v1/contracts/demo.forecast/chat"))
    assert len(results) == CLIENTS
    # Each chat's reasoning is sealed for that chat (adr/0042): every seal differs, the rest not.
    seals = [tuple(SEAL.findall(strip_ids(text))) for _, text in results]
    assert all(found for found in seals)
    assert len(set(seals)) == CLIENTS
    bodies = {SEAL.sub('"seal":"…"', strip_ids(text)) for _, text in results}
    assert len(bodies) == 1  # every chat got the same run, chunk for chunk (ids, seals aside)
    (body,) = bodies
    frames = body.split("\n\n")
    assert frames[-2:] == ["data: [DONE]", ""]
    assert '"type":"finish","finishReason":"stop"' in body
    assert body.count('"type":"text-delta"') == 4
    firsts = sorted(first * 1000 for first, _ in results)
    with capsys.disabled():
        print(
            f"\n{CLIENTS} concurrent chat streams over loopback: time to first chunk "
            f"p50 {statistics.median(firsts):.1f} ms, max {firsts[-1]:.1f} ms"
        )
