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
from runport.contracts import ErrorCode
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
    sse,
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


def _distinct_ids(items: list[Item]) -> list[Item]:
    """A valid turn's calls have distinct ids (the SDK refuses two under one, as runport
    does): a repeated id gets its position appended."""
    seen: set[str] = set()
    distinct: list[Item] = []
    for position, item in enumerate(items):
        if isinstance(item, FunctionCall):
            if item.call_id in seen:
                item = FunctionCall(item.name, f"{item.call_id}_{position}", item.fragments)
            seen.add(item.call_id)
        distinct.append(item)
    return distinct


turns = st.builds(
    Turn,
    items=st.lists(_item, min_size=1, max_size=5).map(_distinct_ids),
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


# -- streams out of order: runport refuses them, coded, or agrees with the SDK ---------------
# (adr/0044-stream-order-and-call-ids.md)


def _decoded(frames: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(frame.split(b"\ndata: ", 1)[1]) for frame in frames]


def _renumbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


@st.composite
def mutated(draw: st.DrawFn, turn: Turn) -> list[dict[str, Any]]:
    """The turn's events with one fault a proxy or a broken server makes: an event replayed
    (its ``sequence_number`` too), an event moved to an ``output_index`` never announced, an
    ``output_item.added`` sent again, or two neighbouring events swapped."""
    events = _decoded(stream_events(turn))
    fault = draw(st.sampled_from(["replay", "unannounced", "added_again", "swap"]))
    if fault == "replay":
        at = draw(st.integers(0, len(events) - 1))
        return [*events[: at + 1], events[at], *events[at + 1 :]]
    if fault == "unannounced":
        placed = [n for n, event in enumerate(events) if "output_index" in event]
        at = draw(st.sampled_from(placed))
        events[at] = {**events[at], "output_index": 97}
    elif fault == "added_again":
        added = [n for n, e in enumerate(events) if e["type"] == "response.output_item.added"]
        at = draw(st.sampled_from(added))
        to = draw(st.integers(at + 1, len(events) - 1))
        events.insert(to, events[at])
    else:
        at = draw(st.integers(0, len(events) - 2))
        events[at], events[at + 1] = events[at + 1], events[at]
    return _renumbered(events)


def _sdk_outcome(sdk: Any) -> Any:
    """The SDK's final response for the stream, or the exception it raised."""
    try:
        with sdk.responses.stream(model=MODEL, input="hi") as stream:
            ends = [e.response for e in stream if e.type in ("response.incomplete",)]
            if ends:
                return ends[0]
            return stream.get_final_response()
    except Exception as error:  # the SDK's refusal, whatever its type
        return error


def _differential(playback: Playback, sdk: Any, events: list[dict[str, Any]]) -> Any:
    """Runport's outcome and the SDK's for the same bytes: runport refuses coded, or the
    SDK accepts too and the two agree."""
    playback.answer = stream_reply([sse(event) for event in events])
    with httpx.Client() as http:
        outcome = run_streamed(_adapter(playback, http), make_request())
    response = _sdk_outcome(sdk)
    if outcome.error is not None:
        assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE, outcome.error
        return outcome
    assert not isinstance(response, Exception), f"runport accepted what the SDK refused: {response}"
    assert receipt_view(outcome.receipt) == sdk_view(response)
    return outcome


@settings(
    max_examples=settings.default.max_examples,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), turn=turns)
def test_a_faulty_stream_is_refused_coded_or_agrees_with_the_sdk(
    player: Playback, sdk: Any, data: st.DataObject, turn: Turn
) -> None:
    _differential(player, sdk, data.draw(mutated(turn)))


def _hello(*items: Item) -> list[dict[str, Any]]:
    return _decoded(stream_events(Turn(list(items))))


def test_a_replayed_text_delta_is_refused_not_said_twice(player: Playback, sdk: Any) -> None:
    events = _hello(Message(("Hel", "lo")))
    delta = next(n for n, e in enumerate(events) if e["type"] == "response.output_text.delta")
    events.insert(delta + 1, events[delta])  # "HelHello"
    outcome = _differential(player, sdk, events)
    assert outcome.error is not None
    assert "replayed" in outcome.error.message
    assert outcome.text in ("", "Hel")  # what was shown before the replay, never "HelHel"


def test_text_for_an_output_index_never_announced_is_refused(player: Playback, sdk: Any) -> None:
    events = _hello(Message(("Hel", "lo")))
    events = [e for e in events if e["type"] != "response.output_item.added"]
    outcome = _differential(player, sdk, _renumbered(events))
    assert outcome.error is not None
    assert "never announced" in outcome.error.message
    assert isinstance(_sdk_outcome(sdk), Exception)


def test_a_second_added_for_one_index_opens_no_phantom_call(player: Playback, sdk: Any) -> None:
    events = _hello(FunctionCall("get_weather", "call_1", ('{"city":', ' "Oslo"}')))
    added = next(n for n, e in enumerate(events) if e["type"] == "response.output_item.added")
    events.insert(added + 2, events[added])
    outcome = _differential(player, sdk, _renumbered(events))
    assert outcome.error is not None
    assert "announced twice" in outcome.error.message
    assert {(d.index, d.call_id) for d in outcome.tool_deltas} == {(0, "call_1")}  # one call
    assert isinstance(_sdk_outcome(sdk), Exception)


def test_the_recorded_shapes_still_agree(player: Playback, sdk: Any) -> None:
    """Every shape the wire writer knows, in order, is accepted and agrees."""
    items: list[Item] = [
        Reasoning((("Think", "ing"), ("More",)), "gAAAAABencrypted"),
        Message(("Hel", "lo")),
        FunctionCall("get_weather", "call_1", ('{"city":', ' "Oslo"}')),
        BuiltIn(),
        Message(("Bye",)),
    ]
    outcome = _differential(player, sdk, _hello(*items))
    assert outcome.receipt is not None
    assert outcome.receipt.text == "HelloBye"


def test_two_calls_under_one_id_are_refused_as_the_sdk_refuses_them(
    player: Playback, sdk: Any
) -> None:
    events = _hello(
        FunctionCall("get_weather", "call_1", ('{"city": "Oslo"}',)),
        FunctionCall("get_weather", "call_1", ('{"city": "Delft"}',)),
    )
    outcome = _differential(player, sdk, events)
    assert outcome.error is not None
    assert "'call_1'" in outcome.error.message
    assert isinstance(_sdk_outcome(sdk), Exception)


def _with_reasoning_parts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with the reasoning item's raw chain of thought announced as gpt-oss models
    send it through OpenRouter: its ``reasoning_text`` deltas inside a ``reasoning_text``
    content part of the reasoning item (``content_part.added`` … ``content_part.done``)."""
    added = next(n for n, e in enumerate(events) if e["type"] == "response.output_item.added")
    item = events[added]["item"]
    assert item["type"] == "reasoning"
    where = {"item_id": item["id"], "output_index": events[added]["output_index"]}
    part = {"type": "response.content_part.added", **where, "content_index": 0}
    opened = {**part, "part": {"type": "reasoning_text", "text": ""}}
    done = next(
        n
        for n, e in enumerate(events)
        if e["type"] == "response.output_item.done" and e["output_index"] == where["output_index"]
    )
    text = "".join(c["text"] for c in events[done]["item"].get("content") or [])
    closed = {
        **part,
        "type": "response.content_part.done",
        "part": {**opened["part"], "text": text},
    }
    return _renumbered(
        [*events[: added + 1], opened, *events[added + 1 : done], closed, *events[done:]]
    )


def test_a_reasoning_items_own_content_part_is_read_not_refused(player: Playback, sdk: Any) -> None:
    """A ``content_part.added`` of type ``reasoning_text`` belongs to a reasoning item (the
    SDK's ``ResponseContentPartAddedEvent.part`` allows it); only other parts need a
    message. Refusing it refused real OpenRouter streams."""
    events = _with_reasoning_parts(_hello(Reasoning(content=("2+2", " is 4")), Message(("4",))))
    player.answer = stream_reply([sse(event) for event in events])
    with httpx.Client() as http:
        outcome = run_streamed(_adapter(player, http), make_request())
    assert outcome.error is None, outcome.error
    assert outcome.receipt is not None
    assert outcome.receipt.text == "4"
    assert "2+2 is 4" in "".join(part.text or "" for part in outcome.receipt.reasoning or [])
    response = _sdk_outcome(sdk)
    assert not isinstance(response, Exception), response
    assert response.output_text == "4"
