"""Every hostile or broken upstream behaviour ends in exactly one ``Failed`` with the right code
and a raised ``PortError``; deltas already sent stay sent; no response is left open; nothing
secret or upstream-written leaks (docs/streaming-law.md laws 5, 6, 8–10; docs/providers.md)."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from runport.conformance.providers import make_request, run_streamed
from runport.contracts import Delta, ErrorCode, StreamEvent
from runport.openai import OpenAIChatAdapter
from runport.ports import PortError

from .openai_upstream import (
    API_KEY,
    Cut,
    LoopbackUpstream,
    Reply,
    Reset,
    Stall,
    TrackingTransport,
    chunk,
    completion,
    finish_chunk,
    sse,
    text_chunk,
    tool_chunk,
    usage_chunk,
)

BODY_MARKER = "UPSTREAM-BODY-7731"
"""Written into every error body the server sends: it must never reach an error or event."""


def streamed_failure(adapter: OpenAIChatAdapter, **request: object) -> tuple[list[str], PortError]:
    outcome = run_streamed(adapter, make_request(**request))  # type: ignore[arg-type]
    assert outcome.error is not None, f"expected a failure, got {outcome.receipt!r}"
    assert BODY_MARKER not in outcome.error.message
    assert API_KEY not in str(outcome.error)
    return outcome.deltas, outcome.error


def plain_failure(adapter: OpenAIChatAdapter, **request: object) -> PortError:
    with pytest.raises(PortError) as raised:
        adapter.execute(make_request(**request))  # type: ignore[arg-type]
    assert BODY_MARKER not in raised.value.message
    return raised.value


def error_body(status: int = 500, **error: object) -> Reply:
    return Reply.json({"error": {"message": BODY_MARKER, **error}}, status=status)


# --- HTTP status -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, ErrorCode.RUNTIME_PERMANENT),
        (401, ErrorCode.RUNTIME_PERMANENT),
        (404, ErrorCode.RUNTIME_PERMANENT),
        (408, ErrorCode.RUNTIME_TIMEOUT),
        (429, ErrorCode.RUNTIME_RATE_LIMITED),
        (500, ErrorCode.RUNTIME_UNAVAILABLE),
        (503, ErrorCode.RUNTIME_UNAVAILABLE),
        (302, ErrorCode.RUNTIME_INVALID_RESPONSE),
    ],
)
def test_status_codes_map_to_spec_codes(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, status: int, code: ErrorCode
) -> None:
    upstream.queue(error_body(status), error_body(status))
    deltas, error = streamed_failure(adapter)
    assert (deltas, error.code) == ([], code)
    assert plain_failure(adapter).code == code
    assert str(status) in error.message


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "2"}, 2000),
        ({"Retry-After": "0.25"}, 250),
        ({"Retry-After": "2", "retry-after-ms": "1500"}, 1500),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_429_carries_retry_after(
    upstream: LoopbackUpstream,
    adapter: OpenAIChatAdapter,
    headers: dict[str, str],
    expected: int | None,
) -> None:
    upstream.queue(_with(error_body(429), headers))
    _, error = streamed_failure(adapter)
    assert error.code == ErrorCode.RUNTIME_RATE_LIMITED
    assert error.retry_after_ms == expected


def test_503_passes_its_retry_after_on(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(_with(error_body(503), {"Retry-After": "3"}))
    error = plain_failure(adapter)
    assert (error.code, error.retry_after_ms) == (ErrorCode.RUNTIME_UNAVAILABLE, 3000)


def test_429_retry_after_as_an_http_date(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    later = datetime.now(UTC) + timedelta(seconds=120)
    upstream.queue(_with(error_body(429), {"Retry-After": format_datetime(later, usegmt=True)}))
    error = plain_failure(adapter)
    assert error.retry_after_ms is not None
    assert 60_000 < error.retry_after_ms <= 121_000


def _with(reply: Reply, headers: dict[str, str]) -> Reply:
    reply.headers.update(headers)
    return reply


# --- transport -------------------------------------------------------------------------------


def test_connection_refused_is_unavailable(transport: TrackingTransport) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        with httpx.Client(transport=transport) as client:
            adapter = OpenAIChatAdapter(
                base_url=f"http://127.0.0.1:{port}/v1", model="m", http_client=client
            )
            _, error = streamed_failure(adapter)
            assert error.code == ErrorCode.RUNTIME_UNAVAILABLE
            assert plain_failure(adapter).code == ErrorCode.RUNTIME_UNAVAILABLE


@pytest.mark.parametrize(
    ("raised", "code"),
    [
        (httpx.ConnectTimeout("slow"), ErrorCode.RUNTIME_TIMEOUT),
        (httpx.PoolTimeout("busy"), ErrorCode.RUNTIME_TIMEOUT),
        (httpx.WriteError("broken"), ErrorCode.RUNTIME_UNAVAILABLE),
    ],
)
def test_failures_before_any_response(raised: httpx.HTTPError, code: ErrorCode) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise raised

    with httpx.Client(transport=httpx.MockTransport(fail)) as client:
        adapter = OpenAIChatAdapter(
            base_url="http://upstream.test/v1", model="m", http_client=client
        )
        _, error = streamed_failure(adapter)
        assert error.code == code
        assert error.__cause__ is raised


def test_a_stall_before_the_marker_is_a_timeout(
    upstream: LoopbackUpstream, stalling_adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse([text_chunk("so far")], done=False), Stall()]))
    _, error = streamed_failure(stalling_adapter)
    upstream.release()
    assert error.code == ErrorCode.RUNTIME_TIMEOUT


class _ThenTimesOut(httpx.SyncByteStream):
    """A body that gives its bytes, then times out on the next read, as httpx does when a
    stalled server outlives the read timeout (here without waiting for one)."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        yield self._body
        raise httpx.ReadTimeout("timed out")


def test_a_read_timeout_keeps_the_fragments_read_before_it() -> None:
    body = sse([text_chunk("so far")], done=False)

    def answer(request: httpx.Request) -> httpx.Response:
        headers = {"Content-Type": "text/event-stream"}
        return httpx.Response(200, headers=headers, stream=_ThenTimesOut(body))

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        adapter = OpenAIChatAdapter(
            base_url="http://upstream.test/v1", model="m", http_client=client
        )
        deltas, error = streamed_failure(adapter)
    assert deltas == ["so far"]  # kept, never retracted
    assert error.code == ErrorCode.RUNTIME_TIMEOUT
    assert isinstance(error.__cause__, httpx.ReadTimeout)


def test_a_stall_before_any_byte_is_a_timeout(
    upstream: LoopbackUpstream, stalling_adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([Stall()]))
    assert plain_failure(stalling_adapter).code == ErrorCode.RUNTIME_TIMEOUT
    upstream.release()


def test_eof_before_any_marker_is_truncation(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse([text_chunk("Hel")], done=False)]))
    deltas, error = streamed_failure(adapter)
    assert deltas == ["Hel"]
    assert error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED


def test_an_empty_200_body_is_truncation(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    """llama.cpp's answer to a streamed ``tool_choice: "required"``."""
    upstream.queue(Reply([]))
    deltas, error = streamed_failure(adapter)
    assert (deltas, error.code) == ([], ErrorCode.RUNTIME_STREAM_TRUNCATED)


def test_an_event_cut_before_its_blank_line_does_not_count(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse([text_chunk("a")], done=False) + b"data: [DONE]\n"]))
    assert streamed_failure(adapter)[1].code == ErrorCode.RUNTIME_STREAM_TRUNCATED


@pytest.mark.parametrize("misbehaviour", [Cut(), Reset()], ids=["cut", "reset"])
def test_a_dropped_connection_before_the_marker_is_unavailable(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, misbehaviour: Cut | Reset
) -> None:
    upstream.queue(Reply([sse([text_chunk("partial")], done=False), misbehaviour]))
    deltas, error = streamed_failure(adapter)
    assert deltas == ["partial"]
    assert error.code == ErrorCode.RUNTIME_UNAVAILABLE


@pytest.mark.parametrize("misbehaviour", [Cut(), Reset()], ids=["cut", "reset"])
def test_a_dropped_connection_after_finish_reason_before_done_is_unavailable(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, misbehaviour: Cut | Reset
) -> None:
    """A finish reason is not the completion marker (servers put one on every chunk): only
    ``[DONE]`` proves the answer whole, so a connection lost before it fails."""
    upstream.queue(Reply([sse([text_chunk("done"), finish_chunk()], done=False), misbehaviour]))
    deltas, error = streamed_failure(adapter)
    assert deltas == ["done"]
    assert error.code == ErrorCode.RUNTIME_UNAVAILABLE


@pytest.mark.parametrize("misbehaviour", [Cut(), Reset()], ids=["cut", "reset"])
def test_a_dropped_connection_mid_stream_with_finish_reason_on_every_chunk_fails(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, misbehaviour: Cut | Reset
) -> None:
    """Z.ai's GLM-4.5 shape: were a finish reason the marker, a stream cut here would pass
    off its first half as the whole answer."""
    frames = [chunk({"content": piece}, finish="stop") for piece in ("The answer", " is")]
    upstream.queue(Reply([sse(frames, done=False), misbehaviour]))
    deltas, error = streamed_failure(adapter)
    assert deltas == ["The answer", " is"]
    assert error.code == ErrorCode.RUNTIME_UNAVAILABLE


@pytest.mark.parametrize("misbehaviour", [Cut(), Reset()], ids=["cut", "reset"])
def test_a_dropped_connection_after_done_completes(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, misbehaviour: Cut | Reset
) -> None:
    upstream.queue(Reply([sse([text_chunk("done"), finish_chunk()], done=True), misbehaviour]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.text == "done"


def test_a_dropped_connection_mid_json_body(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([b'{"choices": [', Reset()], headers={"Content-Type": "application/json"}))
    assert plain_failure(adapter).code == ErrorCode.RUNTIME_UNAVAILABLE


# --- malformed and error frames --------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        b"data: {not json}\n\n",
        b'data: {"choices": [{"delta": {"content": "x"\n\n',
        b"data: [1, 2]\n\n",
        b'data: {"choices": {"0": {}}}\n\n',
        b'data: {"choices": [{"delta": "text"}]}\n\n',
        b'data: {"choices": [{"delta": {"content": 5}}]}\n\n',
        # a named call with no index is Mistral's whole call (test_fidelity.py); without a
        # name, a fragment with no index belongs to no call
        b'data: {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]}\n\n',
        b'data: {"choices": [{"delta": {"tool_calls": [{"index": -1}]}}]}\n\n',
        b'data: {"choices": [{"delta": {}, "finish_reason": 3}]}\n\n',
        b'data: {"choices": [], "usage": {"prompt_tokens": "many"}}\n\n',
        b'data: {"choices": [{"delta": {"content": "\\ud83d"}}]}\n\n',
        b'data: {"choices": [{"delta": {"content": "\xff"}}]}\n\n',
    ],
)
def test_malformed_frames_are_invalid_responses(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, frame: bytes
) -> None:
    upstream.queue(Reply([sse([text_chunk("before")], done=False) + frame + b"data: [DONE]\n\n"]))
    deltas, error = streamed_failure(adapter)
    assert deltas == ["before"]
    assert error.code == ErrorCode.RUNTIME_INVALID_RESPONSE


@pytest.mark.parametrize(
    "fragments",
    [
        [tool_chunk(0, call_id="a", name="f"), tool_chunk(0, name="g", arguments="{}")],
        [tool_chunk(0, call_id="a", name="f"), tool_chunk(0, call_id="b", arguments="{}")],
        [tool_chunk(0, call_id="a", arguments="{}")],  # never named
    ],
    ids=["renamed", "new-id", "nameless"],
)
def test_a_tool_call_that_changes_identity_or_has_no_name_is_invalid(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, fragments: list[dict[str, object]]
) -> None:
    upstream.queue(Reply([sse([*fragments, finish_chunk("tool_calls")])]))
    assert streamed_failure(adapter)[1].code == ErrorCode.RUNTIME_INVALID_RESPONSE


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ({"type": "rate_limit_exceeded", "code": "rate_limit_exceeded"}, "RATE_LIMITED"),
        ({"type": "tokens", "code": "rate_limit_exceeded"}, "RATE_LIMITED"),
        ({"type": "server_error", "code": None}, "UNAVAILABLE"),
        ({"type": "overloaded_error"}, "UNAVAILABLE"),
        ({"code": 500, "type": "server_error"}, "UNAVAILABLE"),
        ({"code": 503}, "UNAVAILABLE"),
        ({"code": 429}, "RATE_LIMITED"),
        ({"type": "invalid_request_error", "code": "context_length_exceeded"}, "PERMANENT"),
        ({}, "PERMANENT"),
    ],
)
def test_error_frames_map_by_type_and_code(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, error: dict[str, object], code: str
) -> None:
    frame = {"error": {"message": BODY_MARKER, **error}}
    upstream.queue(Reply([sse([text_chunk("so far"), frame])]), Reply.json(frame))
    deltas, raised = streamed_failure(adapter)
    assert deltas == ["so far"]
    assert raised.code == f"TQX_RUNTIME_{code}"
    assert plain_failure(adapter).code == f"TQX_RUNTIME_{code}"


def test_an_sse_error_event(upstream: LoopbackUpstream, adapter: OpenAIChatAdapter) -> None:
    body = b'event: error\ndata: {"error": {"type": "overloaded_error", "message": "x"}}\n\n'
    upstream.queue(Reply([sse([text_chunk("a")], done=False) + body]))
    assert streamed_failure(adapter)[1].code == ErrorCode.RUNTIME_UNAVAILABLE


def test_a_json_answer_that_is_not_json(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(
        Reply([b"<html>" + BODY_MARKER.encode()], headers={"Content-Type": "application/json"})
    )
    assert plain_failure(adapter).code == ErrorCode.RUNTIME_INVALID_RESPONSE


# --- size bound ------------------------------------------------------------------------------


def test_a_stream_past_the_request_bound_is_too_large(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    frames = [sse([text_chunk("x" * 100)], done=False) for _ in range(50)]
    upstream.queue(Reply([*frames, sse([finish_chunk()])]))
    deltas, error = streamed_failure(adapter, runtime_policy={"max_response_bytes": 1000})
    assert error.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE
    assert len("".join(deltas)) < 1000


def test_the_smaller_bound_wins(upstream: LoopbackUpstream, transport: TrackingTransport) -> None:
    body = sse([text_chunk("x" * 600), finish_chunk()])
    upstream.queue(Reply([body]), Reply([body]), Reply([body]))
    with httpx.Client(transport=transport) as client:
        small = OpenAIChatAdapter(
            base_url=upstream.base_url, model="m", http_client=client, max_response_bytes=500
        )
        big = OpenAIChatAdapter(
            base_url=upstream.base_url, model="m", http_client=client, max_response_bytes=10_000
        )
        policy = {"max_response_bytes": 20_000}
        assert streamed_failure(small, runtime_policy=policy)[1].code == (
            ErrorCode.RUNTIME_RESPONSE_TOO_LARGE
        )
        assert run_streamed(big, make_request(runtime_policy=policy)).receipt is not None
        tight = {"max_response_bytes": 500}
        assert streamed_failure(big, runtime_policy=tight)[1].code == (
            ErrorCode.RUNTIME_RESPONSE_TOO_LARGE
        )


def test_a_declared_length_past_the_bound_is_refused_before_reading(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply.json(completion("x" * 5000)))
    error = plain_failure(adapter, runtime_policy={"max_response_bytes": 1000})
    assert error.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE


def test_one_endless_line_is_bounded_too(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([b"data: " + b"x" * 4096 for _ in range(64)]))
    _, error = streamed_failure(adapter, runtime_policy={"max_response_bytes": 65_536})
    assert error.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE


def test_an_unusable_request_bound_is_refused_before_calling(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    _, error = streamed_failure(adapter, runtime_policy={"max_response_bytes": "lots"})
    assert error.code == ErrorCode.DATA_INVALID
    assert upstream.requests == []


# --- caller stop -----------------------------------------------------------------------------


class Stop(Exception):
    pass


def test_a_raising_sink_closes_the_response_before_its_exception_leaves(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, transport: TrackingTransport
) -> None:
    upstream.queue(
        Reply([sse([text_chunk("one")], done=False), Stall(), sse([text_chunk("two")])]),
        Reply([sse([text_chunk("next"), finish_chunk()])]),
    )
    seen: list[StreamEvent] = []
    stop = Stop()

    def sink(event: StreamEvent) -> None:
        seen.append(event)
        raise stop

    with pytest.raises(Stop) as raised:
        adapter.execute_streaming(make_request(), sink)
    assert raised.value is stop  # unwrapped, the same object
    assert transport.all_closed  # released before the exception reached us
    assert seen == [Delta(text="one")]  # nothing after the raise
    upstream.release()
    assert upstream.wait_idle()
    assert upstream.disconnects == 1  # the server saw the connection go
    assert run_streamed(adapter, make_request()).deltas == ["next"]  # still usable


@pytest.mark.parametrize(
    "error", [PortError("TQX_X", "sink's own"), httpx.ConnectError("sink's own")]
)
def test_a_sink_raising_a_port_or_httpx_error_is_not_mistaken_for_the_upstream(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, error: Exception
) -> None:
    upstream.queue(Reply([sse([text_chunk("one"), finish_chunk()])]))
    seen: list[StreamEvent] = []

    def sink(event: StreamEvent) -> None:
        seen.append(event)
        raise error

    with pytest.raises(type(error)) as raised:
        adapter.execute_streaming(make_request(), sink)
    assert raised.value is error
    assert len(seen) == 1  # no Failed was sent after it


def test_a_sink_raising_on_complete_propagates(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse([text_chunk("one"), finish_chunk()])]))

    def sink(event: StreamEvent) -> None:
        if event.kind == "Complete":
            raise Stop

    with pytest.raises(Stop):
        adapter.execute_streaming(make_request(), sink)


# --- no secrets ------------------------------------------------------------------------------


def test_the_key_and_bodies_reach_no_event_error_or_log(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    upstream.queue(
        Reply([sse([text_chunk("hi"), {"error": {"message": BODY_MARKER + API_KEY}}])]),
        error_body(401),
        Reply([sse([text_chunk("hi"), finish_chunk(), usage_chunk()])]),
    )
    texts: list[str] = []
    for _ in range(3):
        outcome = run_streamed(adapter, make_request())
        texts += [event.model_dump_json() for event in outcome.events]
        if outcome.error is not None:
            texts += [str(outcome.error), repr(outcome.error), str(outcome.error.detail)]
    texts += [record.getMessage() for record in caplog.records]
    texts.append(repr(adapter))
    for text in texts:
        assert API_KEY not in text
        assert BODY_MARKER not in text


def test_never_retries(upstream: LoopbackUpstream, adapter: OpenAIChatAdapter) -> None:
    upstream.queue(error_body(503), error_body(429), error_body(503))
    streamed_failure(adapter)
    plain_failure(adapter)
    streamed_failure(adapter, runtime_policy={"retries": 3})
    assert len(upstream.requests) == 3


def test_a_null_content_yields_nothing(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse([text_chunk("a"), chunk({"content": None}), finish_chunk()])]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.text == "a"


def test_a_request_json_cannot_carry_is_refused_before_calling(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    _, error = streamed_failure(adapter, runtime_policy={"temperature": float("nan")})
    assert error.code == ErrorCode.DATA_INVALID
    assert upstream.requests == []
