"""Recorded real Responses traffic, decoded over 127.0.0.1 to what an independent reading of the
bodies says. The bodies are written here in our own words, following the structure of a web
search stream and response recorded from the live API and published in vercel/ai
(packages/openai/src/responses/__fixtures__/openai-web-search-tool.1.chunks.txt and
openai-web-search-tool.1.json): reasoning items with an empty summary between the searches; a
``web_search_call`` announced with only its status, then ``web_search_call.in_progress`` /
``searching`` / ``completed`` events, then finished with an ``action`` that lists its
``sources`` (and, for a follow-up search, no ``query``); the answer's text with curly quotes,
each ``url_citation`` arriving after the delta that holds its span, with character offsets
(adr/0055-what-the-provider-did-itself.md)."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import json_reply, serving, stream_reply
from runport.conformance.providers import make_request, run_streamed
from runport.contracts import Citation, FileDelta, ServerToolCall, ServerToolResult
from runport.openai import OpenAIResponsesAdapter

HOME = "https://www.example.org/city/autumn-events-2026"
NEWS = "https://news.example.net/europe/harbour-reopens-2026-10-02/"
PIECES = (
    "Here’s what’s on in the city this week, from two quick searches:\n\n"
    "- The autumn art week opens today across 90 venues. ",
    f"([example.org]({HOME}))\n\n- The harbour’s old quay reopens after repairs",
    f". ([news.example.net]({NEWS}))",
)
TEXT = "".join(PIECES)


def span(link: str) -> tuple[int, int]:
    """Where the markdown link to ``link`` sits in the text, in characters (the API's unit)."""
    target = TEXT.index(f"]({link}))")
    return TEXT.rindex("([", 0, target), target + len(f"]({link}))")


NOTES = [
    {"type": "url_citation", "start_index": span(url)[0], "end_index": span(url)[1], "url": url,
     "title": title}
    for url, title in ((HOME, "Autumn events 2026 | Example"), (NEWS, "Harbour reopens – News"))
]  # fmt: skip
SEARCHES = [
    {
        "id": "ws_0a1b2c3d4e5f60718293a4b5c6d7e8f90001",
        "type": "web_search_call",
        "status": "completed",
        "action": {
            "type": "search",
            "query": "city events this week",
            "sources": [{"type": "url", "url": HOME}, {"type": "url", "url": NEWS}],
        },
    },
    {
        "id": "ws_0a1b2c3d4e5f60718293a4b5c6d7e8f90002",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "sources": [{"type": "url", "url": NEWS}]},
    },
]
MESSAGE = {
    "id": "msg_0a1b2c3d4e5f60718293a4b5c6d7e8f90003",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "text": TEXT, "annotations": NOTES, "logprobs": []}],
}
OUTPUT = [
    {"id": "rs_0a1b2c3d4e5f60718293a4b5c6d7e8f90004", "type": "reasoning", "summary": []},
    SEARCHES[0],
    {"id": "rs_0a1b2c3d4e5f60718293a4b5c6d7e8f90005", "type": "reasoning", "summary": []},
    SEARCHES[1],
    MESSAGE,
]


def response(output: list[dict[str, Any]], status: str = "completed") -> dict[str, Any]:
    return {
        "id": "resp_0a1b2c3d4e5f60718293a4b5c6d7e8f9",
        "object": "response",
        "created_at": 1791000000,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": "gpt-test",
        "output": output,
        "tools": [{"type": "web_search", "search_context_size": "medium"}],
        "usage": {"input_tokens": 327, "output_tokens": 770, "total_tokens": 1097},
    }


def stream() -> list[bytes]:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response([], "in_progress")},
        {"type": "response.in_progress", "response": response([], "in_progress")},
    ]
    for at, item in enumerate(OUTPUT):
        ref = {"output_index": at, "item_id": item["id"]}
        if item["type"] == "web_search_call":
            opened = {"id": item["id"], "type": item["type"], "status": "in_progress"}
            events.append(
                {"type": "response.output_item.added", "output_index": at, "item": opened}
            )
            for stage in ("in_progress", "searching", "completed"):
                events.append({"type": f"response.web_search_call.{stage}", **ref})
        elif item["type"] == "message":
            opened = {**item, "status": "in_progress", "content": []}
            events.append(
                {"type": "response.output_item.added", "output_index": at, "item": opened}
            )
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            at_part = {**ref, "content_index": 0}
            events.append({"type": "response.content_part.added", **at_part, "part": part})
            told, number = 0, 0
            for piece in PIECES:
                events.append(
                    {"type": "response.output_text.delta", **at_part, "delta": piece,
                     "logprobs": [], "obfuscation": "Xy"}
                )  # fmt: skip
                told += len(piece)
                while number < len(NOTES) and NOTES[number]["end_index"] <= told:
                    events.append(
                        {"type": "response.output_text.annotation.added", **at_part,
                         "annotation_index": number, "annotation": NOTES[number]}
                    )  # fmt: skip
                    number += 1
            events.append({"type": "response.output_text.done", **at_part, "text": TEXT})
            events.append(
                {"type": "response.content_part.done", **at_part, "part": item["content"][0]}
            )
        else:
            events.append({"type": "response.output_item.added", "output_index": at, "item": item})
        events.append({"type": "response.output_item.done", "output_index": at, "item": item})
    events.append({"type": "response.completed", "response": response(OUTPUT)})
    return [
        f"data: {json.dumps({**event, 'sequence_number': n})}\n\n".encode()
        for n, event in enumerate(events)
    ]


def read_independently(body: dict[str, Any]) -> dict[str, Any]:
    """What the whole response says, walked by hand: each search with what it searched and
    found, the answer's text, and each citation's URL with the words it covers."""
    searches, text, cited = [], "", []
    for item in body["output"]:
        if item["type"] == "web_search_call":
            searches.append((item["id"], item["action"].get("query"), item["action"]["sources"]))
        elif item["type"] == "message":
            for part in item["content"]:
                for note in part["annotations"]:
                    begin, end = note["start_index"], note["end_index"]
                    cited.append((note["url"], note["title"], part["text"][begin:end]))
                text += part["text"]
    return {"searches": searches, "text": text, "cited": cited}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


def test_a_recorded_web_search_stream_and_response_decode_to_what_they_say(
    client: httpx.Client,
) -> None:
    with serving(stream_reply(stream()), json_reply(response(OUTPUT))) as server:
        adapter = OpenAIResponsesAdapter(
            base_url=server.base_url, model="gpt-test", api_key="sk-test", http_client=client
        )
        outcome = run_streamed(adapter, make_request())
        whole = adapter.execute(make_request())
    assert outcome.receipt is not None, outcome.error
    assert whole == outcome.receipt
    said = read_independently(response(OUTPUT))

    assert whole.text == said["text"]
    calls = [item for item in whole.server_tools or [] if isinstance(item, ServerToolCall)]
    results = [item for item in whole.server_tools or [] if isinstance(item, ServerToolResult)]
    searched = []
    for call in calls:
        assert isinstance(call.input, dict)
        assert isinstance(call.input["action"], dict)
        searched.append(
            (call.call_id, call.input["action"].get("query"), call.input["action"]["sources"])
        )
    assert searched == said["searches"]
    assert [(r.call_id, r.error) for r in results] == [(c.call_id, None) for c in calls]
    assert {call.name for call in calls} == {"web_search"}

    cited = []
    for citation in whole.citations or []:
        assert citation.start is not None
        assert citation.end is not None
        cited.append(
            (citation.source.url, citation.source.title, whole.text[citation.start : citation.end])
        )
    assert cited == said["cited"]
    assert all(words.startswith("([") for _, _, words in cited)
    # each citation is given as soon as its annotation arrives, before the text that follows
    kinds = [type(event).__name__ for event in outcome.events]
    assert kinds.index("Citation") < len(kinds) - 1 - kinds[::-1].index("Delta")
    assert sum(isinstance(event, Citation) for event in outcome.events) == len(said["cited"])


# -- generated images and code runs ------------------------------------------------------------
#
# The structure of two more recorded streams and their responses, published in vercel/ai:
# packages/openai/src/responses/__fixtures__/openai-image-generation-tool.1.chunks.txt (a
# reasoning item with an empty summary; an ``image_generation_call`` announced with only its
# status, then ``in_progress``, ``generating``, one ``partial_image`` in WebP with its size,
# quality and background, ``completed``; the finished item's ``result`` beside its
# ``revised_prompt``; then a message whose text is empty: the image is the whole answer), and
# packages/azure/src/__fixtures__/azure-image-generation-tool.1.chunks.txt (Azure: no
# ``completed`` event, the finished item's ``status`` still ``generating`` with its PNG
# ``result``); packages/openai/src/responses/__fixtures__/openai-code-interpreter-tool.1
# (``code_interpreter_call`` items announced with an empty ``code`` and no ``outputs``, the
# code streamed in ``code_interpreter_call_code.delta`` events with ``obfuscation``, then
# ``code_interpreter_call_code.done``, ``interpreting``, ``completed``, the finished item's
# ``outputs`` a list of ``logs``; the answer's ``container_file_citation`` annotation, its
# span the ``sandbox:`` link to the file the code wrote).


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def sse_events(events: list[dict[str, Any]]) -> list[bytes]:
    return [
        f"data: {json.dumps({**event, 'sequence_number': n})}\n\n".encode()
        for n, event in enumerate(events)
    ]


def riff_webp(payload: bytes) -> bytes:
    body = b"WEBPVP8L" + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def png_pixel() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x80\x00"))
        + chunk(b"IEND", b"")
    )


PICTURE = b64(riff_webp(b"\x2f\x00final image"))
PREVIEWS = {"webp": b64(riff_webp(b"\x2f\x00preview")), "png": b64(png_pixel())}
DRAWING = "ig_0df93c0bb83a72f20068c979f589c0819e9f0fc2d1a27aa1b8"
DRAWN = {
    "id": DRAWING,
    "type": "image_generation_call",
    "status": "completed",
    "background": "opaque",
    "output_format": "webp",
    "quality": "low",
    "result": PICTURE,
    "revised_prompt": "A hyperrealistic echidna swimming across a calm lake at dawn.",
    "size": "1536x1024",
}
THOUGHT = {"id": "rs_0df93c0bb83a72f20068c979db90b4819e94cedbfda2d49af6", "type": "reasoning"}
BLANK = {
    "id": "msg_0df93c0bb83a72f20068c97a0b36f4819ea5906451007f95e2",
    "type": "message",
    "status": "completed",
    "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": ""}],
    "role": "assistant",
}
IMAGE_USAGE = {
    "input_tokens": 2941,
    "input_tokens_details": {"cached_tokens": 1920},
    "output_tokens": 1249,
    "output_tokens_details": {"reasoning_tokens": 1024},
    "total_tokens": 4190,
}


def finished(output: list[dict[str, Any]], usage: dict[str, Any]) -> dict[str, Any]:
    return {**response(output), "usage": usage, "tools": [{"type": "image_generation"}]}


def drawing_stream(item: dict[str, Any], *, completed: bool, reasoning: bool) -> list[bytes]:
    """A drawing's stream as recorded: the image at ``output_index`` 1 after a reasoning item
    (OpenAI's) or at 0 (Azure's), then a message."""
    at = 1 if reasoning else 0
    ref = {"output_index": at, "item_id": item["id"]}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response([], "in_progress")},
        {"type": "response.in_progress", "response": response([], "in_progress")},
    ]
    if reasoning:
        for stage in ("added", "done"):
            events.append(
                {"type": f"response.output_item.{stage}", "output_index": 0,
                 "item": {**THOUGHT, "summary": []}}
            )  # fmt: skip
    opened = {"id": item["id"], "type": item["type"], "status": "in_progress"}
    events.append({"type": "response.output_item.added", "output_index": at, "item": opened})
    for stage in ("in_progress", "generating"):
        events.append({"type": f"response.image_generation_call.{stage}", **ref})
    events.append(
        {"type": "response.image_generation_call.partial_image", **ref,
         "partial_image_index": 0, "partial_image_b64": PREVIEWS[item["output_format"]],
         "size": item["size"],
         "quality": item["quality"], "background": item["background"],
         "output_format": item["output_format"]}
    )  # fmt: skip
    if completed:
        events.append({"type": "response.image_generation_call.completed", **ref})
    events.append({"type": "response.output_item.done", "output_index": at, "item": item})
    message = BLANK if reasoning else AZURE_MESSAGE
    part = message["content"][0]
    at_part = {"item_id": message["id"], "output_index": at + 1, "content_index": 0}
    events += [
        {"type": "response.output_item.added", "output_index": at + 1,
         "item": {**message, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", **at_part, "part": {**part, "text": ""}},
        *[
            {"type": "response.output_text.delta", **at_part, "delta": piece, "logprobs": [],
             "obfuscation": "0akkkhrq6x9f"}
            for piece in ([] if reasoning else AZURE_WORDS)
        ],
        {"type": "response.output_text.done", **at_part, "text": part["text"], "logprobs": []},
        {"type": "response.content_part.done", **at_part, "part": part},
        {"type": "response.output_item.done", "output_index": at + 1, "item": message},
    ]  # fmt: skip
    output = [{**THOUGHT, "summary": []}, item, message] if reasoning else [item, message]
    usage = IMAGE_USAGE if reasoning else AZURE_USAGE
    events.append({"type": "response.completed", "response": finished(output, usage)})
    return sse_events(events)


AZURE_WORDS = ("Here is an anime-like image", " of a cute raccoon waving hello.")
AZURE_MESSAGE = {
    "id": "msg_0ca0ba552749d18c0069414e6a4bd08197b70d83e91162dd13",
    "type": "message",
    "status": "completed",
    "content": [
        {"type": "output_text", "annotations": [], "logprobs": [], "text": "".join(AZURE_WORDS)}
    ],
    "role": "assistant",
}
AZURE_USAGE = {"input_tokens": 1979, "output_tokens": 67, "total_tokens": 2046}
AZURE_DRAWN = {
    "id": "ig_0ca0ba552749d18c0069414e512d78819791ec2c3fe1d486b8",
    "type": "image_generation_call",
    "status": "generating",
    "background": "opaque",
    "output_format": "png",
    "quality": "medium",
    "result": b64(png_pixel()),
    "revised_prompt": "anime-style cute raccoon waving hello, large expressive eyes",
    "size": "1024x1024",
}


@pytest.mark.parametrize(
    ("item", "reasoning"), [(DRAWN, True), (AZURE_DRAWN, False)], ids=["openai", "azure"]
)
def test_a_recorded_drawing_streams_its_preview_and_keeps_the_image(
    client: httpx.Client, item: dict[str, Any], reasoning: bool
) -> None:
    frames = drawing_stream(item, completed=reasoning, reasoning=reasoning)
    body = json.loads(frames[-1].decode().removeprefix("data: "))["response"]
    with serving(stream_reply(frames), json_reply(body)) as server:
        adapter = OpenAIResponsesAdapter(
            base_url=server.base_url, model="gpt-test", api_key="sk-test", http_client=client
        )
        outcome = run_streamed(adapter, make_request())
        whole = adapter.execute(make_request())
    assert outcome.receipt is not None, outcome.error
    assert whole == outcome.receipt

    # by hand: the finished item's result is the image, of its output_format; the
    # partial_image event a preview of it; the message's text (OpenAI's empty) the answer
    media = f"image/{item['output_format']}"
    assert [(f.media_type, f.data) for f in whole.files or []] == [(media, item["result"])]
    text = "".join(
        part["text"]
        for entry in body["output"]
        if entry["type"] == "message"
        for part in entry["content"]
    )
    assert (whole.text or "") == text
    assert whole.finish == "stop"
    assert whole.usage is not None
    assert whole.usage.input_tokens == body["usage"]["input_tokens"]
    files = [event for event in outcome.events if isinstance(event, FileDelta)]
    assert [(f.partial, f.media_type, f.data) for f in files] == [
        (True, media, PREVIEWS[item["output_format"]]),
        (False, media, item["result"]),
    ]


CONTAINER = "cntr_68c2e6f380d881908a57a82d394434ff02f484f5344062e9"
RUNS = [
    ("ci_68c2e6f7b72c8193ba1f552552c8dc9202d3a5742c7ddae9",
     ("import random, math\n", "N=10000\n", "sums=[random.randint(1,6)+random.randint(1,6)", " for _ in range(N)]\n", "min(sums), max(sums), sum(sums)/N\n"),  # noqa: E501
     "(2, 12, 6.9868)"),
    ("ci_68c2e6fd57948193aa93df6bdb00a86d02d3a5742c7ddae9",
     ("import csv, pathlib\n", "path = pathlib.Path('/mnt/data/roll2dice_sums.csv')\n",
      "path.write_text('\\n'.join(map(str, sums)))\n", "path, path.exists()\n"),
     "(PosixPath('/mnt/data/roll2dice_sums.csv'), True)"),
]  # fmt: skip
SANDBOX = "sandbox:/mnt/data/roll2dice_sums.csv"
ANSWER = (
    "Here’s a simulation of rolling two dice 10,000 times.\n\n- Average sum per trial: 6.9868\n",
    "\nFull data\n- You can download all sums as a CSV file here: ",
    f"[Download the sums CSV]({SANDBOX})\n\nIf you’d like, I can draw a histogram.",
)
FILE_NOTE = {
    "type": "container_file_citation",
    "container_id": CONTAINER,
    "end_index": "".join(ANSWER).index(SANDBOX) + len(SANDBOX),
    "file_id": "cfile_68c2e7084ab48191a67824aa1f4c90f1",
    "filename": "roll2dice_sums.csv",
    "start_index": "".join(ANSWER).index(SANDBOX),
}
RAN = [
    {"id": run, "type": "code_interpreter_call", "status": "completed", "code": "".join(code),
     "container_id": CONTAINER, "outputs": [{"type": "logs", "logs": logs}]}
    for run, code, logs in RUNS
]  # fmt: skip
EXPLAINED = {
    "id": "msg_68c2e7054ae481938354ab3e4e77abad02d3a5742c7ddae9",
    "type": "message",
    "status": "completed",
    "content": [
        {"type": "output_text", "annotations": [FILE_NOTE], "logprobs": [],
         "text": "".join(ANSWER)}
    ],
    "role": "assistant",
}  # fmt: skip
CODE_USAGE = {
    "input_tokens": 6047,
    "input_tokens_details": {"cached_tokens": 2944},
    "output_tokens": 1623,
    "output_tokens_details": {"reasoning_tokens": 1408},
    "total_tokens": 7670,
}


def code_stream() -> tuple[list[bytes], dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response([], "in_progress")},
        {"type": "response.in_progress", "response": response([], "in_progress")},
    ]
    output: list[dict[str, Any]] = []
    for (run, code, _), item in zip(RUNS, RAN, strict=True):
        thought = {"id": f"rs_{run[3:]}", "type": "reasoning", "summary": []}
        for stage in ("added", "done"):
            events.append(
                {"type": f"response.output_item.{stage}", "output_index": len(output),
                 "item": thought}
            )  # fmt: skip
        output.append(thought)
        ref = {"output_index": len(output), "item_id": run}
        opened = {**item, "status": "in_progress", "code": "", "outputs": []}
        events.append(
            {"type": "response.output_item.added", "output_index": len(output), "item": opened}
        )
        events.append({"type": "response.code_interpreter_call.in_progress", **ref})
        for piece in code:
            events.append(
                {"type": "response.code_interpreter_call_code.delta", **ref, "delta": piece,
                 "obfuscation": "OIvaVX38kd"}
            )  # fmt: skip
        events.append(
            {"type": "response.code_interpreter_call_code.done", **ref, "code": "".join(code)}
        )
        for stage in ("interpreting", "completed"):
            events.append({"type": f"response.code_interpreter_call.{stage}", **ref})
        events.append(
            {"type": "response.output_item.done", "output_index": len(output), "item": item}
        )
        output.append(item)
    at_part = {"item_id": EXPLAINED["id"], "output_index": len(output), "content_index": 0}
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    events += [
        {"type": "response.output_item.added", "output_index": len(output),
         "item": {**EXPLAINED, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", **at_part, "part": part},
    ]  # fmt: skip
    for number, piece in enumerate(ANSWER):
        events.append(
            {"type": "response.output_text.delta", **at_part, "delta": piece, "logprobs": [],
             "obfuscation": "cWtiKXaGjem2"}
        )  # fmt: skip
        if number == len(ANSWER) - 1:
            events.append(
                {"type": "response.output_text.annotation.added", **at_part,
                 "annotation_index": 0, "annotation": FILE_NOTE}
            )  # fmt: skip
    done = EXPLAINED["content"][0]  # type: ignore[index]
    events += [
        {"type": "response.output_text.done", **at_part, "text": done["text"], "logprobs": []},
        {"type": "response.content_part.done", **at_part, "part": done},
        {"type": "response.output_item.done", "output_index": len(output), "item": EXPLAINED},
    ]
    output.append(EXPLAINED)
    body = {**response(output), "usage": CODE_USAGE, "tools": [{"type": "code_interpreter"}]}
    events.append({"type": "response.completed", "response": body})
    return sse_events(events), body


def test_a_recorded_code_interpreter_run_gives_its_code_logs_and_the_file_it_cites(
    client: httpx.Client,
) -> None:
    frames, body = code_stream()
    with serving(stream_reply(frames), json_reply(body)) as server:
        adapter = OpenAIResponsesAdapter(
            base_url=server.base_url, model="gpt-test", api_key="sk-test", http_client=client
        )
        outcome = run_streamed(adapter, make_request())
        whole = adapter.execute(make_request())
    assert outcome.receipt is not None, outcome.error
    assert whole == outcome.receipt

    # by hand: each code_interpreter_call item is a run the provider made, its code and
    # container what it was asked, its status and outputs what it gave
    runs = [item for item in body["output"] if item["type"] == "code_interpreter_call"]
    calls = [item for item in whole.server_tools or [] if isinstance(item, ServerToolCall)]
    results = [item for item in whole.server_tools or [] if isinstance(item, ServerToolResult)]
    assert [(c.call_id, c.name, c.input) for c in calls] == [
        (run["id"], "code_interpreter", {"code": run["code"], "container_id": run["container_id"]})
        for run in runs
    ]
    assert [(r.call_id, r.output, r.error) for r in results] == [
        (run["id"], {"status": run["status"], "outputs": run["outputs"]}, None) for run in runs
    ]
    assert not whole.tool_calls
    message = body["output"][-1]["content"][0]
    assert whole.text == message["text"]
    [note] = message["annotations"]
    [citation] = whole.citations or []
    assert (citation.source.type, citation.source.file_id, citation.source.filename) == (
        "document",
        note["file_id"],
        note["filename"],
    )
    assert whole.text[citation.start : citation.end] == SANDBOX
    assert (citation.start, citation.end) == (note["start_index"], note["end_index"])
    assert whole.usage is not None
    assert (whole.usage.cache_read_tokens, whole.usage.reasoning_tokens) == (2944, 1408)
