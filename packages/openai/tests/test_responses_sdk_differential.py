"""For the same bytes, the Responses adapter's receipt agrees with what OpenAI's official SDK
assembles — ``client.responses.stream(...).get_final_response()`` streamed (the
``response.incomplete`` event's response for an incomplete turn: ``get_final_response`` knows
only a completed one), ``responses.create(...)`` unstreamed — on text, function calls,
reasoning (summary text, item id, encrypted content), usage and status, across random turns
and random chunkings of the body.

The SDK is a test-only dependency (the tox env and the root dev group); both clients read the
same bytes from the same loopback server. Where runport reads more than the SDK's view says —
the texts of several message items (``output_text`` joins them bare; runport puts a blank line
between) and the summary parts of a reasoning item (joined by a blank line) — the SDK's items
are joined by the same rule, so the comparison is item for item.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.conformance.loopback import Playback, json_reply, rechunk, stream_reply
from runport.conformance.providers import make_request, run_streamed
from runport.openai import OpenAIResponsesAdapter

from .responses_wire import (
    MODEL,
    BuiltIn,
    FunctionCall,
    Item,
    Message,
    Reasoning,
    Turn,
    response_body,
    stream_events,
)

API_KEY = "sk-proj-differential-key"

_pieces = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=5).map(tuple)
_arguments = st.dictionaries(
    st.sampled_from(["city", "days", "units", "ß"]),
    st.one_of(st.integers(-5, 500), st.text(max_size=8), st.booleans(), st.none()),
    max_size=3,
)


@st.composite
def function_call(draw: st.DrawFn) -> FunctionCall:
    text = json.dumps(draw(_arguments), ensure_ascii=False)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=4))))
    points = [0, *[c for c in cuts if 0 < c < len(text)], len(text)]
    fragments = tuple(text[a:b] for a, b in itertools.pairwise(points))
    call_id = f"call_{draw(st.integers(0, 10**6)):07d}"
    return FunctionCall(draw(st.sampled_from(["get_weather", "lookup"])), call_id, fragments)


_reasoning = st.builds(
    Reasoning,
    st.lists(_pieces, max_size=3).map(tuple),
    st.one_of(st.none(), st.from_regex(r"gAAAAAB[A-Za-z0-9_-]{8,40}", fullmatch=True)),
)
_item: st.SearchStrategy[Item] = st.one_of(
    _pieces.map(Message),
    _reasoning,
    function_call(),
    st.sampled_from(["web_search_call", "file_search_call"]).map(BuiltIn),
)
turns = st.builds(
    Turn,
    items=st.lists(_item, min_size=1, max_size=5),
    status=st.sampled_from(["completed", "completed", "incomplete"]),
    usage=st.builds(
        lambda i, o, r: {
            "input_tokens": i,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": o,
            "output_tokens_details": {"reasoning_tokens": r},
            "total_tokens": i + o,
        },
        st.integers(0, 10**6),
        st.integers(0, 10**5),
        st.integers(0, 10**4),
    ),
).map(
    lambda t: Turn(
        t.items, t.status, t.usage, "max_output_tokens" if t.status != "completed" else None
    )
)


@pytest.fixture(scope="module")
def player() -> Iterator[Playback]:
    playback = Playback()
    yield playback
    playback.server.close()


@pytest.fixture(scope="module")
def sdk(player: Playback) -> Iterator[Any]:
    playback = player
    client = openai.OpenAI(base_url=playback.base_url + "/v1", api_key=API_KEY, max_retries=0)
    yield client
    client.close()


def sdk_view(response: Any) -> dict[str, Any]:
    reasoning = []
    for item in response.output:
        if item.type == "reasoning":
            text = "\n\n".join(part.text for part in item.summary if part.text)
            if text or item.encrypted_content:
                reasoning.append((text, item.id, item.encrypted_content))
    calls = [
        (item.call_id, item.name, json.loads(item.arguments))
        for item in response.output
        if item.type == "function_call"
    ]
    details = response.usage.output_tokens_details
    return {
        "text": response.output_text or None,
        "calls": calls or None,
        "reasoning": reasoning or None,
        "usage": (
            response.usage.input_tokens,
            response.usage.output_tokens,
            details.reasoning_tokens or None,
        ),
        "status": response.status,
    }


def receipt_view(receipt: Any) -> dict[str, Any]:
    reasoning = [
        (
            part.text,
            part.provider_metadata["openai-responses"]["id"],
            part.provider_metadata["openai-responses"].get("encrypted_content"),
        )
        for part in receipt.reasoning or ()
    ]
    return {
        "text": receipt.text,
        "calls": [(c.call_id, c.name, c.arguments) for c in receipt.tool_calls or ()] or None,
        "reasoning": reasoning or None,
        "usage": (
            receipt.usage.input_tokens,
            receipt.usage.output_tokens,
            receipt.usage.reasoning_tokens,
        ),
        "status": "incomplete" if receipt.finish_reason == "length" else "completed",
    }


def _adapter(playback: Playback, http: httpx.Client) -> OpenAIResponsesAdapter:
    return OpenAIResponsesAdapter(
        base_url=playback.base_url + "/v1", model=MODEL, api_key=API_KEY, http_client=http
    )


@settings(
    max_examples=settings.default.max_examples // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turn=turns, cuts=st.lists(st.integers(0, 6000), max_size=12))
def test_the_streamed_receipt_agrees_with_the_sdk(
    player: Playback, sdk: Any, turn: Turn, cuts: list[int]
) -> None:
    playback = player
    body = b"".join(stream_events(turn))
    playback.answer = stream_reply(rechunk(body, cuts))
    with httpx.Client() as http:
        receipt = run_streamed(_adapter(playback, http), make_request()).receipt
    assert receipt is not None
    with sdk.responses.stream(model=MODEL, input="hi") as stream:
        if turn.status == "completed":
            response = stream.get_final_response()
        else:  # get_final_response() wants response.completed: the incomplete event's response
            (response,) = [e.response for e in stream if e.type == "response.incomplete"]
    assert receipt_view(receipt) == sdk_view(response)


@settings(
    max_examples=settings.default.max_examples // 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turn=turns)
def test_the_unstreamed_receipt_agrees_with_the_sdk(player: Playback, sdk: Any, turn: Turn) -> None:
    playback = player
    playback.answer = json_reply(response_body(turn))
    with httpx.Client() as http:
        receipt = _adapter(playback, http).execute(make_request())
    response = sdk.responses.create(model=MODEL, input="hi")
    assert receipt_view(receipt) == sdk_view(response)
