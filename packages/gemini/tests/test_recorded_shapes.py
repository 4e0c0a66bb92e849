"""Recorded real Gemini traffic, decoded over 127.0.0.1 to what an independent reading of the
body says. The body is written here in our own words, following the structure of a response
recorded from the live API and published in vercel/ai
(packages/google/src/__fixtures__/google-code-execution-multiple-results.json): one
``executableCode`` part followed by two ``codeExecutionResult`` parts (the run's output, then
its failure), each part beside a ``thoughtSignature``, then the answer text
(adr/0055-what-the-provider-did-itself.md)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from runport.conformance.loopback import json_reply, serving, stream_reply
from runport.conformance.providers import WEATHER, Provider, make_request, run_streamed
from runport.conformance.vertex import EXPRESS_KEY, VertexEmulation
from runport.contracts import ServerToolCall, ServerToolResult
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter

PROVIDER = Provider(GeminiAdapter, AsyncGeminiAdapter, "gemini-test", "AIzaSyTEST-recorded")

PARTS: list[dict[str, Any]] = [
    {
        "executableCode": {"language": "PYTHON", "code": "print('fine')\nprint(2/0)"},
        "thoughtSignature": "QmFzZTY0U2lnbmF0dXJlT25lMDEyMzQ1Njc4OQ",
    },
    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "fine\n"}},
    {
        "codeExecutionResult": {
            "outcome": "OUTCOME_FAILED",
            "output": 'Traceback (most recent call last):\n  File "<string>", line 2\n'
            "ZeroDivisionError: division by zero\n",
        }
    },
    {
        "text": "It printed `fine`, then failed dividing by zero.",
        "thoughtSignature": "QmFzZTY0U2lnbmF0dXJlVHdvMDEyMzQ1Njc4OQ",
    },
]
USAGE = {
    "promptTokenCount": 21,
    "candidatesTokenCount": 30,
    "totalTokenCount": 320,
    "toolUsePromptTokenCount": 269,
}


def whole() -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"parts": PARTS, "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": USAGE,
        "modelVersion": "gemini-test",
        "responseId": "rEcOrDeD-1",
    }


def read_independently(body: dict[str, Any]) -> tuple[list[tuple[str, Any]], str]:
    """What the body says, walked by hand: each code run with each of its results, in order,
    and the answer's text."""
    runs: list[tuple[str, Any]] = []
    text = ""
    for part in body["candidates"][0]["content"]["parts"]:
        if "executableCode" in part:
            runs.append(("ran", part["executableCode"]["code"]))
        elif "codeExecutionResult" in part:
            result = part["codeExecutionResult"]
            runs.append((result["outcome"], result["output"]))
        elif "text" in part:
            text += part["text"]
    return runs, text


def test_a_run_with_two_results_decodes_to_both_streamed_and_unstreamed(
    client: httpx.Client,
) -> None:
    body = whole()
    chunks = [
        {"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}]}
        for part in PARTS[:-1]
    ] + [{**body, "candidates": [{**body["candidates"][0], "content": {"parts": PARTS[-1:]}}]}]
    frames = [f"data: {json.dumps(chunk)}\r\n\r\n".encode() for chunk in chunks]
    with serving(stream_reply(frames), json_reply(body)) as server:
        adapter = PROVIDER.adapter_for(server, client)
        outcome = run_streamed(adapter, make_request())
        receipt = adapter.execute(make_request())
    assert outcome.receipt is not None, outcome.error
    assert receipt == outcome.receipt

    runs, text = read_independently(body)
    assert receipt.text == text
    decoded: list[tuple[str, Any]] = []
    calls: dict[str, str] = {}
    for item in receipt.server_tools or []:
        if isinstance(item, ServerToolCall):
            assert isinstance(item.input, dict)
            calls[item.call_id] = str(item.input["code"])
        else:
            assert isinstance(item, ServerToolResult)
            assert isinstance(item.output, dict)
            decoded += [("ran", calls[item.call_id])]
            decoded.append((str(item.output["outcome"]), item.output["output"]))
            assert item.error == (
                None if item.output["outcome"] == "OUTCOME_OK" else "OUTCOME_FAILED"
            )
    # every result is read, each beside the code that produced it (the code shown once)
    assert [entry for at, entry in enumerate(decoded) if entry[0] != "ran" or at == 0] == runs
    assert (
        len([item for item in receipt.server_tools or [] if isinstance(item, ServerToolResult)])
        == 2
    )


# The structure of a grounded answer recorded by pydantic-ai
# (tests/models/cassettes/test_google/test_google_gemini_web_search_citations.yaml): several
# chunks with the same title, supports naming several chunks each, the first support's segment
# with no ``startIndex`` (zero left out), a ``searchEntryPoint`` of rendered HTML, and a later
# answer whose ``groundingMetadata`` is ``{}``.
REDIRECT = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"
SENTENCES = (
    "The guide for the café library lives on its own website.",
    "It covers agents, streaming and évaluation.",
)
ANSWER = " ".join(SENTENCES)
SITES = [("docs.example.dev", "AUZIYQa1"), ("docs.example.dev", "AUZIYQb2"), ("git.example", "c3")]


def _segment(sentence: str) -> dict[str, Any]:
    """A sentence's span as Gemini gives it: UTF-8 byte offsets, a zero start left out."""
    start = len(ANSWER[: ANSWER.index(sentence)].encode())
    segment: dict[str, Any] = {"endIndex": start + len(sentence.encode()), "text": sentence}
    if start:
        segment["startIndex"] = start
    return segment


GROUNDED = {
    "candidates": [
        {
            "content": {"parts": [{"text": ANSWER}], "role": "model"},
            "finishReason": "STOP",
            "groundingMetadata": {
                "groundingChunks": [
                    {"web": {"title": title, "uri": REDIRECT + key}} for title, key in SITES
                ],
                "groundingSupports": [
                    {"groundingChunkIndices": [0, 1, 2], "segment": _segment(SENTENCES[0])},
                    {"groundingChunkIndices": [0, 2], "segment": _segment(SENTENCES[1])},
                ],
                "searchEntryPoint": {"renderedContent": "<style>.chip{}</style><a>docs</a>\n"},
                "webSearchQueries": ["café library guide", "café library docs"],
            },
            "index": 0,
        }
    ],
    "modelVersion": "gemini-test",
    "usageMetadata": {"promptTokenCount": 17, "candidatesTokenCount": 30, "totalTokenCount": 47},
}


def read_grounding(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each (page, title, words of the answer it backs), walked by hand from the bytes."""
    candidate = body["candidates"][0]
    data = "".join(part["text"] for part in candidate["content"]["parts"]).encode()
    meta = candidate["groundingMetadata"]
    said = []
    for support in meta["groundingSupports"]:
        begin, end = support["segment"].get("startIndex", 0), support["segment"]["endIndex"]
        for index in support["groundingChunkIndices"]:
            web = meta["groundingChunks"][index]["web"]
            said.append((web["uri"], web["title"], data[begin:end].decode()))
    return said


def test_a_recorded_grounded_answer_cites_what_its_supports_say(client: httpx.Client) -> None:
    later = {**GROUNDED, "candidates": [{**GROUNDED["candidates"][0], "groundingMetadata": {}}]}
    with serving(json_reply(GROUNDED), json_reply(later)) as server:
        adapter = PROVIDER.adapter_for(server, client)
        receipt = adapter.execute(make_request())
        plain = adapter.execute(make_request())
    assert receipt.text == ANSWER
    cited = []
    for citation in receipt.citations or []:
        assert citation.start is not None
        assert citation.end is not None
        cited.append(
            (citation.source.url, citation.source.title, ANSWER[citation.start : citation.end])
        )
    assert cited == read_grounding(GROUNDED)
    assert plain.citations is None
    assert plain.text == ANSWER


# -- Gemini on Vertex AI -----------------------------------------------------------------------
#
# The structure of answers recorded from Vertex AI's generateContent and published in
# pydantic-ai (tests/models/cassettes/test_google/):
# test_google_vertex_tool_combination_omits_include_server_side_tool_invocations.yaml (Google
# Search beside a function: first a ``functionCall`` with Vertex's own ``id`` and a
# ``thoughtSignature``, ``createTime``, ``trafficType`` and per-modality token details in the
# usage; then, after the function's result, an answer grounded by web chunks titled by their
# site, one a google.com search URL with spaces in it, supports naming their chunks out of
# order, byte offsets past ``°``) and test_google_vertex_service_tier_flex_stream.yaml (one
# stream chunk holding the whole answer, its ``thoughtSignature``, finish and usage, framed
# with CRLFs, ``trafficType: ON_DEMAND_FLEX``). That cassette's serializer turns an en dash
# into a hyphen (tests/json_body_serializer.py), which moves every later byte offset two
# bytes past the stored text; the text here keeps the dash, as the server sent it.
VERTEX_USAGE = {
    "candidatesTokenCount": 12,
    "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 12}],
    "promptTokenCount": 43,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 43}],
    "thoughtsTokenCount": 59,
    "totalTokenCount": 114,
    "trafficType": "ON_DEMAND",
}
ASKED = {
    "candidates": [
        {
            "content": {
                "parts": [
                    {
                        "functionCall": {"args": {}, "id": "vcyiitct", "name": "get_user_city"},
                        "thoughtSignature": "AY89a19Otdr37hcYt/uTONS2bytGlqxMLCYg",
                    }
                ],
                "role": "model",
            },
            "finishReason": "STOP",
        }
    ],
    "createTime": "2026-07-28T19:58:29.069844Z",
    "modelVersion": "gemini-3-flash-preview",
    "responseId": "5QlpatShBNyV3tMPkcCE2Ak",
    "usageMetadata": VERTEX_USAGE,
}
FORECAST = (
    "Based on your location in **San Francisco**, here is today's weather:\n\n",
    "*   **Current:** Approximately **66°F (19°C)**.",
    "*   **Humidity:** About **73% – 78%**.",
    "*   **Precipitation:** 0% chance of rain.",
    "**Note:** A heatwave may arrive later this week.",
)
FORECAST_TEXT = FORECAST[0] + "\n".join(FORECAST[1:])
SITES_ON_VERTEX = [
    ("google.com", "https://www.google.com/search?q=weather+in+San Francisco, CA,+US"),
    ("wunderground.com", REDIRECT + "AUZIYQGwunder"),
    ("weather25.com", REDIRECT + "AUZIYQHweather"),
    ("youtube.com", REDIRECT + "AUZIYQFyoutube"),
]


def _span(sentence: str) -> dict[str, Any]:
    data = FORECAST_TEXT.encode()
    start = data.index(sentence.encode())
    return {"endIndex": start + len(sentence.encode()), "startIndex": start, "text": sentence}


GROUNDED_ON_VERTEX = {
    "candidates": [
        {
            "content": {
                "parts": [{"text": FORECAST_TEXT, "thoughtSignature": "AY89a19fNfRvLWH70AMT"}],
                "role": "model",
            },
            "finishReason": "STOP",
            "groundingMetadata": {
                "groundingChunks": [{"web": {"title": t, "uri": u}} for t, u in SITES_ON_VERTEX],
                "groundingSupports": [
                    {"groundingChunkIndices": [0, 1], "segment": _span(FORECAST[1])},
                    {"groundingChunkIndices": [0, 1], "segment": _span(FORECAST[2])},
                    {"groundingChunkIndices": [2, 0, 1], "segment": _span(FORECAST[3])},
                    {"groundingChunkIndices": [3, 1], "segment": _span(FORECAST[4])},
                ],
                "searchEntryPoint": {"renderedContent": "<style>\n.container {}\n</style>"},
                "webSearchQueries": ["weather San Francisco July 28 2026"],
            },
        }
    ],
    "createTime": "2026-07-28T19:58:35.376789Z",
    "modelVersion": "gemini-3-flash-preview",
    "responseId": "6wlpatTvHqOV3tMPkcCE2Bk",
    "usageMetadata": {**VERTEX_USAGE, "candidatesTokenCount": 254, "totalTokenCount": 520},
}
FLEX_CHUNK = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [{"text": "OK", "thoughtSignature": "CiQBjz1rX"}],
            },
            "finishReason": "STOP",
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 5,
        "candidatesTokenCount": 1,
        "totalTokenCount": 106,
        "trafficType": "ON_DEMAND_FLEX",
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 5}],
        "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 1}],
        "thoughtsTokenCount": 100,
    },
    "modelVersion": "gemini-3-flash-preview",
    "createTime": "2026-03-21T18:11:55.919086Z",
    "responseId": "a9--aa6MOKL4vdIPz7X2iQ4",
}


def test_recorded_vertex_answers_a_call_with_its_id_grounding_and_a_flex_stream() -> None:
    replies = [
        ("application/json", json.dumps(ASKED).encode()),
        ("application/json", json.dumps(GROUNDED_ON_VERTEX).encode()),
        ("text/event-stream", f"data: {json.dumps(FLEX_CHUNK)}\r\n\r\n".encode()),
    ]
    with VertexEmulation(replies) as vertex:
        adapter = GeminiAdapter(
            model="gemini-3-flash-preview",
            base_url=vertex.base_url,
            vertex=True,
            api_key=EXPRESS_KEY,  # express mode: the bodies are what is read, not the token
        )
        with adapter:
            asked = adapter.execute(make_request(tools=[WEATHER]))
            grounded = adapter.execute(make_request())
            flex = run_streamed(adapter, make_request())
    assert vertex.refused == []

    # by hand: Vertex names the call; its signature goes back with it; thoughts are output
    part = ASKED["candidates"][0]["content"]["parts"][0]
    [call] = asked.tool_calls
    assert (call.call_id, call.name, call.arguments) == (
        part["functionCall"]["id"],
        part["functionCall"]["name"],
        part["functionCall"]["args"],
    )
    assert call.provider_metadata == {"gemini": {"thoughtSignature": part["thoughtSignature"]}}
    assert asked.usage is not None
    assert (asked.usage.input_tokens, asked.usage.output_tokens, asked.usage.reasoning_tokens) == (
        VERTEX_USAGE["promptTokenCount"],
        VERTEX_USAGE["candidatesTokenCount"] + VERTEX_USAGE["thoughtsTokenCount"],
        VERTEX_USAGE["thoughtsTokenCount"],
    )
    assert asked.finish == "tool_calls"

    # each support cites each of its chunks, in the order it names them, over its bytes
    assert grounded.text == FORECAST_TEXT
    cited = [
        (c.source.url, c.source.title, FORECAST_TEXT[c.start : c.end])
        for c in grounded.citations or []
    ]
    assert cited == read_grounding(GROUNDED_ON_VERTEX)
    assert [url for url, _, _ in cited[4:7]] == [SITES_ON_VERTEX[i][1] for i in (2, 0, 1)]

    assert flex.receipt is not None, flex.error
    assert flex.receipt.text == "OK"
    assert flex.receipt.usage is not None
    assert (flex.receipt.usage.output_tokens, flex.receipt.finish) == (1 + 100, "stop")
