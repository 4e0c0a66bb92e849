"""Prompt-cache counts in usage over loopback (ADR 0051): ``cachedContentTokenCount`` is
``Usage.cache_read_tokens``, a part of ``promptTokenCount``, streamed and unstreamed alike;
bad counts are coded."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import json_reply, seen, serving, stream_reply
from runport.conformance.providers import Provider, make_request, run_streamed
from runport.contracts import ErrorCode, Message, TextPart, Usage
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter
from runport.ports import PortError

PROVIDER = Provider(GeminiAdapter, AsyncGeminiAdapter, "gemini-test", "AIzaSyCACHE-0123456789")


def _chunk(text: str, usage: dict[str, Any], finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-test"}


def _usage(cached: Any, candidates: int = 5) -> dict[str, Any]:
    usage: dict[str, Any] = {"promptTokenCount": 2048, "candidatesTokenCount": candidates}
    if cached is not None:
        usage["cachedContentTokenCount"] = cached
    return usage


def _frame(body: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(body).encode() + b"\r\n\r\n"


def _play(client: httpx.Client, cached: Any, *, stream: bool) -> Any:
    if stream:
        frames = [_frame(_chunk("h", _usage(cached, 1), None))]
        frames.append(_frame(_chunk("i", _usage(cached), "STOP")))
        handler = stream_reply(frames)
    else:
        handler = json_reply(_chunk("hi", _usage(cached), "STOP"))
    with serving(handler) as server:
        adapter = PROVIDER.adapter_for(server, client)
        if stream:
            outcome = run_streamed(adapter, make_request())
            if outcome.error is not None:
                return outcome.error
            assert outcome.receipt is not None
            return outcome.receipt.usage
        try:
            return adapter.execute(make_request()).usage
        except PortError as error:
            return error


STREAM = pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])


@STREAM
def test_cached_content_tokens_are_cache_reads_within_the_prompt(
    client: httpx.Client, stream: bool
) -> None:
    got = _play(client, 1920, stream=stream)
    assert got == Usage(input_tokens=2048, output_tokens=5, cache_read_tokens=1920)


@STREAM
@pytest.mark.parametrize("cached", [None, 0])
def test_no_cache_reads_leave_usage_as_it_was(
    client: httpx.Client, stream: bool, cached: Any
) -> None:
    got = _play(client, cached, stream=stream)
    assert json.loads(got.model_dump_json()) == {"input_tokens": 2048, "output_tokens": 5}


@STREAM
@pytest.mark.parametrize(
    "cached", [-1, 1.5, "9", 2049], ids=["negative", "fraction", "string", "more-than-prompt"]
)
def test_bad_cache_counts_are_invalid_responses(
    client: httpx.Client, stream: bool, cached: Any
) -> None:
    got = _play(client, cached, stream=stream)
    assert isinstance(got, PortError)
    assert got.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_a_breakpoint_sends_nothing_gemini_has_no_per_request_control(
    client: httpx.Client,
) -> None:
    marked = [
        Message(role="system", content=[TextPart(text="A manual.", cache=True, cache_ttl="1h")]),
        Message(role="user", content="Long text.", cache=True),
        Message(role="user", content=[TextPart(text="Part.", cache=True), TextPart(text="Q")]),
    ]
    with serving(json_reply(_chunk("hi", _usage(None), "STOP"))) as server:
        PROVIDER.adapter_for(server, client).execute(make_request(messages=marked))
        body = seen(server).body
    assert "cache" not in json.dumps(body).lower()
    assert all(word in json.dumps(body) for word in ("A manual.", "Long text.", "Part."))
