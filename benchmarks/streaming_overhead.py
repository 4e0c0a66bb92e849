"""Per-delta cost and peak memory of the OpenAI adapter's streaming path, on identical bytes.

Every contender reads the same SSE body through the same in-memory httpx transport (no
network, so only the consumer's own work is measured):

- ``adapter``       runport's ``OpenAIChatAdapter.execute_streaming`` with a counting sink;
- ``sdk``           the official ``openai`` SDK's ``create(stream=True)`` loop, accumulating
                    text and tool-call arguments by index;
- ``floor``         ``iter_bytes`` + split on blank lines + ``json.loads``: the least any
                    consumer that decodes every frame can do;
- ``sse+loads``     runport's ``SSEDecoder`` + ``json.loads`` (the parser alone, vs the floor);
- ``httpx-sse``     ``httpx_sse.EventSource.iter_sse`` + ``json.loads`` (the library candidate).

Workloads (benchmarks/README.md / issue 3): 20,000 text deltas; 20,000 fragments of 3 interleaved
tool
calls; 2,000 text deltas of 4 KiB (about 8.9 MB of body, past the default 8 MiB bound, so
``max_response_bytes`` is raised for it); 20,000 reasoning deltas then 2,000 text deltas (issue
23), in DeepSeek's shape (``{"content": null, "reasoning_content": …}``), whose per-delta cost
is also given as a multiple of the text workload's. Reads are 64 KiB, as httpcore's socket
reads are; ``--frame-reads`` serves one SSE frame per read instead, as a slow live stream
arrives.

Times are the process's CPU time (``time.process_time``), not wall time: on a shared machine
another process's work lands in wall time but not here. Repetitions are interleaved (each
round runs every contender once) and the median is reported, so drift in machine load hits
all contenders alike. Peak memory is traced in a
separate pass (tracemalloc slows the code it watches) and given as a multiple of the turn's
output size. Not run in CI: timings belong to a quiet machine, not to a test verdict.

    .venv/bin/python benchmarks/streaming_overhead.py [--rounds 7] [--frame-reads]

``httpx-sse`` is measured when installed (it is not a dependency); the ``openai`` SDK is in
the dev group.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai

from runport.contracts import CompiledInteraction, ExecutionRequest, Message, StreamEvent
from runport.http import SSEDecoder
from runport.openai import OpenAIChatAdapter

try:
    import httpx_sse
except ImportError:  # optional: only needed for the parser comparison
    httpx_sse = None

BASE_URL = "http://bench.invalid/v1"
ENVELOPE = (
    '{"id":"chatcmpl-AbCdEf0123456789","object":"chat.completion.chunk","created":1733000000,'
    '"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":'
)


@dataclass
class Workload:
    name: str
    body: bytes
    deltas: int
    output_bytes: int
    max_response_bytes: int


def frame(choices: str) -> bytes:
    return b"data: " + (ENVELOPE + choices + "}").encode() + b"\n\n"


def text_frame(text: str) -> bytes:
    content = json.dumps(text)
    return frame(
        '[{"index":0,"delta":{"content":' + content + '},"logprobs":null,"finish_reason":null}]'
    )


def reasoning_frame(text: str) -> bytes:
    reasoning = json.dumps(text)
    return frame(
        '[{"index":0,"delta":{"content":null,"reasoning_content":'
        + reasoning
        + '},"logprobs":null,"finish_reason":null}]'
    )


def tail() -> bytes:
    finish = frame('[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]')
    usage = frame('[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}')
    return finish + usage + b"data: [DONE]\n\n"


def text_workload(name: str, count: int, piece: Callable[[int], str]) -> Workload:
    frames = [frame('[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]')]
    size = 0
    for number in range(count):
        text = piece(number)
        size += len(text.encode())
        frames.append(text_frame(text))
    body = b"".join(frames) + tail()
    return Workload(name, body, count, size, max(len(body) * 2, 8 * 1024 * 1024))


def tool_workload(count: int) -> Workload:
    frames = []
    size = 0
    for number in range(count):
        index = number % 3
        if number < 3:
            fragment = {
                "index": index,
                "id": f"call_{index}abc",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ""},
            }
        else:
            arguments = '{"n": [' if number < 6 else f"{number}, "
            size += len(arguments)
            fragment = {"index": index, "function": {"arguments": arguments}}
        delta = json.dumps({"tool_calls": [fragment]}, separators=(",", ":"))
        frames.append(
            frame('[{"index":0,"delta":' + delta + ',"logprobs":null,"finish_reason":null}]')
        )
    body = b"".join(frames) + tail()
    return Workload("3 interleaved tool calls", body, count, size, 8 * 1024 * 1024)


def reasoning_workload(thoughts: int, answers: int) -> Workload:
    frames = [frame('[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]')]
    size = 0
    for number in range(thoughts):
        text = WORDS[number % len(WORDS)]
        size += len(text.encode())
        frames.append(reasoning_frame(text))
    for number in range(answers):
        text = WORDS[number % len(WORDS)]
        size += len(text.encode())
        frames.append(text_frame(text))
    body = b"".join(frames) + tail()
    return Workload(
        "20,000 reasoning + 2,000 text deltas",
        body,
        thoughts + answers,
        size,
        max(len(body) * 2, 8 * 1024 * 1024),
    )


WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]


def workloads() -> list[Workload]:
    kib = "0123456789abcdef" * 256
    return [
        text_workload("20,000 text deltas", 20_000, lambda n: WORDS[n % len(WORDS)]),
        tool_workload(20_000),
        text_workload("2,000 deltas of 4 KiB", 2_000, lambda n: kib[n % 16 :] + kib[: n % 16]),
        reasoning_workload(20_000, 2_000),
    ]


class BodyTransport(httpx.BaseTransport):
    """Serves the prepared body in fixed-size reads, as a socket would."""

    def __init__(self, body: bytes, read_size: int | None) -> None:
        self.body = body
        self.read_size = read_size

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        return httpx.Response(
            200, headers={"Content-Type": "text/event-stream"}, content=self._reads()
        )

    def _reads(self) -> Iterator[bytes]:
        view = memoryview(self.body)
        if self.read_size is None:  # one SSE frame per read
            start = 0
            while start < len(view):
                end = self.body.index(b"\n\n", start) + 2
                yield bytes(view[start:end])
                start = end
            return
        for start in range(0, len(view), self.read_size):
            yield bytes(view[start : start + self.read_size])


REQUEST_MESSAGES = [{"role": "user", "content": "Go."}]


def run_adapter(client: httpx.Client, workload: Workload) -> int:
    adapter = OpenAIChatAdapter(
        base_url=BASE_URL,
        model="m",
        http_client=client,
        max_response_bytes=workload.max_response_bytes,
    )
    request = ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="bench/0",
            contract_id="bench",
            contract_version="1",
            messages=[Message(role="user", content="Go.")],
            output_schema={"type": "string"},
            runtime_policy={"max_response_bytes": workload.max_response_bytes},
        )
    )
    count = 0

    def sink(event: StreamEvent) -> None:
        nonlocal count
        count += 1

    adapter.execute_streaming(request, sink)
    return count - 1


def run_sdk(client: httpx.Client, workload: Workload) -> int:
    sdk = openai.OpenAI(api_key="unused", base_url=BASE_URL, http_client=client, max_retries=0)
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, list[str]] = {}
    count = 0
    stream = sdk.chat.completions.create(model="m", messages=REQUEST_MESSAGES, stream=True)  # type: ignore[arg-type]
    for chunk in stream:
        for choice in chunk.choices:
            thought = getattr(choice.delta, "reasoning_content", None)  # an extra field
            if thought:
                reasoning.append(thought)
                count += 1
            if choice.delta.content:
                text.append(choice.delta.content)
                count += 1
            for fragment in choice.delta.tool_calls or []:
                arguments = fragment.function.arguments if fragment.function else None
                calls.setdefault(fragment.index, []).append(arguments or "")
                count += 1
    "".join(text)
    return count


def _post(client: httpx.Client) -> Any:
    return client.stream("POST", BASE_URL + "/chat/completions", json={"stream": True})


def run_floor(client: httpx.Client, workload: Workload) -> int:
    count = 0
    held = b""
    with _post(client) as response:
        for raw in response.iter_bytes():
            events = (held + raw).split(b"\n\n")
            held = events.pop()
            for event in events:
                data = event[6:]
                if data == b"[DONE]":
                    return count
                json.loads(data)
                count += 1
    return count


def run_sse_loads(client: httpx.Client, workload: Workload) -> int:
    count = 0
    decoder = SSEDecoder()
    with _post(client) as response:
        for raw in response.iter_bytes():
            for _, data in decoder.feed(raw):
                if data == b"[DONE]":
                    return count
                json.loads(data)
                count += 1
    return count


def run_httpx_sse(client: httpx.Client, workload: Workload) -> int:
    assert httpx_sse is not None
    count = 0
    with _post(client) as response:
        for event in httpx_sse.EventSource(response).iter_sse():
            if event.data == "[DONE]":
                return count
            json.loads(event.data)
            count += 1
    return count


CONTENDERS: dict[str, Callable[[httpx.Client, Workload], int]] = {
    "adapter": run_adapter,
    "sdk": run_sdk,
    "floor": run_floor,
    "sse+loads": run_sse_loads,
}
if httpx_sse is not None:
    CONTENDERS["httpx-sse"] = run_httpx_sse


def timed(
    run: Callable[[httpx.Client, Workload], int], workload: Workload, reads: int | None
) -> float:
    with httpx.Client(transport=BodyTransport(workload.body, reads)) as client:
        gc.collect()
        start = time.process_time()
        run(client, workload)
        return time.process_time() - start


def peak(
    run: Callable[[httpx.Client, Workload], int], workload: Workload, reads: int | None
) -> int:
    with httpx.Client(transport=BodyTransport(workload.body, reads)) as client:
        gc.collect()
        tracemalloc.start()
        try:
            run(client, workload)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--frame-reads", action="store_true", help="one SSE frame per read")
    args = parser.parse_args()
    reads = None if args.frame_reads else 64 * 1024
    names = list(CONTENDERS)
    read_size = "one frame" if reads is None else "64 KiB"
    print(f"reads: {read_size}; rounds: {args.rounds}; median µs of CPU per delta")
    print()
    print(
        "| workload | "
        + " | ".join(names)
        + " | adapter ÷ floor | sdk ÷ floor | adapter peak | ÷ output |"
    )
    print("|---" * (len(names) + 5) + "|")
    per_delta: dict[str, float] = {}
    for workload in workloads():
        for name in names:  # warm-up, and a check that every contender saw every delta
            counted = CONTENDERS[name](
                httpx.Client(transport=BodyTransport(workload.body, reads)), workload
            )
            # The floor also decodes the role, finish and usage frames.
            assert 0 <= counted - workload.deltas <= 3, (name, counted, workload.deltas)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(args.rounds):
            for name in names:
                samples[name].append(timed(CONTENDERS[name], workload, reads))
        micros = {name: statistics.median(samples[name]) / workload.deltas * 1e6 for name in names}
        per_delta[workload.name] = micros["adapter"]
        memory = peak(run_adapter, workload, reads)
        cells = " | ".join(f"{micros[name]:.2f}" for name in names)
        print(
            f"| {workload.name} | {cells} | {micros['adapter'] / micros['floor']:.2f}× | "
            f"{micros['sdk'] / micros['floor']:.1f}× | {memory / 2**20:.1f} MiB | "
            f"{memory / workload.output_bytes:.2f}× |"
        )
    text, mixed = per_delta["20,000 text deltas"], per_delta["20,000 reasoning + 2,000 text deltas"]
    print()
    print(f"adapter, reasoning workload ÷ text workload per delta: {mixed / text:.2f}×")


if __name__ == "__main__":
    main()
