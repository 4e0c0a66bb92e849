"""Per-delta cost and peak memory of the Responses API adapter's streaming path, side by side
with the official ``openai`` SDK's ``responses.create(stream=True)`` loop, its bare event loop
and the floor, on identical bytes from one loopback HTTP server (the method and the floor of
``anthropic_gemini_overhead.py``, whose server, floor and table this reuses):

- ``adapter``  ``OpenAIResponsesAdapter.execute_streaming`` with a counting sink;
- ``sdk``      ``openai``'s ``responses.create(stream=True)`` loop, accumulating text,
               reasoning and arguments by item;
- ``bare sdk`` the SDK's event loop with every event dropped unread: the least any SDK
               consumer pays, so ``bare sdk ÷ floor`` bounds how much faster than the SDK even
               a zero-cost adapter could be;
- ``floor``    httpx ``iter_bytes`` + split on blank lines + ``json.loads``.

The events are shaped as OpenAI sends them (``event:`` line, ``sequence_number``, the item's
id, ``output_index``, ``content_index``, ``logprobs``, the ``obfuscation`` padding), with the
frames a real stream has around each item (``output_item.added``/``done``, content and summary
parts). Workloads: 20,000 text deltas; 20,000 argument fragments of ten function calls
interleaved with text (a message item before each call); 20,000 reasoning-summary deltas then
2,000 text deltas. There is no 4 KiB workload: the API repeats a message's whole text in its
``output_text.done``, ``content_part.done``, ``output_item.done`` and ``response.completed``
events, so an 8 MB answer is a 41 MB body of 8 MB frames, on which the shared floor's buffer
concatenation is quadratic (10 ms a delta) and compares nothing. Rounds are interleaved and the
median reported. Not run in CI: timings belong to a quiet machine.

``--in-memory`` serves the bytes from an in-memory httpx transport in 64 KiB reads and times
the process's CPU (``streaming_overhead.py``'s method): no socket, and another process's load
on a shared machine does not land in the figure.

    .venv/bin/python benchmarks/responses_overhead.py [--rounds 5] [--in-memory]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
from anthropic_gemini_overhead import (
    KEY,
    WORDS,
    Workload,
    adapter_run,
    floor,
    measure,
    request,
    sse,
)
from streaming_overhead import BodyTransport

from runport.contracts import StreamEvent
from runport.openai import OpenAIResponsesAdapter

_HEX = "0123456789abcdef" * 3


class _Body:
    """One response's events, numbered as the API numbers them."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.output: list[dict[str, Any]] = []

    def event(self, kind: str, **fields: Any) -> None:
        value = {"type": kind, "sequence_number": len(self.frames), **fields}
        self.frames.append(sse(value, kind))

    def message(self, pieces: list[str]) -> None:
        position = len(self.output)
        item_id = f"msg_{position:02d}{_HEX}"
        at = {"item_id": item_id, "output_index": position}
        item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant"}
        self.event(
            "response.output_item.added", output_index=position, item={**item, "content": []}
        )
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        self.event("response.content_part.added", **at, content_index=0, part=part)
        for piece in pieces:
            self.event(
                "response.output_text.delta",
                **at,
                content_index=0,
                delta=piece,
                logprobs=[],
                obfuscation="Zq3xW9",
            )
        text = "".join(pieces)
        self.event("response.output_text.done", **at, content_index=0, text=text, logprobs=[])
        done = {**item, "status": "completed", "content": [{**part, "text": text}]}
        self.event("response.content_part.done", **at, content_index=0, part=done["content"][0])
        self.event("response.output_item.done", output_index=position, item=done)
        self.output.append(done)

    def reasoning(self, pieces: list[str]) -> None:
        position = len(self.output)
        item_id = f"rs_{position:02d}{_HEX}"
        at = {"item_id": item_id, "output_index": position}
        added = {"id": item_id, "type": "reasoning", "summary": []}
        self.event("response.output_item.added", output_index=position, item=added)
        part = {"type": "summary_text", "text": ""}
        self.event("response.reasoning_summary_part.added", **at, summary_index=0, part=part)
        for piece in pieces:
            self.event(
                "response.reasoning_summary_text.delta",
                **at,
                summary_index=0,
                delta=piece,
                obfuscation="Zq3xW9",
            )
        text = "".join(pieces)
        self.event("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
        part = {"type": "summary_text", "text": text}
        self.event("response.reasoning_summary_part.done", **at, summary_index=0, part=part)
        done = {**added, "summary": [part], "encrypted_content": "gAAAAABbench" + "x" * 800}
        self.event("response.output_item.done", output_index=position, item=done)
        self.output.append(done)

    def call(self, fragments: list[str]) -> None:
        position = len(self.output)
        item_id = f"fc_{position:02d}{_HEX}"
        at = {"item_id": item_id, "output_index": position}
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": f"call_{position:02d}bench",
            "name": "get_weather",
        }
        self.event("response.output_item.added", output_index=position, item=item)
        for fragment in fragments:
            self.event(
                "response.function_call_arguments.delta", **at, delta=fragment, obfuscation="Zq3x"
            )
        arguments = "".join(fragments)
        self.event("response.function_call_arguments.done", **at, arguments=arguments)
        done = {**item, "status": "completed", "arguments": arguments}
        self.event("response.output_item.done", output_index=position, item=done)
        self.output.append(done)

    def body(self) -> bytes:
        response = {"id": "resp_bench", "object": "response", "status": "completed", "model": "m"}
        usage = {
            "input_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 34,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 46,
        }
        start = [sse({"type": "response.created", "sequence_number": 0, "response": response})]
        completed = {**response, "output": self.output, "usage": usage}
        self.event("response.completed", response=completed)
        return b"".join(start + self.frames)


def workloads() -> list[Workload]:
    words = [WORDS[n % len(WORDS)] for n in range(20_000)]

    text = _Body()
    text.message(words)

    calls = _Body()
    fragments = ['{"n": ['] + [f"{n}, " for n in range(1_998)] + ["0]}"]
    for call in range(10):
        calls.message(["Checking", f" {call}."])
        calls.call(fragments)
    said = 10 * (len("".join(fragments)) + len("Checking 0."))

    thinking = _Body()
    thinking.reasoning(words)
    thinking.message(words[:2_000])

    return [
        Workload("20,000 text deltas", text.body(), 20_000, len("".join(words))),
        # each call: its announcement and 2,000 fragments; each message: 2 deltas, and the
        # blank line between message items a delta of its own
        Workload("10 calls × 2,000 fragments, text between", calls.body(), 20_039, said),
        Workload(
            "20,000 reasoning + 2,000 text deltas",
            thinking.body(),
            22_000,
            len("".join(words)) + len("".join(words[:2_000])),
        ),
    ]


def sdk(base_url: str, http: httpx.Client | None = None) -> int:
    client = openai.OpenAI(base_url=base_url + "/v1", api_key=KEY, max_retries=0, http_client=http)
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[str, list[str]] = {}
    count = 0
    stream = client.responses.create(model="m", input="Go.", stream=True)
    for event in stream:
        if event.type == "response.output_text.delta":
            text.append(event.delta)
        elif event.type == "response.reasoning_summary_text.delta":
            reasoning.append(event.delta)
        elif event.type == "response.function_call_arguments.delta":
            calls.setdefault(event.item_id, []).append(event.delta)
        elif event.type == "response.output_item.added" and event.item.type == "function_call":
            calls[event.item.id] = []
        else:
            continue
        count += 1
    client.close()
    return count


def sdk_bare(base_url: str, http: httpx.Client | None = None) -> int:
    """The SDK's cheapest possible consumer: its event loop, every event dropped unread."""
    client = openai.OpenAI(base_url=base_url + "/v1", api_key=KEY, max_retries=0, http_client=http)
    count = 0
    for _ in client.responses.create(model="m", input="Go.", stream=True):
        count += 1
    client.close()
    return count


# --- in memory: the same bytes through an httpx transport, CPU time ----------------------------

MEMORY_URL = "http://bench.invalid"


def _adapter_in_memory(http: httpx.Client) -> int:
    count = 0

    def sink(event: StreamEvent) -> None:
        nonlocal count
        count += 1

    adapter = OpenAIResponsesAdapter(
        base_url=MEMORY_URL + "/v1", model="m", api_key=KEY, http_client=http
    )
    adapter.execute_streaming(request(64 * 2**20), sink)
    return count - 1


def _floor_in_memory(http: httpx.Client) -> int:
    count = 0
    held = b""
    with http.stream("POST", MEMORY_URL + "/floor", json={}) as response:
        for raw in response.iter_bytes():
            frames = (held + raw).split(b"\n\n")
            held = frames.pop()
            for frame in frames:
                json.loads(frame[frame.index(b"data: ") + 6 :])
                count += 1
    return count


def in_memory(rounds: int) -> None:
    """``streaming_overhead.py``'s method: 64 KiB reads from an in-memory transport, the
    process's CPU time, so neither a socket nor another process's load lands in the figure."""
    runs: dict[str, Callable[[httpx.Client], int]] = {
        "adapter": _adapter_in_memory,
        "sdk": lambda http: sdk(MEMORY_URL, http),
        "bare sdk": lambda http: sdk_bare(MEMORY_URL, http),
        "floor": _floor_in_memory,
    }
    print(f"\nOpenAI Responses, in memory: median µs of CPU per delta over {rounds} rounds\n")
    print("| workload | adapter | sdk | bare sdk | floor | adapter ÷ floor | sdk ÷ adapter "
          "| bare sdk ÷ floor |")  # fmt: skip
    print("|---" * 8 + "|")
    for workload in workloads():
        samples: dict[str, list[float]] = {key: [] for key in runs}
        for _ in range(rounds + 1):  # the first round warms up
            for key, run in runs.items():
                with httpx.Client(transport=BodyTransport(workload.body, 65536)) as http:
                    gc.collect()
                    start = time.process_time()
                    run(http)
                    samples[key].append(time.process_time() - start)
        us = {k: statistics.median(v[1:]) / workload.deltas * 1e6 for k, v in samples.items()}
        print(
            f"| {workload.name} | {us['adapter']:.2f} | {us['sdk']:.1f} | {us['bare sdk']:.1f} "
            f"| {us['floor']:.2f} | {us['adapter'] / us['floor']:.2f}× "
            f"| {us['sdk'] / us['adapter']:.1f}× | {us['bare sdk'] / us['floor']:.1f}× |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--in-memory", action="store_true", help="an in-memory transport and CPU time instead"
    )
    args = parser.parse_args()
    if args.in_memory:
        in_memory(args.rounds)
        return
    measure(
        "OpenAI Responses",
        workloads(),
        {
            "adapter": adapter_run(
                lambda url, client: OpenAIResponsesAdapter(
                    base_url=url + "/v1", model="m", api_key=KEY, http_client=client
                )
            ),
            "sdk": sdk,
            "bare sdk": sdk_bare,
            "floor": floor,
        },
        args.rounds,
    )


if __name__ == "__main__":
    main()
