"""What the provider did itself, priced (issue 40): the per-frame CPU of a citation and of a
server tool beside a tool-call fragment, and the peak memory of a 4 MB generated image, each
through the Responses API adapter beside the official ``openai`` SDK's
``responses.create(stream=True)`` loop on the same bytes, in one process (and a Gemini image
through ``GeminiAdapter`` beside ``google-genai``).

- **Per frame.** Three bodies of about 20,000 frames, shaped as OpenAI sends them
  (``sequence_number``, item ids, ``obfuscation`` padding, the ``done`` frames around each
  item): ten function calls of 2,000 ``function_call_arguments.delta`` fragments (the bar);
  2,000 messages of ten sentences, each sentence cited by an ``output_text.annotation.added``
  url citation after the delta (20,000 citation frames of 32,000);
  4,000 ``web_search_call`` items, each ``output_item.added``, ``web_search_call.in_progress``
  / ``searching`` / ``completed`` and ``output_item.done`` (five frames, a ``ServerToolCall``
  and a ``ServerToolResult``). Median µs of CPU per frame over interleaved rounds; the bar is
  citation ÷ fragment and server tool ÷ fragment ≤ 1. Measured twice: with the collector as
  the process left it, then with the objects alive before the runs frozen (``gc.freeze``). A
  turn's kept citations (three objects the cyclic collector tracks, each) can start a full
  collection, and a full collection walks every object alive: in this process, which has
  imported the ``openai`` SDK and its thousands of models for the side-by-side loop, one
  costs about 0.15 s of CPU (0.25–0.4 s for ``gc.collect()`` here, under 1 ms in a bare
  interpreter). Whether one lands in a run depends on the heap, not on the citations' own
  cost; frozen, the collector walks only what the runs made. Then the Anthropic adapter,
  frozen alike, beside the same floor (no SDK loop): 20,000 ``input_json_delta`` fragments
  (the bar), 20,000 ``citations_delta`` frames, 2,000 web searches (a ``server_tool_use``
  block and its ``web_search_tool_result``).
- **A 4 MB image.** One ``image_generation_call``: two ``partial_image`` previews of 1 MB,
  then the 4 MB image (base64, 5.6 MB) in ``output_item.done`` and again in
  ``response.completed``, as the API repeats it; and the same image as Gemini streams it,
  an ``inlineData`` part in a chunk of its own, through ``GeminiAdapter`` beside
  ``google-genai``'s ``generate_content_stream`` loop. Peak traced memory (``tracemalloc``)
  of the whole run, against the image's base64 size (what a receipt holds), its bytes, and
  two floors on the same bytes: every frame parsed and dropped (``floor (parsed)``), and
  every frame parsed with the image kept as any reader must keep it (``floor (kept)``). The
  bar is ≤ 1.25× the image; a reader that parses whole frames cannot get under its frame's
  bytes plus what they parse to, twice the base64, and the Responses API's repeat of the
  image in ``response.completed`` arrives while the first is kept: three times.

The bytes come from an in-memory httpx transport in 64 KiB reads (``streaming_overhead.py``'s
method): no socket, and another process's load does not land in the CPU figure.

    .venv/bin/python benchmarks/provider_work.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import base64
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
from anthropic_gemini_overhead import KEY, request, sse
from google import genai
from google.genai import types
from pydantic_core import from_json
from streaming_overhead import BodyTransport

from runport.anthropic import AnthropicMessagesAdapter
from runport.contracts import StreamEvent
from runport.gemini import GeminiAdapter
from runport.openai import OpenAIResponsesAdapter

URL = "http://bench.invalid"
_HEX = "0123456789abcdef" * 3


@dataclass(frozen=True)
class Body:
    name: str
    data: bytes
    frames: int


class _Events:
    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.output: list[dict[str, Any]] = []

    def event(self, kind: str, **fields: Any) -> None:
        self.frames.append(
            sse({"type": kind, "sequence_number": len(self.frames) + 1, **fields}, kind)
        )

    def body(self, name: str) -> Body:
        response = {"id": "resp_bench", "object": "response", "status": "completed", "model": "m"}
        head = sse({"type": "response.created", "sequence_number": 0, "response": response})
        usage = {"input_tokens": 12, "output_tokens": 34, "total_tokens": 46}
        self.event(
            "response.completed", response={**response, "output": self.output, "usage": usage}
        )
        return Body(name, b"".join([head, *self.frames]), len(self.frames) + 1)


def fragments() -> Body:
    events = _Events()
    pieces = ['{"n": ['] + [f"{n}, " for n in range(1_998)] + ["0]}"]
    for call in range(10):
        item_id = f"fc_{call:02d}{_HEX}"
        item = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": f"call_{call:02d}", "name": "get_weather"}  # fmt: skip
        events.event("response.output_item.added", output_index=call, item=item)
        for piece in pieces:
            events.event("response.function_call_arguments.delta", item_id=item_id,
                          output_index=call, delta=piece, obfuscation="Zq3x")  # fmt: skip
        arguments = "".join(pieces)
        events.event("response.function_call_arguments.done", item_id=item_id,
                     output_index=call, arguments=arguments)  # fmt: skip
        done = {**item, "status": "completed", "arguments": arguments}
        events.event("response.output_item.done", output_index=call, item=done)
        events.output.append(done)
    return events.body("function-call fragments (10 × 2,000)")


def citations(messages: int = 2_000, each: int = 10) -> Body:
    """``messages`` answers of a sentence per source, each source cited by a url citation
    after the delta that holds its span: ``messages × each`` annotation frames."""
    events = _Events()
    sentence = "Sources say the harbour reopened on Monday. "
    for position in range(messages):
        item_id = f"msg_{position:05d}{_HEX}"
        at = {"item_id": item_id, "output_index": position, "content_index": 0}
        item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant"}
        events.event(
            "response.output_item.added", output_index=position, item={**item, "content": []}
        )
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        events.event("response.content_part.added", **at, part=part)
        text = sentence * each
        events.event("response.output_text.delta", **at, delta=text, logprobs=[], obfuscation="Zq")
        notes = []
        for number in range(each):
            begin = number * len(sentence)
            note = {"type": "url_citation", "start_index": begin,
                    "end_index": begin + len(sentence) - 1,
                    "url": f"https://news.example.com/harbour/{position}/{number}",
                    "title": "Harbour news"}  # fmt: skip
            notes.append(note)
            events.event("response.output_text.annotation.added", **at, annotation_index=number,
                         annotation=note)  # fmt: skip
        whole = {**part, "text": text, "annotations": notes}
        events.event("response.output_text.done", **at, text=text, logprobs=[])
        events.event("response.content_part.done", **at, part=whole)
        done = {**item, "status": "completed", "content": [whole]}
        events.event("response.output_item.done", output_index=position, item=done)
        events.output.append(done)
    return events.body(f"url citations ({messages:,} messages × {each})")


def searches(count: int = 4_000) -> Body:
    events = _Events()
    for position in range(count):
        item_id = f"ws_{position:05d}{_HEX}"
        opened = {"id": item_id, "type": "web_search_call", "status": "in_progress"}
        events.event("response.output_item.added", output_index=position, item=opened)
        for stage in ("in_progress", "searching", "completed"):
            events.event(f"response.web_search_call.{stage}", output_index=position,
                         item_id=item_id)  # fmt: skip
        action = {"type": "search", "query": f"harbour news {position}",
                  "sources": [{"type": "url", "url": f"https://ex.com/{position}"}]}  # fmt: skip
        done = {**opened, "status": "completed", "action": action}
        events.event("response.output_item.done", output_index=position, item=done)
        events.output.append(done)
    return events.body("web searches (4,000 × 5 frames)")


def png(size: int = 4 * 2**20) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * ((size - 8) // 256)


def image(size: int = 4 * 2**20) -> tuple[Body, int, int]:
    """A ``size``-byte PNG as the Responses API streams it; also its base64 length and byte
    count."""
    raw = png(size)
    encoded = base64.b64encode(raw).decode()
    preview = base64.b64encode(raw[: 2**20]).decode()
    events = _Events()
    item_id = f"ig_00{_HEX}"
    opened = {"id": item_id, "type": "image_generation_call", "status": "in_progress"}
    events.event("response.output_item.added", output_index=0, item=opened)
    events.event("response.image_generation_call.in_progress", output_index=0, item_id=item_id)
    events.event("response.image_generation_call.generating", output_index=0, item_id=item_id)
    for number in range(2):
        events.event("response.image_generation_call.partial_image", output_index=0,
                     item_id=item_id, partial_image_index=number, partial_image_b64=preview,
                     output_format="png", size="1024x1024", quality="high",
                     background="opaque")  # fmt: skip
    done = {**opened, "status": "completed", "result": encoded, "output_format": "png",
            "revised_prompt": "A harbour at dawn"}  # fmt: skip
    events.event("response.output_item.done", output_index=0, item=done)
    events.output.append(done)
    return events.body("a 4 MB generated image"), len(encoded), len(raw)


def gemini_image(size: int = 4 * 2**20) -> tuple[Body, int, int]:
    """A ``size``-byte PNG as Gemini streams it: a chunk of text, the image's ``inlineData``
    part in a chunk of its own, then the finishing chunk (frames end ``\\r\\n\\r\\n``)."""
    raw = png(size)
    encoded = base64.b64encode(raw).decode()
    parts = [[{"text": "Here is the harbour."}], [{"inlineData": {"mimeType": "image/png",
             "data": encoded}}], [{"text": " At dawn."}]]  # fmt: skip
    frames = []
    for position, chunk in enumerate(parts):
        candidate: dict[str, Any] = {"content": {"parts": chunk, "role": "model"}, "index": 0}
        if position == len(parts) - 1:
            candidate["finishReason"] = "STOP"
        usage = {"promptTokenCount": 12, "candidatesTokenCount": 1290, "totalTokenCount": 1302}
        chunk_of = {"candidates": [candidate], "usageMetadata": usage,
                    "modelVersion": "gemini-bench", "responseId": "r"}  # fmt: skip
        frames.append(sse(chunk_of, end="\r\n\r\n"))
    body = Body("Gemini inlineData", b"".join(frames), len(frames))
    return body, len(encoded), len(raw)


def adapter(http: httpx.Client) -> int:
    count = 0

    def sink(event: StreamEvent) -> None:
        nonlocal count
        count += 1

    OpenAIResponsesAdapter(
        base_url=URL + "/v1", model="m", api_key=KEY, http_client=http
    ).execute_streaming(request(64 * 2**20), sink)
    return count


def sdk(http: httpx.Client) -> int:
    """The SDK's loop keeping what a consumer would: argument fragments by item, citations,
    finished server tool items, the image (its previews replaced as they come)."""
    client = openai.OpenAI(base_url=URL + "/v1", api_key=KEY, max_retries=0, http_client=http)
    calls: dict[str, list[str]] = {}
    cited: list[Any] = []
    tools: list[Any] = []
    picture: list[str] = []
    count = 0
    for event in client.responses.create(model="m", input="Go.", stream=True):
        count += 1
        if event.type == "response.function_call_arguments.delta":
            calls.setdefault(event.item_id, []).append(event.delta)
        elif event.type == "response.output_text.annotation.added":
            cited.append(event.annotation)
        elif event.type == "response.image_generation_call.partial_image":
            picture[:] = [event.partial_image_b64]
        elif event.type == "response.output_item.done":
            if event.item.type == "web_search_call":
                tools.append(event.item)
            elif event.item.type == "image_generation_call" and event.item.result:
                picture[:] = [event.item.result]
    client.close()
    return count


def gemini_adapter(http: httpx.Client) -> int:
    count = 0

    def sink(event: StreamEvent) -> None:
        nonlocal count
        count += 1

    GeminiAdapter(base_url=URL, model="m", api_key=KEY, http_client=http).execute_streaming(
        request(64 * 2**20), sink
    )
    return count


def gemini_sdk(http: httpx.Client) -> int:
    """``google-genai``'s ``generate_content_stream`` loop keeping the image's bytes."""
    client = genai.Client(
        api_key=KEY,
        http_options=types.HttpOptions(base_url=URL, api_version="v1beta", httpx_client=http),
    )
    kept: list[bytes] = []
    count = 0
    for chunk in client.models.generate_content_stream(model="m", contents="Go."):
        count += 1
        for candidate in chunk.candidates or []:
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.inline_data is not None and part.inline_data.data is not None:
                    kept.append(part.inline_data.data)
    return count


def frames_of(http: httpx.Client) -> Iterator[Any]:
    """Each SSE frame's JSON value, read with the fewest copies a parser of whole frames
    allows: the reads go into one buffer, and a frame is parsed (``pydantic_core.from_json``,
    as the adapters parse) from a buffer holding exactly its payload, what follows it having
    been moved to a new buffer first (at most one read). Its peak is the frame's bytes and
    what they parse to."""
    held = bytearray()
    with http.stream("POST", URL + "/floor", json={}) as response:
        for raw in response.iter_bytes():
            start = max(0, len(held) - 3)
            held += raw
            while True:
                ends = [at for at in (held.find(b"\n\n", start), held.find(b"\r\n\r\n", start))
                        if at >= 0]  # fmt: skip
                if not ends:
                    break
                end = min(ends)
                after = end + (2 if held.startswith(b"\n\n", end) else 4)
                rest = bytearray(held[after:])
                del held[end:]
                del held[: held.index(b"data: ") + 6]
                yield from_json(held)
                held, start = rest, 0


def floor_parsed(http: httpx.Client) -> int:
    """Every frame parsed and dropped: the least any reader of whole frames holds."""
    count = 0
    for value in frames_of(http):
        count += 1
        del value  # not held while the next frame is read
    return count


def floor_kept(http: httpx.Client) -> int:
    """Every frame parsed, the image kept as a reader must keep it (a Responses preview
    replaced by the next, then the finished item's ``result``; Gemini's ``inlineData``), and
    nothing else."""
    kept: list[str] = []
    count = 0
    for value in frames_of(http):
        count += 1
        if value.get("type") == "response.image_generation_call.partial_image":
            kept[:] = [value["partial_image_b64"]]
        elif value.get("type") == "response.output_item.done" and value["item"].get("result"):
            kept[:] = [value["item"]["result"]]
        for candidate in value.get("candidates") or ():
            for part in candidate["content"]["parts"]:
                if "inlineData" in part:
                    kept.append(part["inlineData"]["data"])
        del value
    return count


def floor(http: httpx.Client) -> int:
    """httpx ``iter_bytes`` + split on blank lines + ``json.loads``: the least any reader pays."""
    count = 0
    held = b""
    with http.stream("POST", URL + "/floor", json={}) as response:
        for raw in response.iter_bytes():
            frames = (held + raw).split(b"\n\n")
            held = frames.pop()
            for frame in frames:
                json.loads(frame[frame.index(b"data: ") + 6 :])
                count += 1
    return count


RUNS: dict[str, Callable[[httpx.Client], int]] = {"adapter": adapter, "sdk": sdk, "floor": floor}


def cpu(run: Callable[[httpx.Client], int], body: Body) -> float:
    with httpx.Client(transport=BodyTransport(body.data, 65536)) as http:
        gc.collect()
        start = time.process_time()
        run(http)
        return time.process_time() - start


def peak(run: Callable[[httpx.Client], int], body: Body) -> int:
    with httpx.Client(transport=BodyTransport(body.data, 65536)) as http:
        gc.collect()
        tracemalloc.start()
        try:
            run(http)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def per_frame(
    bodies: list[Body], rounds: int, runs: dict[str, Callable[[httpx.Client], int]] = RUNS
) -> None:
    sdk_columns = "sdk" in runs
    sdk_head, sdk_tail = (" sdk |", " sdk ÷ adapter |") if sdk_columns else ("", "")
    print(f"| frames | adapter |{sdk_head} floor | adapter ÷ floor | ÷ fragments' |{sdk_tail}")
    print("|---" * (7 if sdk_columns else 5) + "|")
    per: dict[str, dict[str, float]] = {}
    for body in bodies:
        samples: dict[str, list[float]] = {key: [] for key in runs}
        for _ in range(rounds + 1):  # the first round warms up
            for key, run in runs.items():
                samples[key].append(cpu(run, body))
        per[body.name] = {
            k: statistics.median(v[1:]) / body.frames * 1e6 for k, v in samples.items()
        }
    bar = per[bodies[0].name]["adapter"] / per[bodies[0].name]["floor"]
    for body in bodies:
        us = per[body.name]
        over = us["adapter"] / us["floor"]
        sdk_us = f" {us['sdk']:.1f} |" if sdk_columns else ""
        sdk_over = f" {us['sdk'] / us['adapter']:.1f}× |" if sdk_columns else ""
        print(f"| {body.name} | {us['adapter']:.2f} |{sdk_us} {us['floor']:.2f} "
              f"| {over:.2f}× | {over / bar:.2f}× |{sdk_over}")  # fmt: skip


def anthropic_body(blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> Body:
    """Anthropic Messages events: each block started, its deltas, stopped."""
    message = {"id": "msg_bench", "type": "message", "role": "assistant", "model": "m",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 12, "output_tokens": 1}}  # fmt: skip
    out = [sse({"type": "message_start", "message": message}, "message_start")]
    for index, (start, deltas) in enumerate(blocks):
        out.append(sse({"type": "content_block_start", "index": index, "content_block": start},
                       "content_block_start"))  # fmt: skip
        for delta in deltas:
            out.append(sse({"type": "content_block_delta", "index": index, "delta": delta},
                           "content_block_delta"))  # fmt: skip
        out.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    out.append(sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 34}}, "message_delta"))  # fmt: skip
    out.append(sse({"type": "message_stop"}, "message_stop"))
    return Body("", b"".join(out), len(out))


def anthropic_bodies() -> list[Body]:
    """20,000 ``input_json_delta`` fragments of one ``tool_use`` block (the bar); 2,000 text
    blocks of ten sentences, each cited by a ``citations_delta`` (a web search result
    location, as web search answers carry them); 2,000 web searches, a ``server_tool_use``
    block (its input in one ``input_json_delta``) and its ``web_search_tool_result``."""
    pieces = ['{"n": ['] + [f"{n}, " for n in range(19_998)] + ["0]}"]
    fragments = anthropic_body([
        ({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
         [{"type": "input_json_delta", "partial_json": piece} for piece in pieces])
    ])  # fmt: skip
    sentence = "Sources say the harbour reopened on Monday. "
    cited = anthropic_body([
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": sentence * 10}] + [
            {"type": "citations_delta", "citation": {
                "type": "web_search_result_location", "title": "Harbour news",
                "url": f"https://news.example.com/harbour/{block}/{number}",
                "cited_text": "The harbour reopened on Monday after repairs.",
                "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm"}}
            for number in range(10)])
        for block in range(2_000)
    ])  # fmt: skip
    searched: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for number in range(2_000):
        call_id = f"srvtoolu_{number:05d}"
        searched.append(
            (
                {"type": "server_tool_use", "id": call_id, "name": "web_search", "input": {}},
                [{"type": "input_json_delta", "partial_json": f'{{"query": "harbour {number}"}}'}],
            )
        )
        searched.append(({"type": "web_search_tool_result", "tool_use_id": call_id, "content": [
            {"type": "web_search_result", "url": f"https://ex.com/{number}", "title": "Harbour",
             "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNj",
             "page_age": "April 30, 2025"}]}, []))  # fmt: skip
    names = ["tool-use fragments (20,000)", "citations_delta (2,000 blocks × 10)",
             "web searches (2,000 × 2 blocks)"]  # fmt: skip
    made = [fragments, cited, anthropic_body(searched)]
    return [Body(name, body.data, body.frames) for name, body in zip(names, made, strict=True)]


def anthropic_adapter(http: httpx.Client) -> int:
    count = 0

    def sink(event: StreamEvent) -> None:
        nonlocal count
        count += 1

    AnthropicMessagesAdapter(
        base_url=URL, model="m", api_key=KEY, http_client=http
    ).execute_streaming(request(64 * 2**20), sink)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    bodies = [fragments(), citations(), searches()]
    print(f"median µs of CPU per frame over {args.rounds} rounds (64 KiB reads, in memory)")
    print("\nthe collector as the process left it (a full collection walks the SDK's models):\n")
    per_frame(bodies, args.rounds)
    print("\nthe objects alive before the runs frozen (gc.freeze):\n")
    gc.collect()
    gc.freeze()
    per_frame(bodies, args.rounds)
    print("\nAnthropic Messages, frozen alike (no SDK loop):\n")
    per_frame(anthropic_bodies(), args.rounds, {"adapter": anthropic_adapter, "floor": floor})
    gc.unfreeze()

    images = [
        (*image(), {"adapter": adapter, "sdk": sdk}),
        (*gemini_image(), {"adapter": gemini_adapter, "sdk": gemini_sdk}),
    ]
    print("\npeak traced memory of the whole run (tracemalloc), MiB and ratios\n")
    print("| image | run | peak MiB | ÷ base64 | ÷ bytes | ÷ floor (kept) |")
    print("|---|---|---|---|---|---|")
    for body, encoded, raw, runs in images:
        tops: dict[str, int] = {}
        every = {**runs, "floor (parsed)": floor_parsed, "floor (kept)": floor_kept}
        for key, run in every.items():
            run(httpx.Client(transport=BodyTransport(body.data, 65536)))  # warm-up
            tops[key] = min(peak(run, body) for _ in range(2))
        for key, top in tops.items():
            print(f"| {body.name} ({encoded / 2**20:.2f} MiB base64) | {key} "
                  f"| {top / 2**20:.2f} | {top / encoded:.2f}× | {top / raw:.2f}× "
                  f"| {top / tops['floor (kept)']:.2f}× |")  # fmt: skip


if __name__ == "__main__":
    main()
