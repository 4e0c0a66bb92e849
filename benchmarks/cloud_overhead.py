"""Per-delta cost of runport's cloud adapters — Bedrock Converse and Claude through Bedrock's
InvokeModel (``application/vnd.amazon.eventstream``), Claude on Vertex AI and Azure OpenAI
(server-sent events) — beside each protocol's floor and the official SDK's loop, on
identical bytes.

Every contender reads the same body from one loopback HTTP server on 127.0.0.1 (boto3 and the
``anthropic`` and ``openai`` SDKs bring their own HTTP clients, so an in-memory transport
cannot be shared). Each contender's client is made once, before the rounds; a round times one
streamed call:

- ``floor``    httpx ``iter_bytes`` and the protocol's framing with nothing else — for the
               eventstream, each message's prelude and its CRC checked, the message's CRC
               checked, its headers decoded and its payload ``json.loads``-ed (and, for
               InvokeModel's ``chunk`` messages, the base64 inside decoded and ``json.loads``-ed
               too); for SSE, CRLFs made LF, split on blank lines and ``json.loads`` (the floor of
               ``anthropic_gemini_overhead.py``);
- ``adapter``  runport's adapter ``.execute_streaming`` with a counting sink (signed with
               SigV4 for Bedrock, a google-auth token for Vertex, ``api-key`` for Azure);
- ``sdk``      the official client's loop, accumulating text and arguments: boto3's
               ``bedrock-runtime`` ``converse_stream``, ``anthropic.AnthropicBedrock`` and
               ``anthropic.AnthropicVertex`` ``messages.create(stream=True)``,
               ``openai.AzureOpenAI`` ``chat.completions.create(stream=True)``.

Workloads per protocol: 20,000 text deltas, and 20,000 tool-argument fragments of one call.
Rounds are interleaved and the median reported, in µs of the calling thread's CPU time per
delta (``time.thread_time``: the server's thread and other processes' load stay out of it).
Not run in CI: timings belong to a quiet machine.

    .venv/bin/python benchmarks/cloud_overhead.py [--rounds 5] [--deltas 20000]
        [--only converse|invoke|vertex|azure]
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import statistics
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import boto3
import httpx
import openai
from botocore.config import Config
from botocore.credentials import Credentials
from google.oauth2.credentials import Credentials as GoogleCredentials

from runport.anthropic import AnthropicMessagesAdapter
from runport.bedrock import BedrockAnthropicAdapter, BedrockConverseAdapter, SigV4Auth
from runport.contracts import CompiledInteraction, ExecutionRequest, Message, StreamEvent
from runport.http import GoogleAuth
from runport.openai import DEFAULT_AZURE_API_VERSION, AzureOpenAIChatAdapter
from runport.ports import RuntimeAdapter

WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]
REGION = "us-west-2"
ACCESS_KEY, SECRET_KEY = "AKIDBENCHMARK", "bench/secret/key"
CREDENTIALS = Credentials(ACCESS_KEY, SECRET_KEY)
MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"
VERTEX_MODEL = "claude-sonnet-4@20250514"
PROJECT = "bench-project"
KEY = "bench-azure-key"
EVENTSTREAM = "application/vnd.amazon.eventstream"
SSE = "text/event-stream"


@dataclass
class Workload:
    name: str
    body: bytes
    deltas: int


# --- the bytes ---------------------------------------------------------------------------------


def _header(name: str, value: str) -> bytes:
    raw = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw


def event_message(event: str, payload: Any) -> bytes:
    """One eventstream ``event`` message, as AWS sends it."""
    headers = (
        _header(":event-type", event)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    data = json.dumps(payload, separators=(",", ":")).encode()
    lengths = struct.pack(">II", 16 + len(headers) + len(data), len(headers))
    message = lengths + struct.pack(">I", zlib.crc32(lengths)) + headers + data
    return message + struct.pack(">I", zlib.crc32(message))


def converse_body(kind: str, pieces: list[str]) -> bytes:
    out = [event_message("messageStart", {"role": "assistant"})]
    if kind == "tool":
        start = {"toolUse": {"toolUseId": "tooluse_bench", "name": "get_weather"}}
        out.append(event_message("contentBlockStart", {"contentBlockIndex": 0, "start": start}))
    for piece in pieces:
        delta = {"text": piece} if kind == "text" else {"toolUse": {"input": piece}}
        out.append(event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": delta}))
    out.append(event_message("contentBlockStop", {"contentBlockIndex": 0}))
    stop = "end_turn" if kind == "text" else "tool_use"
    out.append(event_message("messageStop", {"stopReason": stop}))
    usage = {"inputTokens": 12, "outputTokens": len(pieces), "totalTokens": 12 + len(pieces)}
    out.append(event_message("metadata", {"usage": usage, "metrics": {"latencyMs": 9}}))
    return b"".join(out)


def anthropic_events(kind: str, pieces: list[str]) -> list[dict[str, Any]]:
    message = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 1},
    }
    if kind == "text":
        block: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
    else:
        block = {"type": "tool_use", "id": "toolu_bench", "name": "get_weather", "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
    stop = "end_turn" if kind == "text" else "tool_use"
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": block},
        *({"type": "content_block_delta", "index": 0, "delta": delta} for delta in deltas),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": len(pieces)},
        },
        {"type": "message_stop"},
    ]


def invoke_body(kind: str, pieces: list[str]) -> bytes:
    """InvokeModelWithResponseStream: each Anthropic event base64-encoded in a ``chunk``."""
    return b"".join(
        event_message(
            "chunk",
            {"bytes": base64.b64encode(json.dumps(e, separators=(",", ":")).encode()).decode()},
        )
        for e in anthropic_events(kind, pieces)
    )


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(data, separators=(",", ":")) + "\n\n").encode()


def vertex_body(kind: str, pieces: list[str]) -> bytes:
    """Claude on Vertex AI streams Anthropic's own events."""
    return b"".join(sse(event, event["type"]) for event in anthropic_events(kind, pieces))


_SAFE = {"filtered": False, "severity": "safe"}
_FILTERS = {"hate": _SAFE, "self_harm": _SAFE, "sexual": _SAFE, "violence": _SAFE}


def azure_body(kind: str, pieces: list[str]) -> bytes:
    """Chat completions as an Azure resource streams them: the prompt's filter results first,
    ``content_filter_results`` on every choice."""
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    prompt = [{"prompt_index": 0, "content_filter_results": _FILTERS}]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {
            "content_filter_results": _FILTERS if finish is None else {},
            "index": 0,
            "delta": delta,
            "finish_reason": finish,
        }
        return sse({**base, "choices": [choice], "system_fingerprint": "fp_bench"})

    out = [sse({**base, "choices": [], "prompt_filter_results": prompt})]
    out.append(chunk({"role": "assistant", "content": ""}))
    if kind == "text":
        out += [chunk({"content": piece}) for piece in pieces]
    else:
        call = {"index": 0, "id": "call_bench", "type": "function"}
        out.append(chunk({"tool_calls": [{**call, "function": {"name": "get_weather"}}]}))
        out += [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in pieces
        ]
    out.append(chunk({}, "stop" if kind == "text" else "tool_calls"))
    usage = {"prompt_tokens": 12, "completion_tokens": len(pieces), "total_tokens": 99}
    out.append(sse({**base, "choices": [], "usage": usage}))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def workloads(make: Callable[[str, list[str]], bytes], deltas: int) -> list[Workload]:
    words = [WORDS[n % len(WORDS)] for n in range(deltas)]
    fragments = ['{"n": ['] + [f"{n}, " for n in range(deltas - 2)] + ["0]}"]
    return [
        Workload(f"{deltas:,} text deltas", make("text", words), deltas),
        Workload(f"{deltas:,} tool-argument fragments", make("tool", fragments), deltas),
    ]


# --- floors ------------------------------------------------------------------------------------


def eventstream_messages(chunks: Iterator[bytes]) -> Iterator[tuple[dict[str, str], bytes]]:
    """The eventstream's messages, each checked and decoded with nothing else: the prelude's
    CRC, the message's CRC, the headers (every type's width known), the payload."""
    held = b""
    for piece in chunks:
        data = held + piece if held else piece
        position, available = 0, len(data)
        while available - position >= 12:
            total, length, crc = struct.unpack_from(">III", data, position)
            if zlib.crc32(data[position : position + 8]) != crc:
                raise ValueError("prelude CRC")
            end = position + total
            if end > available:
                break
            if zlib.crc32(data[position : end - 4]) != struct.unpack_from(">I", data, end - 4)[0]:
                raise ValueError("message CRC")
            headers: dict[str, str] = {}
            at, stop = position + 12, position + 12 + length
            while at < stop:
                name_end = at + 1 + data[at]
                name = data[at + 1 : name_end].decode()
                kind = data[name_end]
                at = name_end + 1
                if kind in (6, 7):
                    size = (data[at] << 8) | data[at + 1]
                    headers[name] = data[at + 2 : at + 2 + size].decode()
                    at += 2 + size
                else:
                    at += {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}[kind]
            yield headers, data[stop : end - 4]
            position = end
        held = data[position:]


def converse_floor(client: httpx.Client, url: str) -> int:
    count = 0
    with client.stream("POST", url + "/floor", json={}) as response:
        for _, payload in eventstream_messages(response.iter_bytes()):
            json.loads(payload)
            count += 1
    return count


def invoke_floor(client: httpx.Client, url: str) -> int:
    count = 0
    with client.stream("POST", url + "/floor", json={}) as response:
        for _, payload in eventstream_messages(response.iter_bytes()):
            json.loads(base64.b64decode(json.loads(payload)["bytes"]))
            count += 1
    return count


def sse_floor(client: httpx.Client, url: str) -> int:
    count = 0
    held = b""
    with client.stream("POST", url + "/floor", json={}) as response:
        for raw in response.iter_bytes():
            frames = (held + raw).replace(b"\r\n", b"\n").split(b"\n\n")
            held = frames.pop()
            for frame in frames:
                data = frame[frame.index(b"data: ") + 6 :]
                if data != b"[DONE]":
                    json.loads(data)
                count += 1
    return count


# --- runport -----------------------------------------------------------------------------------

REQUEST = ExecutionRequest(
    interaction=CompiledInteraction(
        compiler="bench/0",
        contract_id="bench",
        contract_version="1",
        messages=[Message(role="user", content="Go.")],
        output_schema={"type": "string"},
        runtime_policy={"max_response_bytes": 64 * 2**20},
    )
)


def streamed(adapter: RuntimeAdapter) -> int:
    count = 0

    def sink(event: StreamEvent) -> None:
        nonlocal count
        count += 1

    adapter.execute_streaming(REQUEST, sink)
    return count


# --- the official clients ----------------------------------------------------------------------


def boto3_converse(client: Any) -> int:
    text: list[str] = []
    arguments: list[str] = []
    answer = client.converse_stream(
        modelId=MODEL, messages=[{"role": "user", "content": [{"text": "Go."}]}]
    )
    for event in answer["stream"]:
        delta = event.get("contentBlockDelta")
        if delta is not None:
            if "text" in delta["delta"]:
                text.append(delta["delta"]["text"])
            else:
                arguments.append(delta["delta"]["toolUse"]["input"])
    return len(text) + len(arguments)


def anthropic_loop(client: Any, model: str) -> int:
    text: list[str] = []
    arguments: list[str] = []
    stream = client.messages.create(
        model=model, max_tokens=64, stream=True, messages=[{"role": "user", "content": "Go."}]
    )
    for event in stream:
        if event.type == "content_block_delta":
            if event.delta.type == "text_delta":
                text.append(event.delta.text)
            elif event.delta.type == "input_json_delta":
                arguments.append(event.delta.partial_json)
    return len(text) + len(arguments)


def azure_loop(client: Any) -> int:
    text: list[str] = []
    arguments: list[str] = []
    stream = client.chat.completions.create(
        model="m", stream=True, messages=[{"role": "user", "content": "Go."}]
    )
    for chunk in stream:
        for choice in chunk.choices:
            if choice.delta is None:
                continue
            if choice.delta.content:
                text.append(choice.delta.content)
            for call in choice.delta.tool_calls or ():
                if call.function is not None and call.function.arguments:
                    arguments.append(call.function.arguments)
    return len(text) + len(arguments)


# --- the server and the table ------------------------------------------------------------------


class Upstream:
    """A loopback server answering every POST with the current body and content type."""

    def __init__(self) -> None:
        self.body = b""
        self.content_type = SSE
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(200)
                self.send_header("Content-Type", owner.content_type)
                self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                self.wfile.write(owner.body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"


@dataclass
class Protocol:
    name: str
    content_type: str
    body: Callable[[str, list[str]], bytes]
    contenders: Callable[[str, httpx.Client], dict[str, Callable[[], int]]]


def converse(url: str, http: httpx.Client) -> dict[str, Callable[[], int]]:
    adapter = BedrockConverseAdapter(
        base_url=url, model=MODEL, auth=SigV4Auth(REGION, credentials=CREDENTIALS), http_client=http
    )
    client = boto3.client(
        "bedrock-runtime",
        region_name=REGION,
        endpoint_url=url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(retries={"total_max_attempts": 1}),
    )
    return {
        "floor": lambda: converse_floor(http, url),
        "adapter": lambda: streamed(adapter),
        "sdk": lambda: boto3_converse(client),
    }


def invoke(url: str, http: httpx.Client) -> dict[str, Callable[[], int]]:
    adapter = BedrockAnthropicAdapter(
        base_url=url, model=MODEL, auth=SigV4Auth(REGION, credentials=CREDENTIALS), http_client=http
    )
    client = anthropic.AnthropicBedrock(
        aws_access_key=ACCESS_KEY,
        aws_secret_key=SECRET_KEY,
        aws_region=REGION,
        base_url=url,
        max_retries=0,
    )
    return {
        "floor": lambda: invoke_floor(http, url),
        "adapter": lambda: streamed(adapter),
        "sdk": lambda: anthropic_loop(client, MODEL),
    }


def vertex(url: str, http: httpx.Client) -> dict[str, Callable[[], int]]:
    token = "ya29.bench-token"
    adapter = AnthropicMessagesAdapter(
        base_url=url,
        model=VERTEX_MODEL,
        project=PROJECT,
        location="us-east5",
        auth=GoogleAuth(GoogleCredentials(token=token)),  # type: ignore[no-untyped-call]
        http_client=http,
    )
    client = anthropic.AnthropicVertex(
        region="us-east5",
        project_id=PROJECT,
        access_token=token,
        base_url=f"{url}/v1",
        max_retries=0,
    )
    return {
        "floor": lambda: sse_floor(http, url),
        "adapter": lambda: streamed(adapter),
        "sdk": lambda: anthropic_loop(client, VERTEX_MODEL),
    }


def azure(url: str, http: httpx.Client) -> dict[str, Callable[[], int]]:
    adapter = AzureOpenAIChatAdapter(base_url=url, model="m", api_key=KEY, http_client=http)
    client = openai.AzureOpenAI(
        azure_endpoint=url, api_key=KEY, api_version=DEFAULT_AZURE_API_VERSION, max_retries=0
    )
    return {
        "floor": lambda: sse_floor(http, url),
        "adapter": lambda: streamed(adapter),
        "sdk": lambda: azure_loop(client),
    }


PROTOCOLS = {
    "converse": Protocol("Bedrock ConverseStream", EVENTSTREAM, converse_body, converse),
    "invoke": Protocol(
        "Bedrock InvokeModelWithResponseStream (Claude)", EVENTSTREAM, invoke_body, invoke
    ),
    "vertex": Protocol("Vertex AI streamRawPredict (Claude)", SSE, vertex_body, vertex),
    "azure": Protocol("Azure OpenAI chat completions", SSE, azure_body, azure),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--only", choices=sorted(PROTOCOLS))
    args = parser.parse_args()
    upstream = Upstream()
    print(f"median µs of CPU per delta over {args.rounds} interleaved rounds\n")
    print("| protocol | workload | floor | runport | SDK | runport ÷ floor | SDK ÷ runport |")
    print("|---|---|---|---|---|---|---|")
    with httpx.Client() as http:
        for key, protocol in PROTOCOLS.items():
            if args.only not in (None, key):
                continue
            upstream.content_type = protocol.content_type
            runs = protocol.contenders(upstream.base_url, http)
            for workload in workloads(protocol.body, args.deltas):
                upstream.body = workload.body
                for run in runs.values():
                    run()  # warm-up
                samples: dict[str, list[float]] = {name: [] for name in runs}
                for _ in range(args.rounds):
                    for name, run in runs.items():
                        gc.collect()
                        start = time.thread_time()
                        run()
                        samples[name].append(time.thread_time() - start)
                micro = {
                    name: statistics.median(times) / workload.deltas * 1e6
                    for name, times in samples.items()
                }
                print(
                    f"| {protocol.name} | {workload.name} | {micro['floor']:.2f} "
                    f"| {micro['adapter']:.2f} | {micro['sdk']:.2f} "
                    f"| {micro['adapter'] / micro['floor']:.2f}× "
                    f"| {micro['sdk'] / micro['adapter']:.1f}× |",
                    flush=True,
                )
    upstream.server.shutdown()


if __name__ == "__main__":
    main()
