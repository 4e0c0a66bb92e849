"""Recorded real Cohere v2 chat traffic, decoded over 127.0.0.1 to what an independent reading
of the bodies says.

The bodies are written here in our own words, content shortened, following the structure of
streams and answers recorded from the live API and published in vercel/ai
(packages/cohere/src/__fixtures__/): ``cohere-text.chunks.txt`` / ``cohere-text.json`` (a
``message-start`` whose message holds empty ``tool_plan``, ``tool_calls`` and ``citations``,
a ``content-start`` with empty text, the usage as ``billed_units`` beside ``tokens`` and
``cached_tokens``), ``cohere-tool-call.chunks.txt`` (the plan in ``tool-plan-delta`` pieces,
two calls each started with empty ``arguments`` then filled in pieces),
``cohere-empty-tool-call.chunks.txt`` (a call with no argument deltas at all),
``cohere-reasoning.chunks.txt`` (a ``thinking`` content block, then a ``text`` one) and
``cohere-citations.json`` (each citation's ``text`` the answer's own words at its span, its
one source a ``document`` with ``id`` ``doc:0``, ``type: TEXT_CONTENT``). Each event goes
as Cohere streams it, an ``event:`` line naming its type before its ``data:``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runport.cohere import CohereChatAdapter
from runport.conformance.loopback import fixed_reply, json_reply, serving
from runport.conformance.providers import WEATHER, Outcome, make_request, run_streamed
from runport.contracts import ExecutionReceipt

USAGE = {
    "billed_units": {"input_tokens": 12, "output_tokens": 7},
    "tokens": {"input_tokens": 507, "output_tokens": 10},
    "cached_tokens": 448,
}
START = {
    "id": "321d178c-2c12-44d3-ae42-2f5510f6b1cc",
    "type": "message-start",
    "delta": {
        "message": {
            "role": "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
    },
}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


def block(index: int, kind: str, pieces: tuple[str, ...]) -> list[dict[str, Any]]:
    opened = {"message": {"content": {"type": kind, kind: ""}}}
    return [
        {"type": "content-start", "index": index, "delta": opened},
        *[
            {"type": "content-delta", "index": index,
             "delta": {"message": {"content": {kind: piece}}}}
            for piece in pieces
        ],
        {"type": "content-end", "index": index},
    ]  # fmt: skip


def call(index: int, call_id: str, name: str, pieces: tuple[str, ...]) -> list[dict[str, Any]]:
    function = {"name": name, "arguments": ""}
    started = {"message": {"tool_calls": {"id": call_id, "type": "function", "function": function}}}
    return [
        {"type": "tool-call-start", "index": index, "delta": started},
        *[
            {"type": "tool-call-delta", "index": index,
             "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}}}
            for piece in pieces
        ],
        {"type": "tool-call-end", "index": index},
    ]  # fmt: skip


def plan(pieces: tuple[str, ...]) -> list[dict[str, Any]]:
    return [
        {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}} for piece in pieces
    ]


def end(reason: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message-end", "delta": {"finish_reason": reason, "usage": usage}}


def streamed(client: httpx.Client, events: list[dict[str, Any]], **request: Any) -> Outcome:
    body = b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )
    with serving(fixed_reply("200 OK", {"Content-Type": "text/event-stream"}, body)) as server:
        adapter = CohereChatAdapter(
            base_url=server.base_url,
            model="command-a-03-2025",
            api_key="co-key",
            http_client=client,
        )
        outcome = run_streamed(adapter, make_request(**request))
    assert outcome.receipt is not None, outcome.error
    return outcome


def read(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The stream walked by hand: the text, the thinking, the plan, each call's id, name and
    joined arguments, the finish and the token counts."""
    said: dict[str, Any] = {"text": "", "thinking": "", "plan": "", "calls": {}}
    for event in events:
        message = event.get("delta", {}).get("message", {})
        if event["type"] == "content-delta":
            content = message["content"]
            said["text"] += content.get("text", "")
            said["thinking"] += content.get("thinking", "")
        elif event["type"] == "tool-plan-delta":
            said["plan"] += message["tool_plan"]
        elif event["type"] == "tool-call-start":
            started = message["tool_calls"]
            said["calls"][event["index"]] = [started["id"], started["function"]["name"], ""]
        elif event["type"] == "tool-call-delta":
            said["calls"][event["index"]][2] += message["tool_calls"]["function"]["arguments"]
        elif event["type"] == "message-end":
            said["finish"] = event["delta"]["finish_reason"]
            said["usage"] = event["delta"]["usage"]
    return said


def counts(receipt: ExecutionReceipt) -> tuple[Any, ...]:
    assert receipt.usage is not None
    usage = receipt.usage
    return usage.input_tokens, usage.output_tokens, usage.cache_read_tokens


def test_a_recorded_text_stream_and_its_whole_answer(client: httpx.Client) -> None:
    events = [
        START,
        *block(0, "text", ("The", " capital", " of", " France", " is", " Paris", ".")),
        end("COMPLETE", USAGE),
    ]
    said = read(events)
    receipt = streamed(client, events).receipt
    assert receipt is not None
    assert receipt.text == said["text"]
    assert (receipt.finish, receipt.finish_reason) == ("stop", said["finish"])
    # ``tokens`` is what the model saw; ``billed_units`` only what was billed
    tokens = said["usage"]["tokens"]
    assert counts(receipt) == (
        tokens["input_tokens"],
        tokens["output_tokens"],
        said["usage"]["cached_tokens"],
    )

    whole = {
        "id": "e7592632-1e3d-424f-b129-bd5f9f980f7b",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "The capital of France is Paris."}],
        },
        "finish_reason": "COMPLETE",
        "usage": USAGE,
    }
    with serving(json_reply(whole)) as server:
        adapter = CohereChatAdapter(
            base_url=server.base_url,
            model="command-a-03-2025",
            api_key="co-key",
            http_client=client,
        )
        plain = adapter.execute(make_request())
    assert plain.text == whole["message"]["content"][0]["text"]
    assert counts(plain) == counts(receipt)


PLANNED = ("I", " will", " use the weather tool", " to find the weather", " in San Francisco.")


@pytest.mark.parametrize("arguments", [True, False], ids=["in-pieces", "none"])
def test_a_recorded_plan_then_calls(client: httpx.Client, arguments: bool) -> None:
    if arguments:
        calls = [
            *call(
                0, "weather_e8p4pn45zt0t", "get_weather", ('{"', "city", '":', ' "', "Oslo", '"}')
            ),
            *call(1, "cityAttractions_pyxssbwnq9fq", "cityAttractions", ('{"city": "Oslo"}',)),
        ]
    else:
        calls = call(0, "currentTime_y46ar19t5gvw", "currentTime", ())
    usage = {
        "billed_units": {"input_tokens": 119, "output_tokens": 44},
        "tokens": {"input_tokens": 1549, "output_tokens": 95},
        "cached_tokens": 1504,
    }
    events = [START, *plan(PLANNED), *calls, end("TOOL_CALL", usage)]
    said = read(events)
    receipt = streamed(client, events, tools=[WEATHER]).receipt
    assert receipt is not None
    assert [(c.call_id, c.name, c.arguments) for c in receipt.tool_calls] == [
        (call_id, name, json.loads(text) if text else {})
        for call_id, name, text in said["calls"].values()
    ]
    assert [(part.text, part.provider_metadata) for part in receipt.reasoning or []] == [
        (said["plan"], {"cohere": {"type": "tool_plan"}})
    ]
    assert (receipt.finish, receipt.text) == ("tool_calls", None)
    assert counts(receipt) == (1549, 95, 1504)


def test_a_recorded_thinking_block_then_text(client: httpx.Client) -> None:
    thought = ("The user is asking for the sum", " of 2 and 2.", " I can answer directly.")
    events = [
        START,
        *block(0, "thinking", thought),
        *block(1, "text", ("The answer", " to 2 + 2", " is 4.")),
        end(
            "COMPLETE",
            {
                "billed_units": {"input_tokens": 8, "output_tokens": 50},
                "tokens": {"input_tokens": 1394, "output_tokens": 54},
                "cached_tokens": 1360,
            },
        ),
    ]
    said = read(events)
    receipt = streamed(client, events).receipt
    assert receipt is not None
    assert receipt.text == said["text"]
    assert [(part.text, part.provider_metadata) for part in receipt.reasoning or []] == [
        (said["thinking"], {"cohere": {"type": "thinking"}})
    ]
    assert counts(receipt) == (1394, 54, 1360)


ANSWER = (
    "The key benefits mentioned in this document are:\n1. Automation of tasks\n"
    "2. Better decision-making\n3. Cost reduction"
)
DOCUMENT = {
    "id": "doc:0",
    "text": "AI provides: 1. Automation of tasks 2. Better decision-making 3. Cost reduction",
    "title": "benefits.txt",
}


def citation(words: str) -> dict[str, Any]:
    start = ANSWER.index(words)
    return {
        "start": start,
        "end": start + len(words),
        "text": words,
        "sources": [{"type": "document", "id": "doc:0", "document": DOCUMENT}],
        "type": "TEXT_CONTENT",
    }


CITED = {
    "id": "68475c80-574b-4c65-98a4-e81cebab5dce",
    "message": {
        "role": "assistant",
        "content": [{"type": "text", "text": ANSWER}],
        "citations": [
            citation(words)
            for words in ("Automation of tasks", "Better decision-making", "Cost reduction")
        ],
    },
    "finish_reason": "COMPLETE",
    "usage": {
        "billed_units": {"input_tokens": 39, "output_tokens": 27},
        "tokens": {"input_tokens": 1683, "output_tokens": 62},
        "cached_tokens": 992,
    },
}


def test_recorded_citations_cite_their_span_of_the_answer(client: httpx.Client) -> None:
    with serving(json_reply(CITED)) as server:
        adapter = CohereChatAdapter(
            base_url=server.base_url,
            model="command-a-03-2025",
            api_key="co-key",
            http_client=client,
        )
        receipt = adapter.execute(make_request())
    assert receipt.text == ANSWER
    notes = CITED["message"]["citations"]
    # by hand: each citation's text is the answer's own words at start..end (not the
    # document's passage), its source the document named by its title
    assert all(ANSWER[note["start"] : note["end"]] == note["text"] for note in notes)
    assert [
        (c.source.type, c.source.title, c.cited_text, c.start, c.end)
        for c in receipt.citations or []
    ] == [
        ("document", note["sources"][0]["document"]["title"], None, note["start"], note["end"])
        for note in notes
    ]
