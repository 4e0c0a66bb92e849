"""Per-delta cost of the Ollama and Cohere adapters' streaming paths, beside each official
client (``ollama``, ``cohere``'s ``ClientV2``) and a floor, on identical bytes.

Every contender reads the same body through an in-memory ``httpx`` transport in 64 KiB reads
(both official clients take an httpx client or its keywords, so one transport serves all):

- ``adapter``  ``OllamaChatAdapter`` / ``CohereChatAdapter`` ``.execute_streaming`` with a
               counting sink;
- ``sdk``      ``ollama.Client.chat(stream=True)`` / ``ClientV2.chat_stream``, accumulating
               text, thinking and call arguments;
- ``floor``    httpx ``iter_bytes`` + split on newlines (Ollama's lines) or blank lines
               (Cohere's events) + ``json.loads``: the least any consumer that decodes every
               line or event can do.

Workloads: 20,000 text deltas; 20,000 thinking deltas then 2,000 text deltas; for Ollama 5,000
whole tool calls (a line each), for Cohere 20,000 tool-argument fragments over 10 calls. Rounds
are interleaved and the median reported. Not run in CI: timings belong to a quiet machine.

    .venv/bin/python benchmarks/ollama_cohere_overhead.py [--rounds 5] [--only ollama|cohere]
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
from cohere import ClientV2
from ollama import Client

from runport.cohere import CohereChatAdapter
from runport.contracts import CompiledInteraction, ExecutionRequest, Message, StreamEvent
from runport.ollama import OllamaChatAdapter
from runport.ports import RuntimeAdapter

MODEL = "bench-model"
WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]
READ = 64 * 1024
ASKED = [{"role": "user", "content": "hi"}]


@dataclass
class Workload:
    provider: str
    name: str
    body: bytes
    deltas: int


# -- Ollama's lines -----------------------------------------------------------------------------


def _line(message: dict[str, Any], **more: Any) -> bytes:
    chunk = {"model": MODEL, "created_at": "2026-03-01T10:00:00.123456789Z", "done": False}
    return json.dumps({**chunk, "message": {"role": "assistant", **message}, **more}).encode()


def _lines(messages: list[dict[str, Any]]) -> bytes:
    done = _line({"content": ""}, done=True, done_reason="stop", prompt_eval_count=9)
    return b"\n".join([*(_line(m) for m in messages), done]) + b"\n"


def ollama_workloads() -> list[Workload]:
    text = [{"content": WORDS[n % 10]} for n in range(20_000)]
    thinking = [{"content": "", "thinking": WORDS[n % 10]} for n in range(20_000)]
    calls = [
        {"content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"n": n}}}]}
        for n in range(5_000)
    ]
    return [
        Workload("ollama", "20,000 text deltas", _lines(text), 20_000),
        Workload("ollama", "20,000 thinking + 2,000 text", _lines(thinking + text[:2000]), 22_000),
        Workload("ollama", "5,000 whole tool calls", _lines(calls), 5_000),
    ]


# -- Cohere's events ----------------------------------------------------------------------------


def _event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def _delta(kind: str, index: int, **message: Any) -> bytes:
    return _event({"type": kind, "index": index, "delta": {"message": message}})


def _content(index: int, kind: str, pieces: list[str]) -> list[bytes]:
    start = _delta("content-start", index, content={"type": kind, kind: ""})
    deltas = [_delta("content-delta", index, content={kind: piece}) for piece in pieces]
    return [start, *deltas, _event({"type": "content-end", "index": index})]


def _events(blocks: list[bytes]) -> bytes:
    begin = _event({"type": "message-start", "id": "m", "delta": {"message": {}}})
    usage = {"tokens": {"input_tokens": 9, "output_tokens": 9}}
    end = _event({"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": usage}})
    return b"".join([begin, *blocks, end])


def cohere_workloads() -> list[Workload]:
    words = [WORDS[n % 10] for n in range(20_000)]
    calls: list[bytes] = []
    for number in range(10):
        call = {"id": f"f_{number}", "type": "function", "function": {"name": "f"}}
        calls.append(_delta("tool-call-start", number, tool_calls=call))
        pieces = ['{"a": "'] + ["x"] * 1998 + ['"}']
        for piece in pieces:
            function = {"function": {"arguments": piece}}
            calls.append(_delta("tool-call-delta", number, tool_calls=function))
        calls.append(_event({"type": "tool-call-end", "index": number}))
    thinking = _content(0, "thinking", words) + _content(1, "text", words[:2000])
    return [
        Workload("cohere", "20,000 text deltas", _events(_content(0, "text", words)), 20_000),
        Workload("cohere", "20,000 thinking + 2,000 text", _events(thinking), 22_000),
        Workload("cohere", "20,000 tool-argument fragments", _events(calls), 20_000),
    ]


# -- the contenders -----------------------------------------------------------------------------


def transport(body: bytes, kind: str) -> httpx.MockTransport:
    def reads() -> Iterator[bytes]:
        for start in range(0, len(body), READ):
            yield body[start : start + READ]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": kind}, content=reads())

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
KINDS = {"ollama": "application/x-ndjson", "cohere": "text/event-stream"}


def run_adapter(provider: str, body: bytes) -> int:
    count = 0

    def sink(event: StreamEvent) -> None:
        nonlocal count
        count += 1

    client = httpx.Client(transport=transport(body, KINDS[provider]))
    adapter: RuntimeAdapter
    if provider == "ollama":
        adapter = OllamaChatAdapter(model=MODEL, http_client=client)
    else:
        adapter = CohereChatAdapter(model=MODEL, api_key="bench", http_client=client)
    adapter.execute_streaming(REQUEST, sink)
    client.close()
    return count


def run_sdk(provider: str, body: bytes) -> int:
    text: list[str] = []
    thinking: list[str] = []
    arguments: list[str] = []
    if provider == "ollama":
        client = Client(host="http://ollama.invalid", transport=transport(body, KINDS[provider]))
        for chunk in client.chat(model=MODEL, messages=ASKED, stream=True):
            if chunk.message.content:
                text.append(chunk.message.content)
            if chunk.message.thinking:
                thinking.append(chunk.message.thinking)
            for call in chunk.message.tool_calls or ():
                arguments.append(json.dumps(call.function.arguments))
        client.close()
    else:
        with httpx.Client(transport=transport(body, KINDS[provider])) as http:
            cohere = ClientV2(api_key="bench", base_url="http://cohere.invalid", httpx_client=http)
            for event in cohere.chat_stream(model=MODEL, messages=ASKED):
                if event.type == "content-delta":
                    piece = event.delta.message.content
                    (text if piece.text is not None else thinking).append(
                        piece.text or piece.thinking or ""
                    )
                elif event.type == "tool-call-delta":
                    arguments.append(event.delta.message.tool_calls.function.arguments)
    return len(text) + len(thinking) + len(arguments)


def run_floor(provider: str, body: bytes) -> int:
    count = 0
    separator = b"\n" if provider == "ollama" else b"\n\n"
    with (
        httpx.Client(transport=transport(body, KINDS[provider])) as client,
        client.stream("POST", "http://upstream.invalid/chat", content=b"{}") as response,
    ):
        pending = b""
        for piece in response.iter_bytes():
            *frames, pending = (pending + piece).split(separator)
            for frame in frames:
                if provider == "cohere":
                    frame = frame.partition(b"data: ")[2]
                json.loads(frame)
                count += 1
    return count


def timed(run: Callable[[str, bytes], int], workload: Workload) -> float:
    gc.collect()
    start = time.perf_counter()
    run(workload.provider, workload.body)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=["ollama", "cohere"])
    arguments = parser.parse_args()
    contenders = {"adapter": run_adapter, "sdk": run_sdk, "floor": run_floor}
    print("| provider | workload | adapter | sdk | floor | adapter ÷ floor | sdk ÷ adapter |")
    print("|---|---|---|---|---|---|---|")
    for workload in [*ollama_workloads(), *cohere_workloads()]:
        if arguments.only not in (None, workload.provider):
            continue
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(arguments.rounds):
            for name, run in contenders.items():
                times[name].append(timed(run, workload))
        micro = {
            name: statistics.median(values) / workload.deltas * 1e6
            for name, values in times.items()
        }
        print(
            f"| {workload.provider} | {workload.name} | {micro['adapter']:.2f} | "
            f"{micro['sdk']:.2f} | {micro['floor']:.2f} | "
            f"{micro['adapter'] / micro['floor']:.2f}× | {micro['sdk'] / micro['adapter']:.1f}× |"
        )


if __name__ == "__main__":
    main()
