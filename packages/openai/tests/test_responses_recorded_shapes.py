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

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import json_reply, serving, stream_reply
from runport.conformance.providers import make_request, run_streamed
from runport.contracts import Citation, ServerToolCall, ServerToolResult
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
