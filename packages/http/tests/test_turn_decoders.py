"""The turn decoders' helpers: a whole body without its completion marker, and the shared
JSON and header shapes every JSON API codec reads and writes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runport.conformance.providers import make_request
from runport.contracts import AdapterDescriptor, ErrorCode
from runport.http import (
    JSONTurnDecoder,
    bearer_headers,
    error_message,
    json_headers,
    json_object,
    reads_as_events,
)
from runport.ports import PortError

ADAPTER = AdapterDescriptor(id="turn-test", version="1.0.0")


class _Body(JSONTurnDecoder):
    def body(self, data: bytes) -> bool:
        value = json_object(data, "the response")
        self.turn.text(value.get("text", ""))
        return bool(value.get("done"))


def test_a_whole_body_without_its_marker_is_truncated() -> None:
    decoder = _Body(make_request(), ADAPTER)
    decoder.feed(b'{"text": "half"}')
    assert [e.kind for e in decoder.end()] == ["Delta"]
    with pytest.raises(PortError) as raised:
        decoder.receipt()
    assert raised.value.code == ErrorCode.RUNTIME_STREAM_TRUNCATED


@pytest.mark.parametrize(
    ("data", "problem"), [(b"{nope", "is not JSON"), (b"[1]", "not a JSON object")]
)
def test_json_object_names_what_was_wrong(data: bytes, problem: str) -> None:
    with pytest.raises(PortError, match=problem) as raised:
        json_object(data, "a frame")
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"error": {"message": "bad key", "type": "x"}}, "bad key"),
        ({"error": "flat"}, None),
        ([1], None),
        ({"type": "error"}, None),
    ],
)
def test_error_message_reads_the_shared_error_shape(body: Any, message: str | None) -> None:
    assert error_message(json.loads(json.dumps(body))) == message


@pytest.mark.parametrize(
    ("stream", "media_type", "events"),
    [
        (True, "text/event-stream", True),
        (False, "text/event-stream", True),  # a server that streams anyway is understood
        (True, "application/json", False),  # one that ignores `stream` too
        (True, "", True),  # an unlabelled body is what was asked for
        (False, "", False),
    ],
)
def test_a_body_is_read_as_what_it_says_it_is(stream: bool, media_type: str, events: bool) -> None:
    assert reads_as_events(stream, media_type) is events


def test_bearer_headers_send_a_key_only_when_there_is_one() -> None:
    streamed, whole = bearer_headers("ua/1", "k", events="application/x-ndjson")
    assert streamed["Accept"] == "application/x-ndjson"
    assert whole["Accept"] == "application/json"
    assert streamed["Authorization"] == whole["Authorization"] == "Bearer k"
    for headers in bearer_headers("ua/1", None, events="application/x-ndjson"):
        assert "Authorization" not in headers
        assert headers["User-Agent"] == "ua/1"


def test_json_headers_ask_for_each_answer_with_the_credentials() -> None:
    streamed, whole = json_headers("ua/1", {"x-key": "k"})
    assert streamed["Accept"] == "text/event-stream"
    assert whole["Accept"] == "application/json"
    for headers in (streamed, whole):
        assert (headers["x-key"], headers["Content-Type"]) == ("k", "application/json")
