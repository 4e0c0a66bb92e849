"""Per-delta cost and peak memory of the Anthropic and Gemini adapters' streaming paths, side
by side with each official SDK's stream loop and a floor, on identical bytes.

Every contender reads the same SSE body from the same loopback HTTP server on 127.0.0.1
(Anthropic's SDK brings its own HTTP client, so an in-memory transport cannot be shared):

- ``adapter``  ``AnthropicMessagesAdapter`` / ``GeminiAdapter`` ``.execute_streaming`` with a
               counting sink;
- ``sdk``      ``anthropic``'s ``messages.create(stream=True)`` loop / ``google-genai``'s
               ``generate_content_stream`` loop, accumulating text and arguments;
- ``bare sdk`` (Anthropic) the SDK's event loop with every event dropped unread: the least
               any SDK consumer pays, so ``bare sdk ÷ floor`` bounds how much faster than the
               SDK even a zero-cost adapter could be;
- ``floor``    httpx ``iter_bytes`` + split on blank lines + ``json.loads``: the least any
               consumer that decodes every frame can do.

Workloads: 20,000 text deltas; 20,000 tool-argument fragments (Anthropic; a Gemini call
arrives whole, so its second workload is 20,000 chunks of three text parts); 2,000 deltas of
4 KiB (past the default 8 MiB bound, so ``max_response_bytes`` is raised for it); 20,000
reasoning deltas then 2,000 text deltas (Anthropic ``thinking_delta``s closed by a signature,
Gemini ``thought: true`` parts), whose per-delta cost is read against the text workload's.
Rounds are interleaved and the median reported; peak memory is traced in a separate pass and
given as a multiple of the turn's output. Not run in CI: timings belong to a quiet machine.

    .venv/bin/python benchmarks/anthropic_gemini_overhead.py [--rounds 5] [--only anthropic]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import httpx
from google import genai
from google.genai import types

from runport.anthropic import AnthropicMessagesAdapter
from runport.contracts import CompiledInteraction, ExecutionRequest, Message, StreamEvent
from runport.gemini import GeminiAdapter
from runport.ports import RuntimeAdapter

KEY = "bench-key"
WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]
KIB = "0123456789abcdef" * 256


@dataclass
class Workload:
    name: str
    body: bytes
    deltas: int
    output_bytes: int


def sse(data: dict[str, Any], name: str | None = None, end: str = "\n\n") -> bytes:
    head = f"event: {name}\n" if name else ""
    return (head + "data: " + json.dumps(data, separators=(",", ":")) + end).encode()


# --- Anthropic ---------------------------------------------------------------------------------


def anthropic_body(blocks: list[tuple[str, list[str]]]) -> bytes:
    usage = {"input_tokens": 12, "output_tokens": 1}
    message = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    out = [sse({"type": "message_start", "message": message}, "message_start")]
    for index, (kind, pieces) in enumerate(blocks):
        if kind == "text":
            block: dict[str, Any] = {"type": "text", "text": ""}
        elif kind == "thinking":
            block = {"type": "thinking", "thinking": ""}
        else:
            block = {"type": "tool_use", "id": f"toolu_{index}", "name": "get_weather", "input": {}}
        out.append(
            sse(
                {"type": "content_block_start", "index": index, "content_block": block},
                "content_block_start",
            )
        )
        for piece in pieces:
            if kind == "text":
                delta = {"type": "text_delta", "text": piece}
            elif kind == "thinking":
                delta = {"type": "thinking_delta", "thinking": piece}
            else:
                delta = {"type": "input_json_delta", "partial_json": piece}
            out.append(
                sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
            )
        if kind == "thinking":
            signature = {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkBench"}
            out.append(
                sse(
                    {"type": "content_block_delta", "index": index, "delta": signature},
                    "content_block_delta",
                )
            )
        out.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    out.append(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 34},
            },
            "message_delta",
        )
    )
    out.append(sse({"type": "message_stop"}, "message_stop"))
    return b"".join(out)


def anthropic_workloads() -> list[Workload]:
    words = [WORDS[n % len(WORDS)] for n in range(20_000)]
    fragments = ['{"n": ['] + [f"{n}, " for n in range(19_998)] + ["0]}"]
    kibs = [KIB[n % 16 :] + KIB[: n % 16] for n in range(2_000)]
    return [
        Workload(
            "20,000 text deltas", anthropic_body([("text", words)]), 20_000, len("".join(words))
        ),
        Workload(
            "20,000 tool-argument fragments",
            anthropic_body([("tool", fragments)]),
            20_000,
            len("".join(fragments)),
        ),
        Workload(
            "2,000 deltas of 4 KiB", anthropic_body([("text", kibs)]), 2_000, len("".join(kibs))
        ),
        Workload(
            "20,000 thinking + 2,000 text deltas",
            anthropic_body([("thinking", words), ("text", words[:2_000])]),
            22_000,
            len("".join(words)) + len("".join(words[:2_000])),
        ),
    ]


def anthropic_sdk(base_url: str) -> int:
    client = anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=0)
    text: list[str] = []
    thinking: list[str] = []
    calls: dict[int, list[str]] = {}
    count = 0
    stream = client.messages.create(
        model="m", max_tokens=64, stream=True, messages=[{"role": "user", "content": "Go."}]
    )
    for event in stream:
        if event.type == "content_block_delta":
            if event.delta.type == "text_delta":
                text.append(event.delta.text)
            elif event.delta.type == "thinking_delta":
                thinking.append(event.delta.thinking)
            elif event.delta.type == "signature_delta":
                continue  # no event in runport either: the block's signature
            elif event.delta.type == "input_json_delta":
                calls.setdefault(event.index, []).append(event.delta.partial_json)
            count += 1
    client.close()
    return count


def anthropic_sdk_bare(base_url: str) -> int:
    """The SDK's cheapest possible consumer: its event loop, every event dropped unread."""
    client = anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=0)
    count = 0
    stream = client.messages.create(
        model="m", max_tokens=64, stream=True, messages=[{"role": "user", "content": "Go."}]
    )
    for _ in stream:
        count += 1
    client.close()
    return count


# --- Gemini ------------------------------------------------------------------------------------


def gemini_body(chunks: list[list[str]], thoughts: int = 0) -> bytes:
    """The first ``thoughts`` chunks' parts are thoughts (``thought: true``)."""
    out = []
    for position, texts in enumerate(chunks):
        thought = {"thought": True} if position < thoughts else {}
        candidate: dict[str, Any] = {
            "content": {"parts": [{"text": t, **thought} for t in texts], "role": "model"},
            "index": 0,
        }
        if position == len(chunks) - 1:
            candidate["finishReason"] = "STOP"
        usage = {
            "promptTokenCount": 12,
            "candidatesTokenCount": position + 1,
            "totalTokenCount": 13 + position,
        }
        out.append(
            sse(
                {
                    "candidates": [candidate],
                    "usageMetadata": usage,
                    "modelVersion": "gemini-bench",
                    "responseId": "r",
                },
                end="\r\n\r\n",
            )
        )
    return b"".join(out)


def gemini_workloads() -> list[Workload]:
    words = [WORDS[n % len(WORDS)] for n in range(20_000)]
    kibs = [KIB[n % 16 :] + KIB[: n % 16] for n in range(2_000)]
    triples = [[w, w, w] for w in words]
    return [
        Workload(
            "20,000 text chunks", gemini_body([[w] for w in words]), 20_000, len("".join(words))
        ),
        Workload("20,000 chunks of 3 parts", gemini_body(triples), 60_000, 3 * len("".join(words))),
        Workload(
            "2,000 chunks of 4 KiB", gemini_body([[k] for k in kibs]), 2_000, len("".join(kibs))
        ),
        Workload(
            "20,000 thought + 2,000 text chunks",
            gemini_body([[w] for w in words] + [[w] for w in words[:2_000]], thoughts=20_000),
            22_000,
            len("".join(words)) + len("".join(words[:2_000])),
        ),
    ]


def gemini_sdk(base_url: str) -> int:
    client = genai.Client(
        api_key=KEY, http_options=types.HttpOptions(base_url=base_url, api_version="v1beta")
    )
    text: list[str] = []
    thoughts: list[str] = []
    count = 0
    for chunk in client.models.generate_content_stream(model="m", contents="Go."):
        for candidate in chunk.candidates or []:
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.text is not None:
                    (thoughts if part.thought else text).append(part.text)
                    count += 1
    client.close()
    return count


# --- shared ------------------------------------------------------------------------------------


class Upstream:
    """A loopback server answering every POST with the current body (Content-Length framed)."""

    def __init__(self) -> None:
        self.body = b""
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                self.wfile.write(owner.body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"


def request(limit: int) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="bench/0",
            contract_id="bench",
            contract_version="1",
            messages=[Message(role="user", content="Go.")],
            output_schema={"type": "string"},
            runtime_policy={"max_response_bytes": limit},
        )
    )


def adapter_run(make: Callable[[str, httpx.Client], RuntimeAdapter]) -> Callable[[str], int]:
    def run(base_url: str) -> int:
        count = 0

        def sink(event: StreamEvent) -> None:
            nonlocal count
            count += 1

        with httpx.Client() as client:
            make(base_url, client).execute_streaming(request(64 * 2**20), sink)
        return count - 1

    return run


def floor(base_url: str) -> int:
    count = 0
    held = b""
    with httpx.Client() as client, client.stream("POST", base_url + "/floor", json={}) as response:
        for raw in response.iter_bytes():
            frames = (held + raw).replace(b"\r\n", b"\n").split(b"\n\n")
            held = frames.pop()
            for frame in frames:
                json.loads(frame[frame.index(b"data: ") + 6 :])
                count += 1
    return count


def measure(
    name: str, workloads: list[Workload], runs: dict[str, Callable[[str], int]], rounds: int
) -> None:
    upstream = Upstream()
    print(f"\n{name}: median µs per delta over {rounds} rounds\n")
    bare = "bare sdk" in runs
    print(
        "| workload | adapter | sdk | floor | adapter ÷ floor | sdk ÷ adapter "
        + ("| bare sdk | bare sdk ÷ floor " if bare else "")
        + "| adapter peak | ÷ output |"
    )
    print("|---" * (10 if bare else 8) + "|")
    for workload in workloads:
        upstream.body = workload.body
        for run in runs.values():
            run(upstream.base_url)  # warm-up
        samples: dict[str, list[float]] = {key: [] for key in runs}
        for _ in range(rounds):
            for key, run in runs.items():
                gc.collect()
                start = time.perf_counter()
                run(upstream.base_url)
                samples[key].append(time.perf_counter() - start)
        micros = {key: statistics.median(s) / workload.deltas * 1e6 for key, s in samples.items()}
        gc.collect()
        tracemalloc.start()
        runs["adapter"](upstream.base_url)
        memory = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"| {workload.name} | {micros['adapter']:.2f} | {micros['sdk']:.2f} "
            f"| {micros['floor']:.2f} | {micros['adapter'] / micros['floor']:.2f}× "
            f"| {micros['sdk'] / micros['adapter']:.1f}× "
            + (
                f"| {micros['bare sdk']:.2f} | {micros['bare sdk'] / micros['floor']:.1f}× "
                if bare
                else ""
            )
            + f"| {memory / 2**20:.1f} MiB "
            f"| {memory / workload.output_bytes:.2f}× |"
        )
    upstream.server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=["anthropic", "gemini"])
    args = parser.parse_args()
    if args.only != "gemini":
        measure(
            "Anthropic Messages",
            anthropic_workloads(),
            {
                "adapter": adapter_run(
                    lambda url, client: AnthropicMessagesAdapter(
                        base_url=url, model="m", api_key=KEY, http_client=client
                    )
                ),
                "sdk": anthropic_sdk,
                "bare sdk": anthropic_sdk_bare,
                "floor": floor,
            },
            args.rounds,
        )
    if args.only != "anthropic":
        measure(
            "Gemini generateContent",
            gemini_workloads(),
            {
                "adapter": adapter_run(
                    lambda url, client: GeminiAdapter(
                        base_url=url, model="m", api_key=KEY, http_client=client
                    )
                ),
                "sdk": gemini_sdk,
                "floor": floor,
            },
            args.rounds,
        )


if __name__ == "__main__":
    main()
