"""Recorded real chat-completions traffic with citations, and Azure OpenAI's, decoded over
127.0.0.1 to what an independent reading of the bodies says.

The bodies are written here in our own words, content shortened, following the structure of
answers recorded from the live services and published in:

- pydantic-ai, ``tests/models/cassettes/test_openrouter/
  test_openrouter_web_search_annotations_stream.yaml`` and ``..._annotations.yaml``
  (OpenRouter's ``openrouter:web_search`` tool): ``: OPENROUTER PROCESSING`` comment lines
  first; one leading chunk per ``url_citation`` annotation, its ``content`` empty, each
  annotation with ``start_index`` and ``end_index`` both ``0`` and the page's passage in
  ``content``, one with an empty ``title``; ``native_finish_reason``; two chunks with
  ``finish_reason: stop``, the second with the usage (``cost``, ``server_tool_use_details``);
- pydantic-ai, ``tests/models/cassettes/test_openai/test_openai_web_search_tool.yaml``
  (``gpt-4o-search-preview``): ``annotations: []`` beside the content;
- vercel/ai, ``packages/perplexity/src/__fixtures__/perplexity-citations.chunks.txt`` and
  ``perplexity-citations.json`` (``sonar``): the top-level ``citations`` URLs and the usage
  repeated on every chunk, ``[n]`` markers in the text, a last chunk whose ``object`` is
  ``chat.completion.done``;
- vercel/ai, ``packages/openai/src/chat/__fixtures__/azure-model-router.1.chunks.txt`` (Azure
  OpenAI's model router): a first chunk with no choices, empty ``id``/``model``/``object``
  and ``created: 0``, holding ``prompt_filter_results``; ``content_filter_results`` on every
  choice (``{}`` on the role and finish chunks); ``obfuscation``; the usage in a last chunk
  with no choices;
- pydantic-ai, ``tests/providers/cassettes/test_azure/test_azure_provider_call.yaml`` (an
  Azure deployment, unstreamed): ``content_filter_results`` with ``protected_material_*``
  beside the message, ``prompt_filter_results``.

(adr/0055-what-the-provider-did-itself.md)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import fixed_reply, json_reply, serving
from runport.conformance.providers import Outcome, make_request, run_streamed
from runport.contracts import Citation, ExecutionReceipt
from runport.openai import AzureOpenAIChatAdapter, OpenAIChatAdapter

KEY = "sk-recorded-shapes"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


def sse(chunks: list[dict[str, Any]], *, comments: int = 0) -> bytes:
    lines = [b": OPENROUTER PROCESSING\n\n"] * comments
    lines += [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]
    return b"".join(lines) + b"data: [DONE]\n\n"


def replay(
    client: httpx.Client,
    stream: bytes,
    body: dict[str, Any],
    *,
    azure: bool = False,
) -> tuple[Outcome, ExecutionReceipt]:
    reply = fixed_reply("200 OK", {"Content-Type": "text/event-stream"}, stream)
    with serving(reply, json_reply(body)) as server:
        kind = AzureOpenAIChatAdapter if azure else OpenAIChatAdapter
        adapter = kind(base_url=server.base_url, model="gpt-4o", api_key=KEY, http_client=client)
        streamed = run_streamed(adapter, make_request())
        whole = adapter.execute(make_request())
    assert streamed.receipt is not None, streamed.error
    return streamed, whole


def cited(receipt: ExecutionReceipt) -> list[tuple[Any, ...]]:
    return [
        (c.source.url, c.source.title, c.cited_text, c.start, c.end)
        for c in receipt.citations or []
    ]


# -- OpenRouter's web search -------------------------------------------------------------------

GENERATION = {
    "id": "gen-1786680764-gY2YTdjLLLQA6Cd1Wa6J",
    "object": "chat.completion.chunk",
    "created": 1786680764,
    "model": "deepseek/deepseek-chat",
    "provider": "OpenAI",
}
PAGES = [
    {
        "url": "https://github.com/pydantic/pydantic-ai",
        "title": "AI Agent Framework, the Pydantic way - GitHub",
        "start_index": 0,
        "end_index": 0,
        "content": "# pydantic/pydantic-ai\n\n...\n\n- Stars: 19265\n- License: MIT License",
    },
    {
        "url": "https://pydantic.dev/pydantic-ai",
        "title": "",
        "start_index": 0,
        "end_index": 0,
        "content": "Get started: https://pydantic.dev/docs/ai/ · GitHub\n\n...\n\nuv add p",
    },
    {
        "url": "https://github.com/pydantic/pydantic-ai/releases/tag/v2.0.0",
        "title": "v2.0.0 (2026-06-23)",
        "start_index": 0,
        "end_index": 0,
        "content": "- Tag: v2.0.0\n\n...\n\n# \U0001f389 Pydantic AI V2.0 is here!",
    },
]
WORDS = ("The", " URL", " for P", "yd", "antic AI", "'s GitHub repository", " is:  \n\n")
LINK = ("https://github.com", "/pyd", "antic/pyd", "antic-", "ai")
ROUTER_USAGE = {
    "prompt_tokens": 2317,
    "completion_tokens": 53,
    "total_tokens": 2370,
    "cost": 0.0076509169000000005,
    "prompt_tokens_details": {
        "cached_tokens": 0,
        "cache_write_tokens": 0,
        "audio_tokens": 0,
        "video_tokens": 0,
    },
    "completion_tokens_details": {"reasoning_tokens": 0, "image_tokens": 0, "audio_tokens": 0},
    "cost_details": {"upstream_inference_cost": 0.0006509169},
    "server_tool_use_details": {
        "web_search_requests": 1,
        "tool_calls_requested": 1,
        "tool_calls_executed": 1,
    },
}


def router_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": {"role": "assistant", **delta}}
    choice |= {"finish_reason": finish, "native_finish_reason": finish}
    return {**GENERATION, **extra, "choices": [choice]}


ROUTER_STREAM = [
    *[
        router_chunk({"content": "", "annotations": [{"type": "url_citation", "url_citation": p}]})
        for p in PAGES
    ],
    *[router_chunk({"content": piece}) for piece in WORDS + LINK],
    router_chunk({"content": ""}, "stop"),
    router_chunk({"content": ""}, "stop", service_tier=None, usage=ROUTER_USAGE),
]
ROUTER_BODY = {
    "choices": [
        {
            "finish_reason": "stop",
            "index": 0,
            "logprobs": None,
            "message": {
                "annotations": [{"type": "url_citation", "url_citation": p} for p in PAGES],
                "content": "".join(LINK),
                "reasoning": None,
                "refusal": None,
                "role": "assistant",
            },
        }
    ],
    "created": 1786680756,
    "id": "gen-1786680756-Fmq0SbiQ50hlHCCn30d5",
    "model": "deepseek/deepseek-chat",
    "object": "chat.completion",
    "provider": "OpenAI",
    "service_tier": None,
    "system_fingerprint": None,
    "usage": {**ROUTER_USAGE, "prompt_tokens": 2315, "completion_tokens": 40},
}


def read_annotations(notes: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each cited page as the annotation says it: URL, title as sent (empty included), the
    passage, the span (here ``0`` to ``0``: it covers no words of the answer)."""
    return [
        (
            note["url_citation"]["url"],
            note["url_citation"]["title"],
            note["url_citation"]["content"],
            note["url_citation"]["start_index"],
            note["url_citation"]["end_index"],
        )
        for note in notes
    ]


def test_openrouter_s_web_search_annotations_streamed_and_unstreamed(
    client: httpx.Client,
) -> None:
    streamed, whole = replay(client, sse(ROUTER_STREAM, comments=3), ROUTER_BODY)
    receipt = streamed.receipt
    assert receipt is not None

    notes = [
        note
        for chunk in ROUTER_STREAM
        for note in chunk["choices"][0]["delta"].get("annotations", [])
    ]
    assert cited(receipt) == read_annotations(notes)
    assert receipt.text == "".join(
        chunk["choices"][0]["delta"]["content"] for chunk in ROUTER_STREAM
    )
    assert all(receipt.text[c.start or 0 : c.end] == "" for c in receipt.citations or [])
    assert (receipt.finish, receipt.usage and receipt.usage.input_tokens) == ("stop", 2317)
    # each citation is given as its chunk arrives, before the answer's first words
    kinds = [type(event).__name__ for event in streamed.events]
    assert kinds[: len(PAGES) + 1] == ["Citation"] * len(PAGES) + ["Delta"]

    message = ROUTER_BODY["choices"][0]["message"]
    assert cited(whole) == read_annotations(message["annotations"])
    assert whole.text == message["content"]
    assert whole.usage is not None
    assert (whole.usage.input_tokens, whole.usage.output_tokens) == (2315, 40)


def test_a_search_model_s_empty_annotations_cite_nothing(client: httpx.Client) -> None:
    body = {
        "choices": [
            {
                "finish_reason": "stop",
                "index": 0,
                "message": {
                    "annotations": [],
                    "content": "May 14, 2025, 8:51:29 AM ",
                    "refusal": None,
                    "role": "assistant",
                },
            }
        ],
        "created": 1747227087,
        "id": "chatcmpl-e05fbf7b-44c0-406d-8662-bc7a9a518747",
        "model": "gpt-4o-search-preview-2025-03-11",
        "object": "chat.completion",
        "system_fingerprint": "",
        "usage": {"completion_tokens": 17, "prompt_tokens": 11, "total_tokens": 28},
    }
    with serving(json_reply(body)) as server:
        adapter = OpenAIChatAdapter(
            base_url=server.base_url, model="gpt-4o-search-preview", api_key=KEY, http_client=client
        )
        receipt = adapter.execute(make_request())
    assert receipt.text == "May 14, 2025, 8:51:29 AM "
    assert receipt.citations is None


# -- Perplexity's sources ----------------------------------------------------------------------

SOURCES = [
    "https://populationstat.com/united-states/san-francisco",
    "https://en.wikipedia.org/wiki/San_Francisco",
    "https://fred.stlouisfed.org/graph/?g=4K5j",
]
SONAR = ("The current", " population is about **827,526**", ".[2][3]", "\n\nAbout 893,000.[1]")


def sonar_chunk(number: int, delta: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": "58cb9740-f356-49e9-b71e-a02a1376c1b9",
        "model": "sonar",
        "created": 1770768240,
        "usage": {"prompt_tokens": 10, "completion_tokens": number, "total_tokens": 10 + number},
        "citations": SOURCES,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"role": "assistant", **delta}, **extra}],
    }


SONAR_STREAM = [
    *[sonar_chunk(number, {"content": piece}) for number, piece in enumerate(SONAR, 1)],
    {
        **sonar_chunk(len(SONAR), {"content": ""}, finish_reason="stop"),
        "object": "chat.completion.done",
    },
]
SONAR_BODY = {
    "id": "702738a1-c1e0-4a7f-b9ab-0f6fe1b13514",
    "model": "sonar",
    "created": 1770768226,
    "usage": {"prompt_tokens": 10, "completion_tokens": 251, "total_tokens": 261},
    "citations": SOURCES,
    "object": "chat.completion",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "".join(SONAR)},
            "finish_reason": "stop",
        }
    ],
}


def test_perplexity_s_top_level_citations_are_cited_once(client: httpx.Client) -> None:
    streamed, whole = replay(client, sse(SONAR_STREAM), SONAR_BODY)
    receipt = streamed.receipt
    assert receipt is not None
    # every chunk repeats the same list: each URL is one source, in the list's order
    said = [(url, None, None, None, None) for url in SONAR_STREAM[-1]["citations"]]
    assert cited(receipt) == said
    assert cited(whole) == [(url, None, None, None, None) for url in SONAR_BODY["citations"]]
    assert receipt.text == "".join(SONAR) == whole.text
    assert sum(isinstance(event, Citation) for event in streamed.events) == len(SOURCES)
    # the usage of the last chunk stands (each chunk's counts so far)
    assert receipt.usage is not None
    assert (receipt.usage.input_tokens, receipt.usage.output_tokens) == (10, len(SONAR))
    assert receipt.finish == "stop"


# -- Azure OpenAI ------------------------------------------------------------------------------

SAFE = {"filtered": False, "severity": "safe"}
FILTERED = {"hate": SAFE, "self_harm": SAFE, "sexual": SAFE, "violence": SAFE}
ROUTER = {
    "created": 1762317021,
    "id": "chatcmpl-CYPS1lijGoK8gd9lYzY3r9Sx50nbt",
    "model": "gpt-5-nano-2025-08-07",
    "object": "chat.completion.chunk",
    "system_fingerprint": None,
}


def azure_chunk(filters: dict[str, Any], delta: dict[str, Any], finish: str | None = None) -> Any:
    choice = {"content_filter_results": filters, "delta": delta, "finish_reason": finish}
    return {
        **ROUTER,
        "choices": [{**choice, "index": 0, "logprobs": None}],
        "obfuscation": "D3WbtIxo1Q",
        "usage": None,
    }


AZURE_STREAM = [
    {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [
            {
                "prompt_index": 0,
                "content_filter_results": {
                    **FILTERED,
                    "jailbreak": {"filtered": False, "detected": False},
                },
            }
        ],
    },
    azure_chunk({}, {"content": "", "refusal": None, "role": "assistant"}),
    *[azure_chunk(FILTERED, {"content": piece}) for piece in ("Capital", " of", " Denmark", ".")],
    azure_chunk({}, {}, "stop"),
    {
        **ROUTER,
        "choices": [],
        "obfuscation": "DjqQ9RbEQMJ3PX",
        "usage": {
            "completion_tokens": 78,
            "completion_tokens_details": {"audio_tokens": 0, "reasoning_tokens": 64},
            "prompt_tokens": 15,
            "prompt_tokens_details": {"audio_tokens": 0, "cached_tokens": 0},
            "total_tokens": 93,
        },
    },
]
PROTECTED = {"detected": False, "filtered": False}
AZURE_BODY = {
    "choices": [
        {
            "content_filter_results": {
                **FILTERED,
                "protected_material_code": PROTECTED,
                "protected_material_text": PROTECTED,
            },
            "finish_reason": "stop",
            "index": 0,
            "logprobs": None,
            "message": {
                "content": "The capital of France is **Paris**.",
                "refusal": None,
                "role": "assistant",
            },
        }
    ],
    "created": 1741880483,
    "id": "chatcmpl-BAeyRj7gU6aCNSSAskAFbupBWYMIT",
    "model": "gpt-4o-2024-11-20",
    "object": "chat.completion",
    "prompt_filter_results": [
        {"content_filter_results": {**FILTERED, "jailbreak": PROTECTED}, "prompt_index": 0}
    ],
    "system_fingerprint": "fp_ded0d14823",
    "usage": {
        "completion_tokens": 9,
        "completion_tokens_details": {"reasoning_tokens": 0},
        "prompt_tokens": 14,
        "prompt_tokens_details": {"cached_tokens": 0},
        "total_tokens": 23,
    },
}


def test_azure_s_filter_results_and_choiceless_chunks(client: httpx.Client) -> None:
    streamed, whole = replay(client, sse(AZURE_STREAM), AZURE_BODY, azure=True)
    receipt = streamed.receipt
    assert receipt is not None
    text = "".join(
        choice["delta"].get("content") or ""
        for chunk in AZURE_STREAM
        for choice in chunk["choices"]
    )
    usage = AZURE_STREAM[-1]["usage"]
    assert receipt.text == text == "Capital of Denmark."
    assert receipt.usage is not None
    assert (
        receipt.usage.input_tokens,
        receipt.usage.output_tokens,
        receipt.usage.reasoning_tokens,
    ) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
        usage["completion_tokens_details"]["reasoning_tokens"],
    )
    assert (receipt.finish, receipt.citations, receipt.adapter.id) == (
        "stop",
        None,
        "azure-openai-chat",
    )

    message = AZURE_BODY["choices"][0]["message"]
    assert whole.text == message["content"]
    assert whole.usage is not None
    assert (whole.usage.input_tokens, whole.usage.output_tokens) == (14, 9)
    assert whole.finish == "stop"
