"""Recorded real Ollama ``/api/chat`` traffic, decoded over 127.0.0.1 to what an independent
reading of the bodies says.

Neither pydantic-ai nor vercel/ai records Ollama's native API (pydantic-ai reaches Ollama
through its OpenAI-compatible ``/v1``; vercel/ai has no Ollama provider). The bodies are
written here in our own words, following the structure of what Ollama 0.13.5 answered
(``qwen3:32b``), observed and published in BigBIueWhale/ollama_load_balancer
(test/ollama_observation/README.md, "Exact Response Bodies" and "Tool Calling"): a stream
served as ``application/x-ndjson``, every line's ``content`` an empty string beside its
``thinking`` piece, the last line's ``done_reason`` ``length`` (``num_predict`` reached
while the model was still thinking, so the turn has no answer text) with the durations and
counts; the same turn unstreamed; a tool call with an ``id``, a ``function.index`` and its
arguments an object, beside thinking.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import fixed_reply, json_reply, serving
from runport.conformance.providers import WEATHER, make_request, run_streamed
from runport.contracts import ReasoningDelta
from runport.ollama import OllamaChatAdapter

MODEL = "qwen3:32b"
THINKING = ("Okay", ",", " the", " user", " is", " asking", ' "What', " is", " 2+2?", '"')
STATS = {
    "total_duration": 328393900,
    "load_duration": 40996735,
    "prompt_eval_count": 22,
    "prompt_eval_duration": 15246873,
    "eval_count": 20,
    "eval_duration": 265432931,
}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


def lines() -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = [
        {
            "model": MODEL,
            "created_at": f"2026-01-10T16:55:30.{915663454 + 8_000_000 * n}Z",
            "message": {"role": "assistant", "content": "", "thinking": piece},
            "done": False,
        }
        for n, piece in enumerate(THINKING)
    ]
    chunks.append(
        {
            "model": MODEL,
            "created_at": "2026-01-10T16:55:31.156677988Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "length",
            **STATS,
        }
    )
    return chunks


WHOLE = {
    "model": MODEL,
    "created_at": "2026-01-10T16:55:30.827221299Z",
    "message": {
        "role": "assistant",
        "content": "",
        "thinking": 'Okay, the user is asking "What is 2+2?" and wants the',
    },
    "done": True,
    "done_reason": "length",
    **STATS,
    "total_duration": 371277452,
}


def adapter_on(base_url: str, client: httpx.Client) -> OllamaChatAdapter:
    return OllamaChatAdapter(base_url=base_url.removesuffix("/v1"), model=MODEL, http_client=client)


def test_a_recorded_turn_cut_while_thinking_streamed_and_unstreamed(client: httpx.Client) -> None:
    body = b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines())
    reply = fixed_reply("200 OK", {"Content-Type": "application/x-ndjson"}, body)
    with serving(reply, json_reply(WHOLE)) as server:
        adapter = adapter_on(server.base_url, client)
        outcome = run_streamed(adapter, make_request())
        whole = adapter.execute(make_request())
    receipt = outcome.receipt
    assert receipt is not None, outcome.error

    # by hand: the thinking pieces joined, no answer, cut at num_predict, the last line's counts
    chunks = lines()
    thought = "".join(chunk["message"].get("thinking", "") for chunk in chunks)
    last = chunks[-1]
    for read, text in ((receipt, thought), (whole, WHOLE["message"]["thinking"])):
        assert [part.text for part in read.reasoning or []] == [text]
        assert not read.text
        assert (read.finish, read.finish_reason) == ("length", last["done_reason"])
        assert read.usage is not None
        assert (read.usage.input_tokens, read.usage.output_tokens) == (
            last["prompt_eval_count"],
            last["eval_count"],
        )
    pieces = [event.text for event in outcome.events if isinstance(event, ReasoningDelta)]
    assert pieces == list(THINKING)


def test_a_recorded_tool_call_with_an_id_and_an_index(client: httpx.Client) -> None:
    answer = {
        "model": MODEL,
        "message": {
            "role": "assistant",
            "content": "",
            "thinking": "Okay, the user is asking for the weather in Paris.",
            "tool_calls": [
                {
                    "id": "call_d1imwj4g",
                    "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        "done": True,
        "done_reason": "length",
    }
    with serving(json_reply(answer)) as server:
        receipt = adapter_on(server.base_url, client).execute(make_request(tools=[WEATHER]))
    message = answer["message"]
    [sent] = message["tool_calls"]
    assert [(c.call_id, c.name, c.arguments) for c in receipt.tool_calls] == [
        (sent["id"], sent["function"]["name"], sent["function"]["arguments"])
    ]
    assert [part.text for part in receipt.reasoning or []] == [message["thinking"]]
    assert (receipt.finish, receipt.finish_reason) == ("length", answer["done_reason"])
