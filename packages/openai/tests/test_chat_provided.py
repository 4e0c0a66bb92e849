"""What a chat completions server did itself, over real HTTP on 127.0.0.1: a message's
``annotations`` (``url_citation``) are ``Citation``s and its ``images`` (``data:`` URLs) generated
files, streamed and unstreamed alike; an annotation of another kind is kept
(adr/0054-nothing-a-provider-sends-is-dropped.md, adr/0055-what-the-provider-did-itself.md).

The bodies are written here from the shapes OpenAI's search models and OpenRouter's image output
document: a completion, and the chunks a stream cuts it into."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import json_reply, serving, stream_reply
from runport.conformance.providers import make_request, run_streamed
from runport.contracts import Citation, CitationSource, ErrorCode, ExecutionReceipt
from runport.openai import OpenAIChatAdapter
from runport.ports import PortError

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x09" * 16).decode()
GIF = base64.b64encode(b"GIF89a" + b"\x09" * 16).decode()
TEXT = "The latest release shipped on Monday [example.com](https://example.com/news)."
CITED = {
    "type": "url_citation",
    "url_citation": {
        "end_index": 77,
        "start_index": 37,
        "title": "Release news",
        "url": "https://example.com/news?utm_source=openai",
    },
}


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-test-search",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
    }


def chunks(deltas: list[dict[str, Any]]) -> list[bytes]:
    frames = [
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d}]}
        for d in deltas
    ]
    frames[-1]["choices"][0]["finish_reason"] = "stop"
    frames.append(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
        }
    )
    return [f"data: {json.dumps(f)}\n\n".encode() for f in frames] + [b"data: [DONE]\n\n"]


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


def both_ways(
    client: httpx.Client, deltas: list[dict[str, Any]], message: dict[str, Any]
) -> tuple[list[Any], ExecutionReceipt]:
    with serving(stream_reply(chunks(deltas)), json_reply(completion(message))) as server:
        adapter = OpenAIChatAdapter(base_url=server.base_url, model="m", http_client=client)
        outcome = run_streamed(adapter, make_request())
        whole = adapter.execute(make_request())
    assert outcome.receipt is not None, outcome.error
    assert whole == outcome.receipt
    return outcome.events, whole


def test_url_citations_streamed_in_the_last_delta_and_unstreamed(client: httpx.Client) -> None:
    deltas = [
        {"role": "assistant", "content": TEXT[:30]},
        {"content": TEXT[30:]},
        {"annotations": [CITED]},
    ]
    message = {"role": "assistant", "content": TEXT, "annotations": [CITED]}
    events, receipt = both_ways(client, deltas, message)
    cited = CITED["url_citation"]
    assert receipt.citations == [
        Citation(
            source=CitationSource(type="url", url=cited["url"], title=cited["title"]),
            start=37,
            end=77,
        )
    ]
    assert [type(event).__name__ for event in events[:-1]] == ["Delta", "Delta", "Citation"]
    assert receipt.text is not None
    assert receipt.text[37:77] == "[example.com](https://example.com/news)."


def test_an_annotation_of_another_kind_is_kept(client: httpx.Client) -> None:
    other = {"type": "file_citation", "file_citation": {"file_id": "f1"}}
    message = {"role": "assistant", "content": "ok", "annotations": [other]}
    _, receipt = both_ways(client, [{"content": "ok", "annotations": [other]}], message)
    assert receipt.provider_metadata == {"openai": {"unknown": [{"annotation": other}]}}


def test_an_image_as_a_data_url_is_a_generated_file(client: httpx.Client) -> None:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    message = {"role": "assistant", "content": "Here.", "images": [image]}
    events, receipt = both_ways(client, [{"content": "Here."}, {"images": [image]}], message)
    assert receipt.files is not None
    assert [(f.media_type, f.data) for f in receipt.files] == [("image/png", PNG)]
    assert [type(event).__name__ for event in events[:-1]] == ["Delta", "FileDelta"]


def test_a_data_url_whose_bytes_are_not_its_declared_type_is_coded(client: httpx.Client) -> None:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{GIF}"}}
    message = {"role": "assistant", "content": None, "images": [image]}
    with serving(json_reply(completion(message))) as server:
        adapter = OpenAIChatAdapter(base_url=server.base_url, model="m", http_client=client)
        with pytest.raises(PortError) as raised:
            adapter.execute(make_request())
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "image/gif" in raised.value.message


def test_a_citation_past_the_text_is_coded(client: httpx.Client) -> None:
    wild = {"type": "url_citation", "url_citation": {**CITED["url_citation"], "end_index": 999}}
    message = {"role": "assistant", "content": TEXT, "annotations": [wild]}
    with serving(json_reply(completion(message))) as server:
        adapter = OpenAIChatAdapter(base_url=server.base_url, model="m", http_client=client)
        with pytest.raises(PortError) as raised:
            adapter.execute(make_request())
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "past the answer" in raised.value.message
