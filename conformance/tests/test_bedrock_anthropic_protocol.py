"""The ``bedrock-anthropic`` protocol: its stream is eventstream ``chunk`` messages whose
base64 ``bytes`` read back (through ``runport.http``'s decoder, written apart from the
encoder) to exactly the events ``anthropic-messages`` writes for the case, ``ping`` left out;
its body is the Messages body; it refuses a body Bedrock refuses; its error frame is an
exception message."""

from __future__ import annotations

import json
from base64 import b64decode
from typing import Any

import pytest

from runport.conformance import CASES, PROTOCOLS, Case, WireContext, WireRequest
from runport.conformance._responses import Response, body_response, stream_response
from runport.http import EventStreamDecoder

BEDROCK = PROTOCOLS["bedrock-anthropic"]
MESSAGES = PROTOCOLS["anthropic-messages"]
MARKER = "RUNPORT-BODY-0123456789abcdef"
CONTEXT = WireContext("m", MARKER)


def chunks(response: Response) -> list[Any]:
    """Each message's event, decoded: the Anthropic event of a ``chunk``, else its kind."""
    decoder = EventStreamDecoder()
    read: list[Any] = []
    for frame in response.frames:
        for message in decoder.feed(frame.data):
            if message.event_type == "chunk":
                read.append(json.loads(b64decode(json.loads(message.payload)["bytes"])))
            else:
                read.append(message.headers.get(":exception-type"))
    return read


def sse_events(response: Response) -> list[Any]:
    text = b"".join(frame.data for frame in response.frames).decode()
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    return [event for event in events if event.get("type") != "ping"]


COMPLETE = [case for case in CASES if case.fault is None]


@pytest.mark.parametrize("case", COMPLETE, ids=[case.name for case in COMPLETE])
def test_the_chunks_carry_the_messages_events_and_the_body_is_the_messages_body(
    case: Case,
) -> None:
    played = BEDROCK.played(case)
    assert played == MESSAGES.played(case)
    relayed = chunks(stream_response(BEDROCK, played, CONTEXT))
    written = sse_events(stream_response(MESSAGES, played, CONTEXT))
    assert relayed[-1].pop("amazon-bedrock-invocationMetrics")["outputTokenCount"] >= 0
    assert relayed == written
    assert _body(BEDROCK, played) == _body(MESSAGES, played)


def _body(protocol: Any, played: Case) -> Any:
    """The unstreamed answer's frames, or the error a case with no body form raises (a call
    cut mid-arguments)."""
    try:
        return body_response(protocol, played, CONTEXT).frames
    except ValueError as error:
        return repr(error)


def test_the_error_frame_is_an_exception_message() -> None:
    case = next(c for c in CASES if c.fault is not None and c.fault.kind == "error_frame")
    relayed = chunks(stream_response(BEDROCK, BEDROCK.played(case), CONTEXT))
    assert relayed[-1] == "modelStreamErrorException"


def _request(path: str, body: dict[str, Any]) -> WireRequest:
    return WireRequest("POST", path, {}, {}, json.dumps(body).encode(), body)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"messages": []}, "anthropic_version must be 'bedrock-2023-05-31'"),
        ({"anthropic_version": "2023-06-01", "messages": []}, "anthropic_version must be"),
        (
            {"anthropic_version": "bedrock-2023-05-31", "model": "m", "messages": []},
            "extraneous key [model] is not permitted",
        ),
        (
            {"anthropic_version": "bedrock-2023-05-31", "stream": True, "messages": []},
            "extraneous key [stream] is not permitted",
        ),
    ],
)
def test_a_body_bedrock_refuses_is_a_400(body: dict[str, Any], reason: str) -> None:
    request = _request("/model/m/invoke-with-response-stream", body)
    assert BEDROCK.recognise(request) is True
    refusal = BEDROCK.check(request, CASES[0])
    assert refusal is not None
    assert refusal.status == 400
    assert reason in json.loads(refusal.body)["message"]


def test_the_paths_it_recognises() -> None:
    body = {"anthropic_version": "bedrock-2023-05-31", "messages": []}
    assert BEDROCK.recognise(_request("/model/a%3Ab/invoke", body)) is False
    assert BEDROCK.recognise(_request("/model/a%3Ab/invoke-with-response-stream", body)) is True
    assert BEDROCK.recognise(_request("/v1/messages", body)) == BEDROCK.endpoint
    assert BEDROCK.check(_request("/model/m/invoke", body), CASES[0]) is None
