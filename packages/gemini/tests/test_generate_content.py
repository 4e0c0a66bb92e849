"""``GeminiAdapter`` over real HTTP on 127.0.0.1: what it sends, what it makes of the chunks
and of a whole response, and how each fault ends."""

from __future__ import annotations

import httpx
import pytest

from runport.conformance.loopback import (
    FaultServer,
    json_reply,
    seen,
    serving,
    stream_reply,
    trickle,
)
from runport.conformance.providers import (
    OBJECT_SCHEMA,
    WEATHER,
    Provider,
    make_request,
    run_streamed,
)
from runport.contracts import ErrorCode, Message, ReasoningPart, ToolCall, Usage
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter, create_adapter
from runport.ports import PortError

from .gemini_wire import (
    Turn,
    call,
    error_body,
    error_frame,
    frame,
    response_body,
    stream_chunks,
    text,
    thought,
)

API_KEY = "AIzaSyTEST-SECRET-0123456789abcdef"

TOOL_TURN = Turn(
    chunks=[
        [thought("Thinking about "), thought("the weather.")],
        [text("Let me "), text("check.", thoughtSignature="c2lnbmF0dXJl")],
        [call("get_weather", {"city": "Paris"}, call_id="fc-1"), call("get_weather")],
    ],
    finish="STOP",
    prompt_tokens=21,
    candidates_tokens=8,
    thoughts_tokens=30,
)


PROVIDER = Provider(GeminiAdapter, AsyncGeminiAdapter, "gemini-test", API_KEY)
adapter_for = PROVIDER.adapter_for
streamed = PROVIDER.streamed


def test_a_streamed_turn_keeps_thoughts_out_and_calls_whole(client: httpx.Client) -> None:
    with serving(stream_reply(stream_chunks(TOOL_TURN))) as server:
        outcome = run_streamed(adapter_for(server, client), make_request(tools=[WEATHER]))
    receipt = outcome.receipt
    assert receipt is not None
    assert receipt.text == "Let me check."  # a part with a thoughtSignature is answer text
    assert receipt.tool_calls == [
        ToolCall(call_id="fc-1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(call_id="call_1", name="get_weather", arguments={}),
    ]
    fragments = [(d.index, d.arguments_fragment) for d in outcome.tool_deltas]
    assert fragments == [(0, ""), (0, '{"city":"Paris"}'), (1, ""), (1, "{}")]
    assert receipt.finish_reason == "STOP"
    assert receipt.usage == Usage(input_tokens=21, output_tokens=38, reasoning_tokens=30)
    assert receipt.reasoning == [ReasoningPart(text="Thinking about the weather.")]


def test_the_request_carries_the_generate_content_shape(client: httpx.Client) -> None:
    with serving(
        stream_reply(stream_chunks(Turn([[text("ok")]]))),
        json_reply(response_body(Turn([[text("ok")]]))),
    ) as server:
        history = [
            Message(role="system", content="Be brief."),
            Message(role="user", content="Weather in Paris?"),
            Message(
                role="assistant",
                content="",
                tool_calls=[
                    ToolCall(call_id="call_0", name="get_weather", arguments={"city": "Paris"})
                ],
            ),
            Message(role="tool", content='{"sky": "clear"}', tool_call_id="call_0"),
        ]
        request = make_request(
            OBJECT_SCHEMA,
            messages=history,
            tools=[WEATHER],
            runtime_policy={"temperature": 0.1, "max_tokens": 50},
        )
        adapter = adapter_for(server, client)
        run_streamed(adapter, request)
        assert adapter.execute(request).output_schema_valid is False  # "ok" is no object
        streamed, whole = seen(server, 0), seen(server, 1)
    assert streamed.target == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    assert whole.target == "/v1beta/models/gemini-test:generateContent"
    for request_seen in (streamed, whole):
        assert request_seen.headers["x-goog-api-key"] == API_KEY
        assert API_KEY not in request_seen.target
        assert "key=" not in request_seen.target
    body = streamed.body
    assert body == whole.body
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "get_weather", "response": {"sky": "clear"}}}],
        },
    ]
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "The weather in a city.",
                    "parametersJsonSchema": WEATHER.parameters,
                }
            ]
        }
    ]
    assert body["generationConfig"] == {
        "temperature": 0.1,
        "maxOutputTokens": 50,
        "responseMimeType": "application/json",
        "responseJsonSchema": OBJECT_SCHEMA,
    }


def test_a_tool_result_for_an_unknown_call_is_refused(client: httpx.Client) -> None:
    with serving(stream_reply([])) as server:
        history = [
            Message(role="user", content="hi"),
            Message(role="tool", content="x", tool_call_id="nope"),
        ]
        with pytest.raises(PortError) as raised:
            adapter_for(server, client).execute(make_request(messages=history))
    assert raised.value.code == ErrorCode.DATA_INVALID


def test_execute_and_execute_streaming_agree(client: httpx.Client) -> None:
    with serving(
        stream_reply(stream_chunks(TOOL_TURN)), json_reply(response_body(TOOL_TURN))
    ) as server:
        adapter = adapter_for(server, client)
        streamed = run_streamed(adapter, make_request(tools=[WEATHER])).receipt
        whole = adapter.execute(make_request(tools=[WEATHER]))
    assert whole == streamed


def test_the_async_twin_gives_the_same_receipt(client: httpx.Client) -> None:
    PROVIDER.check_the_async_twin(client, stream_reply(stream_chunks(TOOL_TURN)))


def test_a_stream_without_finish_reason_is_truncated(client: httpx.Client) -> None:
    outcome = streamed(
        client, stream_reply(stream_chunks(Turn([[text("Once upon")], [text(" a")]], finish=None)))
    )
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED
    assert "finishReason" in outcome.error.message
    assert outcome.text == "Once upon a"


def test_a_prompt_blocked_at_the_prompt_is_permanent(client: httpx.Client) -> None:
    blocked = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 5},
    }
    with serving(stream_reply([frame(blocked)]), json_reply(blocked)) as server:
        adapter = adapter_for(server, client)
        outcome = run_streamed(adapter, make_request())
        with pytest.raises(PortError) as raised:
            adapter.execute(make_request())
    for error in (outcome.error, raised.value):
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_PERMANENT
        assert "PROHIBITED_CONTENT" in error.message


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        (503, "UNAVAILABLE", ErrorCode.RUNTIME_UNAVAILABLE),
        (429, "RESOURCE_EXHAUSTED", ErrorCode.RUNTIME_RATE_LIMITED),
        (500, "INTERNAL", ErrorCode.RUNTIME_UNAVAILABLE),
        (400, "INVALID_ARGUMENT", ErrorCode.RUNTIME_PERMANENT),
    ],
)
def test_error_frames_mid_stream(
    client: httpx.Client, code: int, status: str, expected: ErrorCode
) -> None:
    first = stream_chunks(Turn([[text("partial")], [text("x")]], finish=None))[0]
    leaked = f"The model is overloaded (key {API_KEY})"
    outcome = streamed(client, stream_reply([first, error_frame(code, status, leaked)]))
    assert outcome.error is not None
    assert outcome.error.code == expected
    assert "The model is overloaded" in outcome.error.message
    assert API_KEY not in outcome.error.message
    assert outcome.text == "partial"


@pytest.mark.parametrize(
    ("status", "word", "expected"),
    [
        ("429 Too Many Requests", "RESOURCE_EXHAUSTED", ErrorCode.RUNTIME_RATE_LIMITED),
        ("503 Service Unavailable", "UNAVAILABLE", ErrorCode.RUNTIME_UNAVAILABLE),
        ("400 Bad Request", "INVALID_ARGUMENT", ErrorCode.RUNTIME_PERMANENT),
    ],
)
def test_error_statuses_keep_the_providers_message_and_retry_after(
    client: httpx.Client, status: str, word: str, expected: ErrorCode
) -> None:
    code = int(status.split()[0])
    body = error_body(code, word, "Quota exceeded for metric generate_content_requests")
    PROVIDER.check_an_error_status(client, status, body, expected, "Quota exceeded")


def test_an_oversize_stream_fails_and_closes(client: httpx.Client) -> None:
    piece = stream_chunks(Turn([[text("x" * 300)]], finish=None))[0]
    PROVIDER.check_an_oversize_stream(client, trickle(piece, piece, every=0.001))


def test_a_caller_stop_closes_the_response_and_the_adapter_stays_usable(
    client: httpx.Client,
) -> None:
    piece = stream_chunks(Turn([[text("tick")]], finish=None))[0]
    server = FaultServer(
        [trickle(piece, piece, every=0.01), stream_reply(stream_chunks(Turn([[text("ok")]])))]
    )
    PROVIDER.check_a_caller_stop(client, server, after=2)


def test_cancelling_the_async_call_closes_the_upstream() -> None:
    piece = stream_chunks(Turn([[text("tick")]], finish=None))[0]
    PROVIDER.check_cancelling_closes_the_upstream(FaultServer([trickle(piece, piece, every=0.01)]))


def test_content_after_the_finish_reason_is_kept(client: httpx.Client) -> None:
    """Gemini with built-in tools (code execution, file search) sends ``finishReason: STOP``
    and then more content: a finish reason is no completion marker to what follows it, and
    the last one stands (only the end of the stream ends the answer)."""
    chunks = stream_chunks(Turn([[text("done")]]))
    late = stream_chunks(Turn([[text(" and more"), call("get_weather")]], finish="MAX_TOKENS"))
    outcome = streamed(client, stream_reply([*chunks, *late]))
    assert outcome.receipt is not None, outcome.error
    assert outcome.receipt.text == "done and more"
    assert outcome.receipt.tool_calls == [
        ToolCall(call_id="call_0", name="get_weather", arguments={})
    ]
    assert outcome.receipt.finish_reason == "MAX_TOKENS"


def test_create_adapter_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "RUNPORT_GEMINI_MODEL",
        "RUNPORT_GEMINI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(
        ValueError, match=r"GEMINI_API_KEY \(or GOOGLE_API_KEY\) and RUNPORT_GEMINI_MODEL"
    ):
        create_adapter()
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    monkeypatch.setenv("RUNPORT_GEMINI_MODEL", "models/gemini-test")
    monkeypatch.setenv("RUNPORT_GEMINI_BASE_URL", "http://127.0.0.1:9")
    PROVIDER.check_the_entry_point("gemini", create_adapter)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="model"):
        GeminiAdapter(model="a/../b")
    with pytest.raises(ValueError, match="api_key"):
        GeminiAdapter(model="m", api_key="bad\nkey")


SIGNED_TURN = Turn(
    chunks=[
        [
            {
                **call("get_weather", {"city": "Paris"}, call_id="fc-9"),
                "thoughtSignature": "CpUBc2ln",
            },
            call("get_weather", {"city": "Rome"}),
        ]
    ],
    finish="STOP",
)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
def test_a_calls_thought_signature_goes_back_with_it_in_the_next_turn(
    client: httpx.Client, stream: bool
) -> None:
    """Thinking models refuse a later turn whose function-call part lost its signature."""
    first = (
        stream_reply(stream_chunks(SIGNED_TURN))
        if stream
        else json_reply(response_body(SIGNED_TURN))
    )
    with serving(first, stream_reply(stream_chunks(Turn([[text("Sunny.")]])))) as server:
        adapter = adapter_for(server, client)
        question = [Message(role="user", content="Weather in Paris and Rome?")]
        request = make_request(messages=question, tools=[WEATHER])
        if stream:
            outcome = run_streamed(adapter, request)
            assert outcome.receipt is not None
            receipt = outcome.receipt
        else:
            receipt = adapter.execute(request)
        assert receipt.tool_calls is not None
        signed, unsigned = receipt.tool_calls
        assert signed.provider_metadata == {"gemini": {"thoughtSignature": "CpUBc2ln"}}
        assert unsigned.provider_metadata is None
        # The next turn, as a tool loop builds it from the receipt.
        history = [
            *question,
            Message(role="assistant", content="", tool_calls=receipt.tool_calls),
            Message(role="tool", content="sunny", tool_call_id=signed.call_id),
            Message(role="tool", content="rain", tool_call_id=unsigned.call_id),
        ]
        run_streamed(adapter, make_request(messages=history, tools=[WEATHER]))
        second = seen(server).body
    assert second["contents"][1] == {
        "role": "model",
        "parts": [
            {
                "functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "fc-9"},
                "thoughtSignature": "CpUBc2ln",
            },
            {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
        ],
    }
    assert second["contents"][2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "name": "get_weather",
                    "response": {"result": "sunny"},
                    "id": "fc-9",
                }
            },
            {"functionResponse": {"name": "get_weather", "response": {"result": "rain"}}},
        ],
    }


def test_a_thought_signature_that_is_not_a_string_is_invalid(client: httpx.Client) -> None:
    turn = Turn([[{**call("get_weather", {"city": "Paris"}), "thoughtSignature": 7}]])
    outcome = streamed(client, stream_reply(stream_chunks(turn)))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def _throttled(retry_delay: object) -> dict[str, object]:
    """A 429 body as the Gemini API writes it: the back-off is a ``RetryInfo`` among the
    details, after a ``QuotaFailure`` and a ``Help``, never a header."""
    details: list[dict[str, object]] = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_requests"}],
        },
        {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"url": "https://ai.dev"}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
    ]
    return {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED",
            "details": details,
        }
    }


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
def test_a_429_says_when_to_come_back_in_its_body_and_the_error_carries_it(
    client: httpx.Client, stream: bool
) -> None:
    reply = json_reply(_throttled("41.5s"), status="429 Too Many Requests")
    with serving(reply) as server:
        adapter = adapter_for(server, client)
        if stream:
            error = run_streamed(adapter, make_request()).error
        else:
            with pytest.raises(PortError) as raised:
                adapter.execute(make_request())
            error = raised.value
    assert error is not None
    assert error.code == ErrorCode.RUNTIME_RATE_LIMITED
    assert "You exceeded your current quota" in error.message
    assert error.retry_after_ms == 41_500


def test_a_retry_after_header_wins_over_the_body_s_retry_info(client: httpx.Client) -> None:
    reply = json_reply(
        _throttled("41s"), status="429 Too Many Requests", headers={"Retry-After": "3"}
    )
    with serving(reply) as server:
        error = run_streamed(adapter_for(server, client), make_request()).error
    assert error is not None
    assert error.retry_after_ms == 3000


@pytest.mark.parametrize(
    ("delay", "millis"),
    [
        ("41s", 41_000),
        ("0.5s", 500),
        ("1.000000001s", 1001),  # a nanosecond over a second: rounded up, never down
        ("0s", 0),
        ("999999999999s", 7 * 24 * 3600 * 1000),  # clamped to a week, as a header is
        ("41", None),
        ("-1s", None),
        ("1e3s", None),
        ("1.5 s", None),
        (41, None),
        (None, None),
    ],
)
def test_only_a_well_formed_retry_delay_is_a_hint(
    client: httpx.Client, delay: object, millis: int | None
) -> None:
    reply = json_reply(_throttled(delay), status="429 Too Many Requests")
    with serving(reply) as server:
        error = run_streamed(adapter_for(server, client), make_request()).error
    assert error is not None
    assert error.code == ErrorCode.RUNTIME_RATE_LIMITED
    assert error.retry_after_ms == millis
