"""Per-delta cost of the Ollama adapter's streaming path, beside Ollama's official Python client
(``ollama``) and a floor, on identical bytes.

Every contender reads the same NDJSON body through an in-memory ``httpx`` transport in 64 KiB
reads (the official client takes httpx's keywords, so one transport serves all three):

- ``adapter``  ``OllamaChatAdapter.execute_streaming`` with a counting sink;
- ``sdk``      ``ollama.Client.chat(stream=True)``, accumulating content, thinking and calls;
- ``floor``    httpx ``iter_bytes`` + split on newlines + ``json.loads``: the least any
               consumer that decodes every line can do.

Workloads: 20,000 text deltas; 20,000 thinking deltas then 2,000 text deltas; 5,000 whole tool
calls (a line each). Rounds are interleaved and the median reported. Not run in CI: timings
belong to a quiet machine.

    .venv/bin/python benchmarks/ollama_overhead.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from ollama import Client

from runport.contracts import CompiledInteraction, ExecutionRequest, Message, StreamEvent
from runport.ollama import OllamaChatAdapter

MODEL = "llama3.2"
WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]
READ = 64 * 1024


@dataclass
class Workload:
    name: str
    body: bytes
    deltas: int


def _line(message: dict[str, Any], **more: Any) -> bytes:
    chunk = {"model": MODEL, "created_at": "2026-03-01T10:00:00.123456789Z", "done": False}
    return json.dumps({**chunk, "message": {"role": "assistant", **message}, **more}).encode()


def _body(messages: list[dict[str, Any]]) -> bytes:
    done = _line({"content": ""}, done=True, done_reason="stop", prompt_eval_count=9)
    return b"\n".join([*(_line(m) for m in messages), done]) + b"\n"


def workloads() -> list[Workload]:
    text = [{"content": WORDS[n % 10]} for n in range(20_000)]
    thinking = [{"content": "", "thinking": WORDS[n % 10]} for n in range(20_000)]
    calls = [
        {"content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"n": n}}}]}
        for n in range(5_000)
    ]
    return [
        Workload("20,000 text deltas", _body(text), 20_000),
        Workload("20,000 thinking + 2,000 text deltas", _body(thinking + text[:2000]), 22_000),
        Workload("5,000 whole tool calls", _body(calls), 5_000),
    ]


def transport(body: bytes) -> httpx.MockTransport:
    def reads() -> Iterator[bytes]:
        for start in range(0, len(body), READ):
            yield body[start : start + READ]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "application/x-ndjson"}, content=reads()
        )

    return httpx.MockTransport(handler)


REQUEST = ExecutionRequest(
    interaction=CompiledInteraction(
        compiler="bench/0",
        contract_id="bench",
        contract_version="1.0.0",
        messages=[Message(role="user", content="hi")],
        output_schema={"type": "string"},
        runtime_policy={"max_response_bytes": 64 * 1024 * 1024},
    )
)


def run_adapter(body: bytes) -> int:
    count = 0

    def sink(event: StreamEvent) -> None:
        nonlocal count
        count += 1

    client = httpx.Client(transport=transport(body))
    with OllamaChatAdapter(model=MODEL, http_client=client) as adapter:
        adapter.execute_streaming(REQUEST, sink)
    client.close()
    return count


def run_sdk(body: bytes) -> int:
    client = Client(host="http://ollama.invalid", transport=transport(body))
    text: list[str] = []
    thinking: list[str] = []
    calls: list[Any] = []
    asked = [{"role": "user", "content": "hi"}]
    for chunk in client.chat(model=MODEL, messages=asked, stream=True):
        if chunk.message.content:
            text.append(chunk.message.content)
        if chunk.message.thinking:
            thinking.append(chunk.message.thinking)
        calls.extend(chunk.message.tool_calls or ())
    client.close()
    return len(text) + len(thinking) + len(calls)


def run_floor(body: bytes) -> int:
    count = 0
    with (
        httpx.Client(transport=transport(body)) as client,
        client.stream("POST", "http://ollama.invalid/api/chat", content=b"{}") as response,
    ):
        pending = b""
        for piece in response.iter_bytes():
            *lines, pending = (pending + piece).split(b"\n")
            for line in lines:
                json.loads(line)
                count += 1
    return count


def timed(run: Callable[[bytes], int], body: bytes) -> float:
    gc.collect()
    start = time.perf_counter()
    run(body)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    contenders = {"adapter": run_adapter, "sdk": run_sdk, "floor": run_floor}
    print("| workload | adapter | sdk | floor | adapter ÷ floor | sdk ÷ adapter |")
    print("|---|---|---|---|---|---|")
    for workload in workloads():
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(rounds):
            for name, run in contenders.items():
                times[name].append(timed(run, workload.body))
        micro = {
            name: statistics.median(values) / workload.deltas * 1e6
            for name, values in times.items()
        }
        print(
            f"| {workload.name} | {micro['adapter']:.2f} | {micro['sdk']:.2f} | "
            f"{micro['floor']:.2f} | {micro['adapter'] / micro['floor']:.2f}× | "
            f"{micro['sdk'] / micro['adapter']:.1f}× |"
        )


if __name__ == "__main__":
    main()
