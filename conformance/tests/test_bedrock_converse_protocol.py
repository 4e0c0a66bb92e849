"""The ``bedrock-converse`` protocol: each case played means what it meant, its stream is
eventstream messages that read back (through ``runport.http``'s decoder, written apart from
the encoder) to the case, the completion marker is there exactly when the turn completes, the
error frame is an exception message and each kind of garbage is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance import CASES, PROTOCOLS, Call, Case, Text, WireContext, WireRequest
from runport.conformance._responses import Response, SentFrame, body_response, stream_response
from runport.conformance._strategies import generated_case
from runport.contracts import ErrorCode
from runport.http import EventStreamDecoder, EventStreamMessage, eventstream_error
from runport.ports import PortError

from .test_protocols import meaning

BEDROCK = PROTOCOLS["bedrock-converse"]
MARKER = "RUNPORT-BODY-0123456789abcdef"


def messages(response: Response) -> list[EventStreamMessage]:
    decoder = EventStreamDecoder()
    read = [m for frame in response.frames for m in decoder.feed(frame.data)]
    decoder.end()
    return read


def streamed(case: Case) -> Response:
    return stream_response(BEDROCK, BEDROCK.played(case), WireContext("m", MARKER))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_played_case_means_the_same_and_plays_as_itself(case: Case) -> None:
    played = BEDROCK.played(case)
    assert BEDROCK.played(played) == played
    assert _without_given_ids(meaning(played)) == meaning(case)


def _without_given_ids(said: dict[str, Any]) -> dict[str, Any]:
    """Converse names every call: an id the protocol gave a call that had none is not part
    of what the case said."""
    calls = [
        {**call, "call_id": None} if str(call["call_id"]).startswith("tooluse_runport_") else call
        for call in said["calls"]
    ]
    return {**said, "calls": calls}


@settings(deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_generated_turns_read_back_to_their_text_and_calls(data: st.DataObject) -> None:
    case = BEDROCK.played(data.draw(generated_case(tools=True)))
    events = [(m.event_type, json.loads(m.payload)) for m in messages(streamed(case))]
    deltas = [p["delta"] for kind, p in events if kind == "contentBlockDelta"]
    text = "".join(delta["text"] for delta in deltas if "text" in delta)
    assert text == "".join(step.text for step in case.steps if isinstance(step, Text))
    starts = [p["start"]["toolUse"]["name"] for kind, p in events if kind == "contentBlockStart"]
    assert starts == [step.name for step in case.steps if isinstance(step, Call) and step.name]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_message_stop_is_there_exactly_when_the_turn_completes(case: Case) -> None:
    fault = case.fault
    response = streamed(case)
    if fault is not None and fault.kind == "status":
        assert response.status == fault.status
        assert MARKER in json.loads(response.frames[0].data)["message"]
        return
    if fault is not None and fault.kind == "garbage":
        with pytest.raises(PortError) as caught:
            messages(response)
        assert caught.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
        return
    read = messages(response)
    stopped = any(m.event_type == "messageStop" for m in read)
    assert stopped == (fault is None or fault.kind == "oversize")
    if fault is not None and fault.kind == "error_frame":
        error = eventstream_error(read[-1])
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_UNAVAILABLE


@pytest.mark.parametrize("garbage", ["message-crc", "prelude-crc", "cut-prelude"])
def test_each_kind_of_garbage_is_refused(garbage: str) -> None:
    protocol: Any = type(BEDROCK)(garbage)  # type: ignore[call-arg]
    frame = protocol.garbage_frame(WireContext("m", MARKER))
    with pytest.raises(PortError) as caught:
        messages(Response(200, (), (SentFrame(frame, 0),), chunked=True))
    assert caught.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_the_unstreamed_body_says_what_the_stream_says() -> None:
    case = next(case for case in CASES if case.name == "one_tool_call")
    response = body_response(BEDROCK, BEDROCK.played(case), WireContext("m", MARKER))
    body = json.loads(response.frames[0].data)
    content = body["output"]["message"]["content"]
    assert content[0] == {"text": "Checking."}
    assert content[1]["toolUse"]["input"] == {"city": "Paris"}
    assert body["stopReason"] == "tool_use"


@pytest.mark.parametrize(
    ("path", "recognised"),
    [
        ("/model/m/converse-stream", True),
        ("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/converse", False),
        ("/model/a/b/converse-stream", BEDROCK.endpoint),
        ("/v1/messages", BEDROCK.endpoint),
    ],
)
def test_the_protocol_recognises_only_its_paths(path: str, recognised: bool | str) -> None:
    assert BEDROCK.recognise(WireRequest("POST", path, {}, {}, b"{}", {})) == recognised
