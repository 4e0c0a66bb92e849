"""For the same bytes, the receipt agrees with what Ollama's official Python client (``ollama``)
reads — text, thinking, tool calls, ``done_reason`` and the token counts — across random turns
and random chunkings of the body.

The client is a test-only dependency (the tox env and the root dev group); both read the same
bytes from the same loopback server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ollama import Client

from runport.conformance.loopback import Playback
from runport.conformance.providers import Provider
from runport.ollama import AsyncOllamaChatAdapter, OllamaChatAdapter

MODEL = "qwen3:8b"
PROVIDER = Provider(OllamaChatAdapter, AsyncOllamaChatAdapter, MODEL, None)

_arguments = st.dictionaries(
    st.sampled_from(["city", "days", "units", "ß"]),
    st.one_of(st.integers(-5, 500), st.text(max_size=8), st.booleans()),
    max_size=3,
)
_piece = st.one_of(
    st.builds(lambda text: {"content": text}, st.text(min_size=1, max_size=12)),
    st.builds(lambda text: {"content": "", "thinking": text}, st.text(min_size=1, max_size=12)),
    st.builds(
        lambda name, arguments: {
            "content": "",
            "tool_calls": [{"function": {"name": name, "arguments": arguments}}],
        },
        st.sampled_from(["get_weather", "lookup"]),
        _arguments,
    ),
)
turns = st.fixed_dictionaries(
    {
        "pieces": st.lists(_piece, max_size=6),
        "done_reason": st.sampled_from(["stop", "length"]),
        "prompt_eval_count": st.integers(0, 10**6),
        "eval_count": st.integers(0, 10**5),
    }
)


def chunk(message: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "created_at": "2026-03-01T10:00:00.123456789Z",
        "message": {"role": "assistant", **message},
        "done": False,
        **more,
    }


def last(turn: dict[str, Any]) -> dict[str, Any]:
    counts = {key: turn[key] for key in ("done_reason", "prompt_eval_count", "eval_count")}
    return chunk({"content": ""}, done=True, total_duration=1000, **counts)


def body(turn: dict[str, Any]) -> bytes:
    lines = [chunk(piece) for piece in turn["pieces"]] + [last(turn)]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


@pytest.fixture(scope="module")
def sdk(playback: Playback) -> Iterator[Client]:
    client = Client(host=playback.base_url)
    yield client
    client.close()


def sdk_view(chunks: list[Any]) -> dict[str, Any]:
    """What the client's chunks say, joined in order."""
    text = "".join(c.message.content or "" for c in chunks)
    thinking = "".join(c.message.thinking or "" for c in chunks)
    calls = [
        (call.function.name, dict(call.function.arguments))
        for c in chunks
        for call in c.message.tool_calls or []
    ]
    done = chunks[-1]
    return {
        "text": text or None,
        "thinking": thinking or None,
        "calls": calls,
        "finish": done.done_reason,
        "usage": (done.prompt_eval_count, done.eval_count),
    }


def receipt_view(receipt: Any) -> dict[str, Any]:
    return {
        "text": receipt.text,
        "thinking": "".join(part.text for part in receipt.reasoning or []) or None,
        "calls": [(call.name, call.arguments) for call in receipt.tool_calls or []],
        "finish": receipt.finish_reason,
        "usage": (receipt.usage.input_tokens, receipt.usage.output_tokens),
    }


@settings(
    max_examples=settings.default.max_examples // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turn=turns, cuts=st.lists(st.integers(0, 2000), max_size=12))
def test_the_streamed_receipt_agrees_with_the_sdk(
    playback: Playback, sdk: Client, turn: dict[str, Any], cuts: list[int]
) -> None:
    receipt = PROVIDER.streamed_receipt(playback, body(turn), cuts)
    said = list(sdk.chat(model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True))
    assert receipt_view(receipt) == sdk_view(said)


@settings(
    max_examples=settings.default.max_examples // 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turn=turns)
def test_the_unstreamed_receipt_agrees_with_the_sdk(
    playback: Playback, sdk: Client, turn: dict[str, Any]
) -> None:
    whole = last(turn)
    message = whole["message"]
    for piece in turn["pieces"]:
        for key in ("content", "thinking"):
            if piece.get(key):
                message[key] = message.get(key, "") + piece[key]
        message.setdefault("tool_calls", []).extend(piece.get("tool_calls", []))
    receipt = PROVIDER.unstreamed_receipt(playback, whole)
    said = sdk.chat(model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=False)
    assert receipt_view(receipt) == sdk_view([said])
