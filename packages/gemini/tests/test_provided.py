"""What Gemini did itself, over real HTTP on 127.0.0.1: ``executableCode`` and
``codeExecutionResult`` parts are ``ServerToolCall``/``ServerToolResult``, ``inlineData`` in the
answer a generated file, ``groundingMetadata`` ``Citation``s (byte offsets read as characters),
streamed and unstreamed alike; a part of a kind the codec does not know is kept
(adr/0054-nothing-a-provider-sends-is-dropped.md, adr/0055-what-the-provider-did-itself.md).

The bodies are written here from the API reference's shapes (code execution, grounding with
Google Search, image output): chunks as a stream sends them, and the one whole response."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import json_reply, seen, serving, stream_reply
from runport.conformance.providers import Provider, make_request, run_streamed
from runport.contracts import (
    Citation,
    CitationSource,
    ErrorCode,
    ExecutionReceipt,
    ServerToolCall,
    ServerToolResult,
)
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter
from runport.ports import PortError

PROVIDER = Provider(GeminiAdapter, AsyncGeminiAdapter, "gemini-test", "AIzaSyTEST-provided")
adapter_for = PROVIDER.adapter_for
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x05" * 24).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff" + b"\x05" * 24).decode()
USAGE = {"promptTokenCount": 8, "candidatesTokenCount": 6, "totalTokenCount": 14}

CODE = {"executableCode": {"language": "PYTHON", "code": "print(sum(range(1, 11)))"}}
RAN = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "55\n"}}
# "Zürich" holds a two-byte character: the support's byte offsets are not character offsets
ANSWER = ("Spain won Euro 2024 in Zürich", "'s rival city, Berlin.")
REDIRECT = "https://vertexaisearch.cloud.google.com/grounding-api-redirect"
GROUNDING = {
    "webSearchQueries": ["UEFA Euro 2024 winner"],
    "groundingChunks": [
        {"web": {"uri": f"{REDIRECT}/K9", "title": "uefa.com"}},
        {"web": {"uri": f"{REDIRECT}/Q2", "title": "aljazeera.com"}},
        {"web": {"uri": f"{REDIRECT}/Z7", "title": "unused.org"}},
    ],
    "groundingSupports": [
        {
            "segment": {"endIndex": 19, "text": "Spain won Euro 2024"},
            "groundingChunkIndices": [0, 1],
        },
        {
            "segment": {"startIndex": 23, "endIndex": 30, "text": "Zürich"},
            "groundingChunkIndices": [1],
        },
    ],
}  # fmt: skip


def candidate(parts: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, **more}]}


def chunks_of(chunks: list[dict[str, Any]]) -> list[bytes]:
    return [f"data: {json.dumps(chunk)}\r\n\r\n".encode() for chunk in chunks]


def both_ways(
    client: httpx.Client, chunks: list[dict[str, Any]], whole: dict[str, Any]
) -> tuple[list[Any], ExecutionReceipt]:
    with serving(stream_reply(chunks_of(chunks)), json_reply(whole)) as server:
        adapter = adapter_for(server, client)
        outcome = run_streamed(adapter, make_request())
        receipt = adapter.execute(make_request())
    assert outcome.receipt is not None, outcome.error
    assert receipt == outcome.receipt
    return outcome.events, receipt


def refused(client: httpx.Client, whole: dict[str, Any], said: str) -> None:
    """``whole`` as one chunk and as the response: refused alike, an invalid response."""
    streamed, unstreamed = stream_reply(chunks_of([whole])), json_reply(whole)
    PROVIDER.check_refused_both_ways(
        client, streamed, unstreamed, ErrorCode.RUNTIME_INVALID_RESPONSE, said
    )


def test_code_execution_streamed_and_unstreamed(client: httpx.Client) -> None:
    said = {"text": "The sum is 55."}
    chunks = [
        candidate([CODE]),
        candidate([RAN]),
        {**candidate([said], finishReason="STOP"), "usageMetadata": USAGE},
    ]
    whole = {**candidate([CODE, RAN, said], finishReason="STOP"), "usageMetadata": USAGE}
    events, receipt = both_ways(client, chunks, whole)
    assert receipt.server_tools == [
        ServerToolCall(call_id="code_0", name="code_execution", input=CODE["executableCode"]),
        ServerToolResult(
            call_id="code_0", name="code_execution", output=RAN["codeExecutionResult"]
        ),
    ]
    assert receipt.text == "The sum is 55."
    assert receipt.tool_calls is None
    kinds = [type(event).__name__ for event in events[:-1]]
    assert kinds == ["ServerToolCall", "ServerToolResult", "Delta"]


def test_a_failed_run_carries_its_outcome_as_the_error(client: httpx.Client) -> None:
    failed = {"codeExecutionResult": {"outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError"}}
    whole = candidate([CODE, failed, {"text": "It failed."}], finishReason="STOP")
    _, receipt = both_ways(client, [whole], whole)
    assert receipt.server_tools is not None
    result = receipt.server_tools[1]
    assert isinstance(result, ServerToolResult)
    assert result.error == "OUTCOME_FAILED"


def test_a_result_with_no_code_announced_is_coded(client: httpx.Client) -> None:
    whole = candidate([RAN], finishReason="STOP")
    refused(client, whole, "never announced")


def test_grounding_supports_are_citations_at_character_offsets(client: httpx.Client) -> None:
    chunks = [
        candidate([{"text": ANSWER[0]}]),
        candidate([{"text": ANSWER[1]}], finishReason="STOP", groundingMetadata=GROUNDING),
    ]
    whole = candidate([{"text": "".join(ANSWER)}], finishReason="STOP", groundingMetadata=GROUNDING)
    events, receipt = both_ways(client, chunks, whole)
    web = [chunk["web"] for chunk in GROUNDING["groundingChunks"]]
    sources = [CitationSource(type="url", url=page["uri"], title=page["title"]) for page in web]
    assert receipt.citations == [
        Citation(source=sources[0], start=0, end=19),
        Citation(source=sources[1], start=0, end=19),
        Citation(source=sources[1], start=23, end=29),
        Citation(source=sources[2]),
    ]
    assert receipt.text is not None
    assert receipt.text[23:29] == "Zürich"
    assert [type(event).__name__ for event in events].count("Citation") == 4


def test_grounding_repeated_in_a_later_chunk_is_not_cited_twice(client: httpx.Client) -> None:
    chunks = [
        candidate([{"text": "".join(ANSWER)}], groundingMetadata=GROUNDING),
        candidate([{"text": ""}], finishReason="STOP", groundingMetadata=GROUNDING),
    ]
    with serving(stream_reply(chunks_of(chunks))) as server:
        outcome = run_streamed(adapter_for(server, client), make_request())
    assert outcome.receipt is not None
    assert len(outcome.receipt.citations or []) == 4


@pytest.mark.parametrize(
    ("segment", "said"),
    [({"startIndex": 0, "endIndex": 900}, "past the answer"), ({"endIndex": 25}, "splits")],
)
def test_a_span_past_the_text_or_inside_a_character_is_coded(
    client: httpx.Client, segment: dict[str, int], said: str
) -> None:
    support = {"segment": segment, "groundingChunkIndices": [0]}
    grounding = {**GROUNDING, "groundingSupports": [support]}
    whole = candidate([{"text": "".join(ANSWER)}], finishReason="STOP", groundingMetadata=grounding)
    refused(client, whole, said)


def test_an_image_in_the_answer_is_a_generated_file(client: httpx.Client) -> None:
    image = {"inlineData": {"mimeType": "image/png", "data": PNG}}
    chunks = [candidate([{"text": "Here it is:"}]), candidate([image], finishReason="STOP")]
    whole = candidate([{"text": "Here it is:"}, image], finishReason="STOP")
    events, receipt = both_ways(client, chunks, whole)
    assert receipt.files is not None
    assert [(f.media_type, f.data) for f in receipt.files] == [("image/png", PNG)]
    assert [type(event).__name__ for event in events[:-1]] == ["Delta", "FileDelta"]


def test_an_image_whose_bytes_are_not_its_declared_type_is_coded(client: httpx.Client) -> None:
    whole = candidate(
        [{"inlineData": {"mimeType": "image/png", "data": JPEG}}], finishReason="STOP"
    )
    with serving(json_reply(whole)) as server, pytest.raises(PortError) as raised:
        adapter_for(server, client).execute(make_request())
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "image/jpeg" in raised.value.message


def test_a_part_of_an_unknown_kind_is_kept_not_dropped(client: httpx.Client) -> None:
    novel = {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://bucket/clip.mp4"}}
    whole = candidate([novel], finishReason="STOP")
    _, receipt = both_ways(client, [whole], whole)
    assert receipt.provider_metadata == {"gemini": {"unknown": [novel]}}


def test_server_tools_are_asked_for_as_built_in_tools(client: httpx.Client) -> None:
    policy = {"server_tools": [{"type": "web_search"}, {"type": "code_execution"}]}
    whole = candidate([{"text": "ok"}], finishReason="STOP")
    with serving(json_reply(whole)) as server:
        adapter_for(server, client).execute(make_request(runtime_policy=policy))
        tools = seen(server).body["tools"]
        with pytest.raises(PortError) as raised:
            adapter_for(server, client).execute(
                make_request(runtime_policy={"server_tools": [{"type": "file_search"}]})
            )
    assert tools == [{"google_search": {}}, {"code_execution": {}}]
    assert raised.value.code == ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED
