"""For the same bytes, the receipt agrees with what Google's official SDK (``google-genai``)
assembles — text, function calls, thoughts (text and signature), finish reason and usage —
across random turns and random chunkings of the body.

The SDK is a test-only dependency (the tox env and the root dev group); both clients read the
same bytes from the same loopback server.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.conformance.loopback import Playback
from runport.conformance.providers import Provider
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter

from .gemini_wire import Turn, call, response_body, stream_chunks, text, thought

API_KEY = "AIza-differential-key"
PROVIDER = Provider(GeminiAdapter, AsyncGeminiAdapter, "gemini-test", API_KEY)

_arguments = st.dictionaries(
    st.sampled_from(["city", "days", "units", "ß"]),
    st.one_of(st.integers(-5, 500), st.text(max_size=8), st.booleans()),
    max_size=3,
)
_part = st.one_of(
    st.text(min_size=1, max_size=12).map(text),
    st.text(min_size=1, max_size=12).map(lambda t: text(t, thoughtSignature="c2ln")),
    st.text(min_size=1, max_size=12).map(thought),
    st.builds(
        lambda t, sig: {**thought(t), "thoughtSignature": sig},
        st.text(max_size=12),
        st.sampled_from(["c2ln", "c2lnLTI=", "AAEC"]),
    ),
    st.builds(
        call,
        st.sampled_from(["get_weather", "lookup"]),
        st.one_of(st.none(), _arguments),
        st.one_of(st.none(), st.from_regex(r"fc-[a-z0-9]{4}", fullmatch=True)),
    ),
)
turns = st.builds(
    Turn,
    chunks=st.lists(st.lists(_part, min_size=1, max_size=3), min_size=1, max_size=4),
    finish=st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY", "RECITATION"]),
    prompt_tokens=st.integers(0, 10**6),
    candidates_tokens=st.integers(0, 10**5),
    thoughts_tokens=st.one_of(st.none(), st.integers(0, 10**4)),
)


@pytest.fixture(scope="module")
def sdk(playback: Playback) -> Iterator[Any]:
    player = playback
    client = genai.Client(
        api_key=API_KEY,
        http_options=types.HttpOptions(base_url=player.base_url, api_version="v1beta"),
    )
    yield client
    client.close()


def sdk_view(chunks: list[Any]) -> dict[str, Any]:
    """What the SDK's chunks say, assembled the way the SDK's own ``text`` property reads a
    candidate: text parts that are not thoughts, function calls in order."""
    texts: list[str] = []
    calls: list[tuple[str | None, str, dict[str, Any]]] = []
    # Thought parts as blocks, by the documented rule: consecutive thoughts are one block, a
    # second signature in a run begins the next.
    thoughts: list[list[Any]] = []
    thinking = False
    finish = None
    usage = None
    for chunk in chunks:
        if chunk.candidates:
            candidate = chunk.candidates[0]
            for part in candidate.content.parts or []:
                if part.thought:
                    signature = part.thought_signature
                    if not thinking or (signature and thoughts[-1][1]):
                        thoughts.append(["", None])
                        thinking = True
                    thoughts[-1][0] += part.text or ""
                    if signature:
                        thoughts[-1][1] = base64.b64encode(signature).decode()
                    continue
                thinking = False
                if part.text is not None:
                    texts.append(part.text)
                if part.function_call is not None:
                    calls.append(
                        (
                            part.function_call.id,
                            part.function_call.name,
                            part.function_call.args or {},
                        )
                    )
            if candidate.finish_reason is not None and finish is None:
                finish = candidate.finish_reason.value
        if chunk.usage_metadata is not None:
            meta = chunk.usage_metadata
            usage = (
                meta.prompt_token_count or 0,
                (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
                meta.thoughts_token_count or None,
            )
    return {
        "text": "".join(texts) or None,
        "calls": calls or None,
        "reasoning": [tuple(block) for block in thoughts] or None,
        "finish": finish,
        "usage": usage,
    }


def receipt_view(receipt: Any) -> dict[str, Any]:
    calls = receipt.tool_calls
    return {
        "text": receipt.text,
        "calls": [
            (None if c.call_id.startswith("call_") else c.call_id, c.name, c.arguments)
            for c in calls
        ]
        if calls
        else None,
        "reasoning": [
            (p.text, (p.provider_metadata or {}).get("gemini", {}).get("thoughtSignature"))
            for p in receipt.reasoning
        ]
        if receipt.reasoning
        else None,
        "finish": receipt.finish_reason,
        "usage": (
            receipt.usage.input_tokens,
            receipt.usage.output_tokens,
            receipt.usage.reasoning_tokens,
        ),
    }


@settings(
    max_examples=settings.default.max_examples // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turn=turns, cuts=st.lists(st.integers(0, 3000), max_size=12))
def test_the_streamed_receipt_agrees_with_the_sdk(
    playback: Playback, sdk: Any, turn: Turn, cuts: list[int]
) -> None:
    receipt = PROVIDER.streamed_receipt(playback, b"".join(stream_chunks(turn)), cuts)
    chunks = list(sdk.models.generate_content_stream(model="gemini-test", contents="hi"))
    assert receipt_view(receipt) == sdk_view(chunks)


@settings(
    max_examples=settings.default.max_examples // 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turn=turns)
def test_the_unstreamed_receipt_agrees_with_the_sdk(
    playback: Playback, sdk: Any, turn: Turn
) -> None:
    receipt = PROVIDER.unstreamed_receipt(playback, response_body(turn))
    response = sdk.models.generate_content(model="gemini-test", contents="hi")
    assert receipt_view(receipt) == sdk_view([response])
