"""Recorded real Messages API traffic, decoded over 127.0.0.1 to what an independent reading of
the bodies says. The bodies are written here in our own words, following the structure of a
web search turn recorded from the live API and published in vercel/ai
(packages/anthropic/src/__fixtures__/anthropic-web-search-tool.1.json and
anthropic-web-search-tool.1.chunks.txt): two searches, the second finding nothing (its result
``content`` an empty list); results with ``page_age`` a date or null; the answer cut into text
blocks, the cited ones opening as ``{"citations": [], "type": "text", "text": ""}`` and taking
one or more ``citations_delta`` before their text; a server tool's input streamed from an
empty first ``input_json_delta``; titles with an emoji and ``cited_text`` with an HTML entity
as the API leaves it (adr/0055-what-the-provider-did-itself.md)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from runport.anthropic import AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter
from runport.conformance.loopback import json_reply, seen, serving, stream_reply
from runport.conformance.providers import Provider, make_request, run_streamed
from runport.conformance.vertex import VertexEmulation
from runport.contracts import Message, ServerToolCall, ServerToolResult
from runport.http import GoogleAuth

from .anthropic_wire import event

PROVIDER = Provider(AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter, "claude-test", "k")

PAGE = "https://news.example.com/tech/2026/10/02/daily"
FEED = "https://feed.example.org/📰-weekly"
CIPHER = "EpIBCioIBhgCIiQ5ZjE0MmYxYy1hYmNkLTQ3ZDItODlmNi0wMTIzNDU2Nzg5YWISDEXAMPLECIPHER=="


def cite(url: str, title: str, cited: str) -> dict[str, Any]:
    return {
        "type": "web_search_result_location",
        "cited_text": cited,
        "url": url,
        "title": title,
        "encrypted_index": CIPHER[:40],
    }


BLOCKS: list[dict[str, Any]] = [
    {"type": "server_tool_use", "id": "srvtoolu_01AbCdEfGh", "name": "web_search",
     "input": {"query": "tech news today October 2 2026"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01AbCdEfGh", "content": [
        {"type": "web_search_result", "title": "Daily Tech News 2 October 2026", "url": PAGE,
         "encrypted_content": CIPHER, "page_age": None},
        {"type": "web_search_result", "title": "📰 Tech Weekly", "url": FEED,
         "encrypted_content": CIPHER[::-1], "page_age": "3 hours ago"},
    ]},
    {"type": "text", "text": "Let me look for more from today."},
    {"type": "server_tool_use", "id": "srvtoolu_01IjKlMnOp", "name": "web_search",
     "input": {"query": "\"October 2 2026\" tech breaking"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01IjKlMnOp", "content": []},
    {"type": "text", "text": "Here is today's news:\n\n- "},
    {"citations": [cite(PAGE, "Daily Tech News 2 October 2026",
                        "Top Story A chip maker&#x27;s new fab opens in Dresden ...")],
     "type": "text", "text": "A chip maker's new fab opened in Dresden."},
    {"type": "text", "text": "\n- "},
    {"citations": [cite(FEED, "📰 Tech Weekly", "The phone update ships on October 1. "),
                   cite(FEED, "📰 Tech Weekly", "It brings a redesigned lock screen. ")],
     "type": "text", "text": "The phone update shipped on October 1 with a new lock screen."},
]  # fmt: skip
USAGE = {
    "input_tokens": 2037,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 795,
    "service_tier": "standard",
    "server_tool_use": {"web_search_requests": 2, "web_fetch_requests": 0},
}


def whole() -> dict[str, Any]:
    return {
        "id": "msg_01RecordedShape",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": BLOCKS,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": USAGE,
    }


def stream() -> list[bytes]:
    started = {
        **whole(),
        "content": [],
        "stop_reason": None,
        "usage": {**USAGE, "output_tokens": 1},
    }
    out = [event("message_start", {"type": "message_start", "message": started})]
    for index, block in enumerate(BLOCKS):
        deltas: list[dict[str, Any]] = []
        opened = block
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            if "citations" in block:
                opened = {"citations": [], "type": "text", "text": ""}
                deltas += [{"type": "citations_delta", "citation": c} for c in block["citations"]]
            words = block["text"].split(" ")
            deltas += [
                {"type": "text_delta", "text": word if at == 0 else f" {word}"}
                for at, word in enumerate(words)
            ]
        elif block["type"] == "server_tool_use":
            opened = {**block, "input": {}}
            given = json.dumps(block["input"])
            deltas += [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in ("", given[:12], given[12:25], given[25:])
            ]
        out.append(
            event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opened},
            )
        )
        for delta in deltas:
            out.append(
                event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    ended = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": USAGE}  # fmt: skip
    return [*out, event("message_delta", ended), event("message_stop", {"type": "message_stop"})]


def read_independently(body: dict[str, Any]) -> dict[str, Any]:
    """What the message says, walked by hand: each search with what it found, the text, and
    each citation with where its block begins."""
    searches: dict[str, Any] = {}
    text, cited = "", []
    for block in body["content"]:
        if block["type"] == "server_tool_use":
            searches[block["id"]] = [block["input"]["query"], None]
        elif block["type"] == "web_search_tool_result":
            searches[block["tool_use_id"]][1] = [(r["url"], r["title"]) for r in block["content"]]
        elif block["type"] == "text":
            for note in block.get("citations", []):
                cited.append((note["url"], note["title"], note["cited_text"], len(text)))
            text += block["text"]
    return {"searches": searches, "text": text, "cited": cited}


def test_a_recorded_web_search_turn_decodes_to_what_it_says(client: httpx.Client) -> None:
    with serving(stream_reply(stream()), json_reply(whole())) as server:
        adapter = PROVIDER.adapter_for(server, client)
        outcome = run_streamed(adapter, make_request())
        receipt = adapter.execute(make_request())
    assert outcome.receipt is not None, outcome.error
    assert receipt == outcome.receipt
    said = read_independently(whole())

    assert receipt.text == said["text"]
    searches: dict[str, Any] = {}
    for item in receipt.server_tools or []:
        if isinstance(item, ServerToolCall):
            assert isinstance(item.input, dict)
            searches[item.call_id] = [item.input["query"], None]
        else:
            assert isinstance(item, ServerToolResult)
            assert item.error is None
            assert isinstance(item.output, list)
            found = [(r["url"], r["title"]) for r in item.output if isinstance(r, dict)]
            searches[item.call_id][1] = found
    assert searches == said["searches"]
    cited = [(c.source.url, c.source.title, c.cited_text, c.start) for c in receipt.citations or []]
    assert cited == said["cited"]
    assert receipt.usage.input_tokens == USAGE["input_tokens"]


def test_the_recorded_turn_goes_back_with_its_blocks_as_they_came(client: httpx.Client) -> None:
    """The API wants a web search turn's blocks back whole (``encrypted_content`` intact): the
    receipt's turn, sent again, carries them as the body had them."""
    with serving(json_reply(whole()), json_reply(whole())) as server:
        adapter = PROVIDER.adapter_for(server, client)
        receipt = adapter.execute(make_request())
        turn = Message(role="assistant", content=receipt.text, server_tools=receipt.server_tools)
        adapter.execute(make_request(messages=[Message(role="user", content="news?"), turn,
                                                Message(role="user", content="more")]))  # fmt: skip
        sent = seen(server).body
    back = next(m for m in sent["messages"] if m["role"] == "assistant")["content"]
    tools = [b for b in back if b["type"] in ("server_tool_use", "web_search_tool_result")]
    assert tools == [b for b in BLOCKS if b["type"] != "text"]


# -- Claude on Vertex AI -----------------------------------------------------------------------
#
# The structure of two turns measured on Vertex AI (claude-sonnet-5, us-east5, streamRawPredict)
# and published in go-steer/core-models (dialect/anthropic/measured_turn_test.go): a
# ``msg_vrtx_`` message id; the first turn writes a 28,804-token cache entry (its
# ``message_start`` usage: ``input_tokens`` 10, ``cache_creation_input_tokens`` 28804,
# ``cache_read_input_tokens`` 0), the next reads it back; the output count only in
# ``message_delta``. Vertex sends no ``ping`` between them, and no ``cache_creation``
# breakdown.
VERTEX_TURNS = [(28804, 0, "msg_vrtx_011Cf23KmBvy6xNCBR8cRGsH"), (0, 28804, "msg_vrtx_011Cf23L")]


def measured(written: int, read: int, message: str) -> bytes:
    usage = {
        "input_tokens": 10,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
        "output_tokens": 1,
    }
    start = {"id": message, "type": "message", "role": "assistant", "model": "claude-sonnet-5",
             "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}  # fmt: skip
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "ack"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 4}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


def test_measured_vertex_turns_count_their_cache_write_and_read() -> None:
    replies = [("text/event-stream", measured(*turn)) for turn in VERTEX_TURNS]
    with VertexEmulation(replies) as vertex:
        adapter = AnthropicMessagesAdapter(
            model="claude-sonnet-5",
            base_url=vertex.base_url,
            project="my-project-1",
            location="us-east5",
            auth=GoogleAuth(vertex.credentials()),
        )
        with adapter:
            outcomes = [run_streamed(adapter, make_request()) for _ in VERTEX_TURNS]
    assert vertex.refused == []
    for outcome, (written, read, _) in zip(outcomes, VERTEX_TURNS, strict=True):
        receipt = outcome.receipt
        assert receipt is not None, outcome.error
        assert receipt.usage is not None
        # by hand: Claude's input_tokens leave both cache counts out; the output count is
        # message_delta's, not message_start's placeholder
        assert (receipt.text, receipt.finish) == ("ack", "stop")
        assert (receipt.usage.input_tokens, receipt.usage.output_tokens) == (10 + written + read, 4)
        assert (receipt.usage.cache_write_tokens or 0, receipt.usage.cache_read_tokens or 0) == (
            written,
            read,
        )
