"""For the same bytes, the receipt agrees with what Anthropic's official SDK assembles — text,
tool calls, thinking blocks (text and signature, redacted data), finish reason and usage — across
random turns and random chunkings of the body; on Anthropic's API (``anthropic.Anthropic``) and
on the loopback Vertex AI (``anthropic.AnthropicVertex``, OAuth tokens checked).

The SDK is a test-only dependency (the tox env and the root dev group); both clients read the
same bytes from the same loopback server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.anthropic import AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter
from runport.conformance.loopback import Playback
from runport.conformance.providers import WEATHER, Provider, make_request, run_streamed
from runport.conformance.vertex import VertexEmulation
from runport.http import GoogleAuth

from .anthropic_wire import (
    Block,
    Redacted,
    Text,
    Thinking,
    ToolUse,
    Turn,
    message_body,
    stream_events,
)

API_KEY = "sk-ant-differential-key"
PROVIDER = Provider(AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter, "claude-test", API_KEY)

_pieces = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=5)
_arguments = st.dictionaries(
    st.sampled_from(["city", "days", "units", "ß"]),
    st.one_of(st.integers(-5, 500), st.text(max_size=8), st.booleans(), st.none()),
    max_size=3,
)


@st.composite
def tool_use(draw: st.DrawFn) -> ToolUse:
    text = json.dumps(draw(_arguments), ensure_ascii=False)
    cuts = draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=4))
    silent = text == "{}" and draw(st.booleans())  # a call whose arguments never arrive
    fragments = [] if silent else [text[a:b] for a, b in _spans(len(text), cuts)]
    kind = draw(st.sampled_from(["tool_use", "tool_use", "server_tool_use"]))
    call_id = f"toolu_{draw(st.integers(0, 10**6)):07d}"
    return ToolUse(call_id, draw(st.sampled_from(["get_weather", "lookup"])), fragments, kind)


def _spans(length: int, cuts: list[int]) -> list[tuple[int, int]]:
    points = sorted({c for c in cuts if 0 < c < length})
    return list(zip([0, *points], [*points, length], strict=True))


_thinking = st.builds(
    Thinking,
    st.lists(st.text(max_size=12), max_size=5),
    st.from_regex(r"[A-Za-z0-9+/]{1,40}={0,2}", fullmatch=True),
)
_block: st.SearchStrategy[Block] = st.one_of(
    _pieces.map(Text),
    _thinking,
    st.from_regex(r"[A-Za-z0-9+/]{8,40}", fullmatch=True).map(Redacted),
    tool_use(),
)
turns = st.builds(
    Turn,
    # a call id names one block of a turn (the API never repeats one; runport refuses a repeat)
    blocks=st.lists(
        _block,
        min_size=1,
        max_size=4,
        unique_by=lambda block: block.call_id if isinstance(block, ToolUse) else id(block),
    ),
    stop_reason=st.sampled_from(["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal"]),
    input_tokens=st.integers(0, 10**6),
    output_tokens=st.integers(0, 10**5),
    start_output_tokens=st.integers(0, 5),
    cache_read_tokens=st.integers(0, 10**4),
)


@pytest.fixture(scope="module")
def sdk(playback: Playback) -> Iterator[Any]:
    player = playback
    client = anthropic.Anthropic(base_url=player.base_url, api_key=API_KEY, max_retries=0)
    yield client
    client.close()


def sdk_view(message: Any) -> dict[str, Any]:
    return {
        "text": "".join(b.text for b in message.content if b.type == "text") or None,
        "calls": [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"] or None,
        "reasoning": [
            (b.type, b.thinking, b.signature) if b.type == "thinking" else (b.type, "", b.data)
            for b in message.content
            if b.type in ("thinking", "redacted_thinking")
        ]
        or None,
        "finish": message.stop_reason,
        "usage": _sdk_usage(message.usage),
    }


def _sdk_usage(usage: Any) -> tuple[int, int, int | None, int | None]:
    """The SDK's counts as ADR 0051 reads them: ``input_tokens`` counts the cached tokens too."""
    read = usage.cache_read_input_tokens or None
    write = usage.cache_creation_input_tokens or None
    total = usage.input_tokens + (read or 0) + (write or 0)
    return (total, usage.output_tokens, read, write)


def _reasoning(part: Any) -> tuple[str, str, str]:
    mine = part.provider_metadata["anthropic"]
    if mine["type"] == "thinking":
        return ("thinking", part.text, mine["signature"])
    return ("redacted_thinking", part.text, mine["data"])


def receipt_view(receipt: Any) -> dict[str, Any]:
    calls = receipt.tool_calls
    return {
        "text": receipt.text,
        "calls": [(c.call_id, c.name, c.arguments) for c in calls] if calls else None,
        "reasoning": [_reasoning(p) for p in receipt.reasoning] if receipt.reasoning else None,
        "finish": receipt.finish_reason,
        "usage": (
            receipt.usage.input_tokens,
            receipt.usage.output_tokens,
            receipt.usage.cache_read_tokens,
            receipt.usage.cache_write_tokens,
        ),
    }


@settings(
    max_examples=settings.default.max_examples // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turn=turns, cuts=st.lists(st.integers(0, 4000), max_size=12))
def test_the_streamed_receipt_agrees_with_the_sdk(
    playback: Playback, sdk: Any, turn: Turn, cuts: list[int]
) -> None:
    receipt = PROVIDER.streamed_receipt(playback, b"".join(stream_events(turn)), cuts)
    with sdk.messages.stream(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = stream.get_final_message()
    assert receipt_view(receipt) == sdk_view(message)


@settings(
    max_examples=settings.default.max_examples // 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turn=turns)
def test_the_unstreamed_receipt_agrees_with_the_sdk(
    playback: Playback, sdk: Any, turn: Turn
) -> None:
    receipt = PROVIDER.unstreamed_receipt(playback, message_body(turn))
    message = sdk.messages.create(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    assert receipt_view(receipt) == sdk_view(message)


# --- Claude on Vertex AI: the SDK's AnthropicVertex against the loopback Vertex AI ---------

VERTEX_MODEL = "claude-sonnet-4@20250514"
VERTEX_PROJECT = "my-project-1"
VERTEX_VERSION = {"anthropic_version": "vertex-2023-10-16"}
"""The ``anthropic_version`` Vertex AI documents, which the emulation checks. The SDK's own
default (anthropic 2.x sends its Messages API version, a date) is refused by the emulation, so
it is set here, as the SDK allows, and both clients send the same body."""


@pytest.fixture(scope="module")
def vertex() -> Iterator[VertexEmulation]:
    with VertexEmulation([]) as emulation:
        yield emulation


@pytest.fixture(scope="module")
def on_vertex(vertex: VertexEmulation) -> Iterator[tuple[Any, Any]]:
    """runport's adapter and the SDK's client, each with its own token from the emulation's
    token endpoint (runport's through google-auth, the SDK's given as ``access_token``)."""
    grant = {"grant_type": "refresh_token", "refresh_token": "loopback-refresh-token"}
    token = httpx.post(vertex.token_uri, data=grant).json()["access_token"]
    sdk_client = anthropic.AnthropicVertex(
        region="us-east5",
        project_id=VERTEX_PROJECT,
        access_token=token,
        base_url=f"{vertex.base_url}/v1",
        max_retries=0,
    )
    adapter = AnthropicMessagesAdapter(
        model=VERTEX_MODEL,
        base_url=vertex.base_url,
        project=VERTEX_PROJECT,
        location="us-east5",
        auth=GoogleAuth(vertex.credentials()),
    )
    with adapter:
        yield adapter, sdk_client
    sdk_client.close()


def _asked(vertex: VertexEmulation) -> list[str]:
    return [f"{r.location}/{r.model}:{r.verb}" for r in vertex.requests[-2:]]


@settings(max_examples=6, deadline=None)
@given(turn=turns)
def test_the_vertex_stream_agrees_with_anthropic_vertex(
    vertex: VertexEmulation, on_vertex: tuple[Any, Any], turn: Turn
) -> None:
    adapter, sdk_client = on_vertex
    vertex.replies = [("text/event-stream", b"".join(stream_events(turn)))]
    outcome = run_streamed(adapter, make_request(tools=[WEATHER]))
    assert outcome.receipt is not None, outcome.error
    with sdk_client.messages.stream(
        model=VERTEX_MODEL,
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        extra_body=VERTEX_VERSION,
    ) as stream:
        message = stream.get_final_message()
    assert receipt_view(outcome.receipt) == sdk_view(message)
    assert vertex.refused == []
    assert _asked(vertex) == [f"us-east5/{VERTEX_MODEL}:streamRawPredict"] * 2


@settings(max_examples=4, deadline=None)
@given(turn=turns)
def test_the_vertex_answer_agrees_with_anthropic_vertex(
    vertex: VertexEmulation, on_vertex: tuple[Any, Any], turn: Turn
) -> None:
    adapter, sdk_client = on_vertex
    vertex.replies = [("application/json", json.dumps(message_body(turn)).encode())]
    receipt = adapter.execute(make_request(tools=[WEATHER]))
    message = sdk_client.messages.create(
        model=VERTEX_MODEL,
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        extra_body=VERTEX_VERSION,
    )
    assert receipt_view(receipt) == sdk_view(message)
    assert vertex.refused == []
    assert _asked(vertex) == [f"us-east5/{VERTEX_MODEL}:rawPredict"] * 2
