"""The ``ollama`` protocol: each case played means what it meant, its stream is JSON lines that
read back (with ``json.loads``, apart from the encoder) to the case, the ``"done": true`` line
is there exactly when the turn completes, the error frame is an ``{"error": …}`` line and each
kind of garbage is unreadable."""

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

OLLAMA = PROTOCOLS["ollama"]
MARKER = "RUNPORT-BODY-0123456789abcdef"
CASES_BY_NAME = {case.name: case for case in CASES}


def lines(response: Response) -> list[Any]:
    """The body's lines, each parsed (``ValueError`` for one that is not JSON, a cut last line
    included)."""
    body = b"".join(frame.data for frame in response.frames)
    return [json.loads(line) for line in body.split(b"\n") if line.strip()]


def streamed(case: Case) -> Response:
    return stream_response(OLLAMA, OLLAMA.played(case), WireContext("m", MARKER))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_played_case_means_the_same_and_plays_as_itself(case: Case) -> None:
    if not case.requires <= OLLAMA.features:
        pytest.skip(f"ollama cannot say {case.name}: the suite never plays it there")
    played = OLLAMA.played(case)
    assert OLLAMA.played(played) == played
    assert _without_ids(meaning(played)) == _without_ids(meaning(case))


def _without_ids(said: dict[str, Any]) -> dict[str, Any]:
    """Ollama's calls carry no id (the client numbers them): a case's ids are not part of what
    the wire can say."""
    return {**said, "calls": [{**call, "call_id": None} for call in said["calls"]]}


@settings(deadline=None, derandomize=True, database=None, max_examples=30)
@given(data=st.data())
def test_generated_turns_read_back_to_their_text_thinking_and_calls(data: st.DataObject) -> None:
    case = OLLAMA.played(data.draw(generated_case(tools=True)))
    messages = [chunk["message"] for chunk in lines(streamed(case)) if "message" in chunk]
    assert "".join(m["content"] for m in messages) == "".join(
        step.text for step in case.steps if isinstance(step, Text)
    )
    assert "".join(m.get("thinking", "") for m in messages) == "".join(
        step.text for step in case.steps if isinstance(step, Thought)
    )
    calls = [call["function"] for m in messages for call in m.get("tool_calls", [])]
    assert [call["name"] for call in calls] == [
        step.name for step in case.steps if isinstance(step, Call) and step.name
    ]
    assert [call["index"] for call in calls] == list(range(len(calls)))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_done_line_is_there_exactly_when_the_turn_completes(case: Case) -> None:
    if not case.requires <= OLLAMA.features:
        pytest.skip(f"ollama cannot say {case.name}")
    fault = case.fault
    response = streamed(case)
    if fault is not None and fault.kind == "status":
        assert response.status == fault.status
        assert MARKER in json.loads(response.frames[0].data)["error"]
        return
    if fault is not None and fault.kind == "garbage":
        with pytest.raises(ValueError, match=r"Expecting|Unterminated"):
            lines(response)
        return
    read = lines(response)
    done = [chunk for chunk in read if chunk.get("done") is True]
    assert bool(done) == (fault is None or fault.kind == "oversize")
    if done:
        assert done[0]["done_reason"] == OLLAMA.played(case).finish_reason
        assert read[-1] is done[0]
    if fault is not None and fault.kind == "error_frame":
        assert MARKER in read[-1]["error"]


def test_a_turn_ended_by_its_limit_says_length_and_one_with_calls_stop() -> None:
    cut = OLLAMA.played(CASES_BY_NAME["cut_mid_answer"])
    assert (cut.finish_reason, cut.expected_finish) == ("length", "length")
    calls = OLLAMA.played(CASES_BY_NAME["one_tool_call"])
    assert (calls.finish_reason, calls.expected_finish) == ("stop", "tool_calls")
    assert all(step.call_id is None for step in calls.steps if isinstance(step, Call))


@pytest.mark.parametrize("garbage", ["bad-line", "cut-line"])
def test_each_kind_of_garbage_is_unreadable(garbage: str) -> None:
    protocol: Any = type(OLLAMA)(garbage)  # type: ignore[call-arg]
    frame = protocol.garbage_frame(WireContext("m", MARKER))
    assert frame.endswith(b"\n") == (garbage == "bad-line")
    with pytest.raises(ValueError, match=r"Expecting|Unterminated"):
        json.loads(frame)


def test_the_unstreamed_body_says_what_the_stream_says() -> None:
    case = CASES_BY_NAME["one_tool_call"]
    response = body_response(OLLAMA, OLLAMA.played(case), WireContext("m", MARKER))
    body = json.loads(response.frames[0].data)
    assert body["message"]["content"] == "Checking."
    assert body["message"]["tool_calls"] == [
        {"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}
    ]
    assert (body["done"], body["done_reason"]) == (True, "stop")


@pytest.mark.parametrize(
    ("path", "body", "recognised"),
    [
        ("/api/chat", {"model": "m"}, True),
        ("/api/chat", {"model": "m", "stream": True}, True),
        ("/api/chat", {"model": "m", "stream": False}, False),
        ("/v1/chat/completions", {}, OLLAMA.endpoint),
        ("/api/generate", {}, OLLAMA.endpoint),
    ],
)
def test_the_protocol_recognises_only_its_path(
    path: str, body: dict[str, Any], recognised: bool | str
) -> None:
    assert OLLAMA.recognise(WireRequest("POST", path, {}, {}, b"", body)) == recognised
