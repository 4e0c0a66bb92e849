"""The ``cohere-chat`` protocol: each case played means what it meant, its stream is typed events
that read back (with ``json.loads``, apart from the encoder) to the case, ``message-end`` is
there exactly when the turn completes, and the error frame is a ``message-end`` whose finish is
``ERROR``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance import (
    CASES,
    PROTOCOLS,
    Call,
    Case,
    Text,
    Thought,
    WireContext,
    WireRequest,
)
from runport.conformance._responses import Response, body_response, stream_response
from runport.conformance._strategies import generated_case

from .test_protocols import meaning

COHERE = PROTOCOLS["cohere-chat"]
MARKER = "RUNPORT-BODY-0123456789abcdef"
CASES_BY_NAME = {case.name: case for case in CASES}


def events(response: Response) -> list[dict[str, Any]]:
    """The body's events, each ``data:`` parsed, checked against its ``event:`` line (the
    garbage frame has none)."""
    body = b"".join(frame.data for frame in response.frames).decode()
    read = []
    for block in body.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        payload = json.loads(fields["data"])
        assert fields.get("event", payload["type"]) == payload["type"]
        read.append(payload)
    return read


def streamed(case: Case) -> Response:
    return stream_response(COHERE, COHERE.played(case), WireContext("m", MARKER))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_played_case_means_the_same_and_plays_as_itself(case: Case) -> None:
    if not case.requires <= COHERE.features:
        pytest.skip(f"cohere-chat cannot say {case.name}: the suite never plays it there")
    played = COHERE.played(case)
    assert COHERE.played(played) == played
    assert _without_given_ids(meaning(played)) == meaning(case)


def _without_given_ids(said: dict[str, Any]) -> dict[str, Any]:
    """Cohere names every call: an id the protocol gave a call that had none is not part of
    what the case said."""
    calls = [
        {**call, "call_id": None} if "_runport" in str(call["call_id"]) else call
        for call in said["calls"]
    ]
    return {**said, "calls": calls}


@settings(deadline=None, derandomize=True, database=None, max_examples=30)
@given(data=st.data())
def test_generated_turns_read_back_to_their_text_thinking_and_calls(data: st.DataObject) -> None:
    case = COHERE.played(data.draw(generated_case(tools=True)))
    read = events(streamed(case))
    pieces = [e["delta"]["message"]["content"] for e in read if e["type"] == "content-delta"]
    assert "".join(p.get("text", "") for p in pieces) == "".join(
        step.text for step in case.steps if isinstance(step, Text)
    )
    assert "".join(p.get("thinking", "") for p in pieces) == "".join(
        step.text for step in case.steps if isinstance(step, Thought)
    )
    starts = [e["delta"]["message"]["tool_calls"] for e in read if e["type"] == "tool-call-start"]
    assert [call["function"]["name"] for call in starts] == [
        step.name for step in case.steps if isinstance(step, Call) and step.name
    ]
    ends = [e["index"] for e in read if e["type"] == "tool-call-end"]
    assert ends == [e["index"] for e in read if e["type"] == "tool-call-start"]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_message_end_is_there_exactly_when_the_turn_completes(case: Case) -> None:
    if not case.requires <= COHERE.features:
        pytest.skip(f"cohere-chat cannot say {case.name}")
    fault = case.fault
    response = streamed(case)
    if fault is not None and fault.kind == "status":
        assert response.status == fault.status
        assert MARKER in json.loads(response.frames[0].data)["message"]
        return
    if fault is not None and fault.kind == "garbage":
        with pytest.raises(ValueError, match=r"Expecting|Unterminated"):
            events(response)
        return
    read = events(response)
    ended = [e for e in read if e["type"] == "message-end"]
    completed = fault is None or fault.kind == "oversize"
    if fault is not None and fault.kind == "error_frame":
        assert ended[-1]["delta"]["finish_reason"] == "ERROR"
        assert MARKER in ended[-1]["delta"]["error"]
        return
    assert bool(ended) == completed
    if ended:
        assert ended[0]["delta"]["finish_reason"] == COHERE.played(case).finish_reason
        assert read[-1] is ended[0]


def test_each_turn_end_is_said_in_cohere_s_words() -> None:
    cut = COHERE.played(CASES_BY_NAME["cut_mid_answer"])
    assert (cut.finish_reason, cut.expected_finish) == ("MAX_TOKENS", "length")
    calls = COHERE.played(CASES_BY_NAME["one_tool_call"])
    assert (calls.finish_reason, calls.expected_finish) == ("TOOL_CALL", "tool_calls")
    cached = COHERE.played(CASES_BY_NAME["cache_usage"])
    [end] = [e for e in events(streamed(cached)) if e["type"] == "message-end"]
    assert end["delta"]["usage"]["cached_tokens"] > 0


def test_the_unstreamed_body_says_what_the_stream_says() -> None:
    case = CASES_BY_NAME["one_tool_call"]
    response = body_response(COHERE, COHERE.played(case), WireContext("m", MARKER))
    body = json.loads(response.frames[0].data)
    assert body["message"]["content"] == [{"type": "text", "text": "Checking."}]
    [call] = body["message"]["tool_calls"]
    assert (call["id"], call["function"]["name"]) == ("call_w1", "get_weather")
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert body["finish_reason"] == "TOOL_CALL"


@pytest.mark.parametrize(
    ("path", "body", "recognised"),
    [
        ("/v2/chat", {"model": "m", "stream": True}, True),
        ("/v2/chat", {"model": "m", "stream": False}, False),
        ("/v2/chat", {"model": "m"}, False),
        ("/v1/chat", {}, COHERE.endpoint),
    ],
)
def test_the_protocol_recognises_only_its_path(
    path: str, body: dict[str, Any], recognised: bool | str
) -> None:
    assert COHERE.recognise(WireRequest("POST", path, {}, {}, b"", body)) == recognised
