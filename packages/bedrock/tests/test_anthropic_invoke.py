"""The Anthropic-on-Bedrock adapters (InvokeModel, InvokeModelWithResponseStream) against the
loopback Bedrock (``bedrock_emulation``): Anthropic's Messages body with Bedrock's
``anthropic_version`` and neither ``model`` nor ``stream``, the eventstream's ``chunk``
messages read as Anthropic's events, both credentials, ARN model ids, mid-stream exceptions
and broken chunks coded, streamed and unstreamed answers assembling alike, the entry point
reading the environment."""

from __future__ import annotations

import json
from base64 import b64encode
from importlib.metadata import entry_points
from typing import Any

import pytest
from botocore.credentials import Credentials

from runport.bedrock import (
    BEDROCK_ANTHROPIC_VERSION,
    AsyncBedrockAnthropicAdapter,
    BedrockAnthropicAdapter,
    SigV4Auth,
)
from runport.conformance.eventstream import event_message, exception_message
from runport.conformance.loopback import FaultServer, fixed_reply, serving
from runport.conformance.providers import (
    WEATHER,
    Outcome,
    make_request,
    run_streamed,
    run_streamed_async,
)
from runport.contracts import ErrorCode, Message

from .bedrock_emulation import ACCESS_KEY, REGION, SECRET_KEY, Bedrock

KEY = "ABSKQmVkcm9ja0FQSUtleS1ydW5wb3J0LWFudGhyb3BpYw"
MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"
ARN = "arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/a1b2c3d4e5"
CREDENTIALS = Credentials(ACCESS_KEY, SECRET_KEY, "session-token-for-runport-tests")


def chunk(event: dict[str, Any]) -> bytes:
    """One Anthropic stream event as InvokeModelWithResponseStream sends it: a ``chunk``
    message whose payload is ``{"bytes": base64(the event's JSON)}``."""
    return event_message("chunk", {"bytes": b64encode(json.dumps(event).encode()).decode()})


def answer(*texts: str, stop: str = "end_turn") -> list[bytes]:
    """A streamed Claude answer of ``texts`` in one text block, as Bedrock relays it (its
    invocation metrics on ``message_stop``)."""
    start = {
        "id": "msg_bdrk_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 1},
    }
    deltas = [
        chunk(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
        )
        for t in texts
    ]
    metrics = {
        "inputTokenCount": 11,
        "outputTokenCount": 4,
        "invocationLatency": 9,
        "firstByteLatency": 5,
    }
    return [
        chunk({"type": "message_start", "message": start}),
        chunk(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        ),
        *deltas,
        chunk({"type": "content_block_stop", "index": 0}),
        chunk(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 4},
            }
        ),
        chunk({"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics}),
    ]


def root(server: FaultServer) -> str:
    return server.base_url.removesuffix("/v1")


def keyed(server: FaultServer, flavour: str = "sync", model: str = MODEL) -> Outcome:
    keywords: dict[str, Any] = {"base_url": root(server), "model": model, "api_key": KEY}
    request = make_request(
        messages=[
            Message(role="system", content="Be brief."),
            Message(role="user", content="Say hello."),
        ],
        runtime_policy={"max_tokens": 64, "temperature": 0.5},
    )
    if flavour == "async":
        return run_streamed_async(AsyncBedrockAnthropicAdapter(**keywords), request)
    with BedrockAnthropicAdapter(**keywords) as adapter:
        return run_streamed(adapter, request)


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_streamed_call_posts_the_bedrock_body_and_reads_the_chunks(flavour: str) -> None:
    bedrock = Bedrock(api_key=KEY)
    with serving(bedrock.answering(answer("Hel", "lo"))) as server:
        outcome = keyed(server, flavour)
    assert outcome.error is None, outcome.error
    assert outcome.deltas == ["Hel", "lo"]
    receipt = outcome.receipt
    assert receipt is not None
    assert (receipt.finish, receipt.finish_reason) == ("stop", "end_turn")
    assert receipt.usage is not None
    assert (receipt.usage.input_tokens, receipt.usage.output_tokens) == (11, 4)
    assert (receipt.adapter.id, receipt.adapter.model) == ("bedrock-anthropic", MODEL)
    [seen] = bedrock.received
    model = "us.anthropic.claude-sonnet-4-20250514-v1%3A0"
    assert seen.target == f"/model/{model}/invoke-with-response-stream"
    assert seen.headers["accept"] == "application/vnd.amazon.eventstream"
    assert seen.body == {
        "anthropic_version": BEDROCK_ANTHROPIC_VERSION,
        "max_tokens": 64,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello."}]}],
        "temperature": 0.5,
    }


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_sigv4_over_an_arn_model_id_verifies_with_botocore(flavour: str) -> None:
    """The emulation recomputes the signature from the request as it arrived: the ARN's
    ``:`` and ``/`` percent-encoded into one path segment and signed as sent."""
    bedrock = Bedrock(credentials=CREDENTIALS)
    auth = SigV4Auth(REGION, credentials=CREDENTIALS)
    with serving(bedrock.answering(answer("signed"))) as server:
        keywords: dict[str, Any] = {"base_url": root(server), "model": ARN, "auth": auth}
        if flavour == "sync":
            with BedrockAnthropicAdapter(**keywords) as adapter:
                outcome = run_streamed(adapter, make_request())
        else:
            outcome = run_streamed_async(AsyncBedrockAnthropicAdapter(**keywords), make_request())
    assert outcome.error is None, outcome.error
    assert outcome.deltas == ["signed"]
    [seen] = bedrock.received
    assert seen.model == ARN
    assert seen.target == (
        "/model/arn%3Aaws%3Abedrock%3Aus-west-2%3A123456789012%3A"
        "application-inference-profile%2Fa1b2c3d4e5/invoke-with-response-stream"
    )


def test_a_forged_signature_and_a_wrong_key_are_refused_without_the_key() -> None:
    forged = SigV4Auth(
        REGION, credentials=Credentials(ACCESS_KEY, "not-the-secret", CREDENTIALS.token)
    )
    with (
        serving(Bedrock(credentials=CREDENTIALS).answering(answer("never"))) as server,
        BedrockAnthropicAdapter(base_url=root(server), model=ARN, auth=forged) as adapter,
    ):
        signed = run_streamed(adapter, make_request()).error
    wrong = "ABSKd3Jvbmcta2V5LWZvci1ydW5wb3J0LXRlc3Rz"
    with (
        serving(Bedrock(api_key=KEY).answering(answer("never"))) as server,
        BedrockAnthropicAdapter(base_url=root(server), model=MODEL, api_key=wrong) as adapter,
    ):
        keyed_error = run_streamed(adapter, make_request()).error
    assert signed is not None
    assert keyed_error is not None
    assert signed.code == keyed_error.code == ErrorCode.RUNTIME_PERMANENT
    assert "signature we calculated does not match" in signed.message
    assert wrong not in keyed_error.message


def test_one_credential_and_a_positive_max_tokens_are_required() -> None:
    auth = SigV4Auth(REGION, credentials=CREDENTIALS)
    with pytest.raises(ValueError, match="one of api_key"):
        BedrockAnthropicAdapter(base_url="http://127.0.0.1:9", model=MODEL, api_key=KEY, auth=auth)
    with pytest.raises(ValueError, match="max_tokens"):
        BedrockAnthropicAdapter(base_url="http://127.0.0.1:9", model=MODEL, max_tokens=0)


@pytest.mark.parametrize(
    ("exception", "code"),
    [
        ("throttlingException", ErrorCode.RUNTIME_RATE_LIMITED),
        ("modelStreamErrorException", ErrorCode.RUNTIME_UNAVAILABLE),
    ],
)
def test_an_exception_mid_stream_reaches_the_caller_coded(exception: str, code: str) -> None:
    messages = [*answer("Half", " an answer")[:4], exception_message(exception, "it stopped")]
    with serving(Bedrock(api_key=KEY).answering(messages)) as server:
        outcome = keyed(server)
    assert outcome.deltas == ["Half", " an answer"]  # delivered before the failure
    assert outcome.error is not None
    assert outcome.error.code == code
    assert outcome.error.message.endswith("it stopped")


@pytest.mark.parametrize(
    ("broken", "words"),
    [
        (event_message("chunk", {"bytes": "not base64!"}), "not base64"),
        (event_message("chunk", {"byte": "e30="}), "no bytes string"),
        (event_message("chunk", {"bytes": b64encode(b"[1]").decode()}), "chunk's stream event"),
    ],
)
def test_a_broken_chunk_after_deltas_is_an_invalid_response(broken: bytes, words: str) -> None:
    with serving(Bedrock(api_key=KEY).answering([*answer("Fine")[:3], broken])) as server:
        outcome = keyed(server)
    assert outcome.deltas == ["Fine"]
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert words in outcome.error.message


def test_a_stream_cut_before_message_stop_is_truncated() -> None:
    with serving(Bedrock(api_key=KEY).answering(answer("Cut")[:-1])) as server:
        outcome = keyed(server)
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED


TOOL_STREAM = [
    chunk(
        {
            "type": "message_start",
            "message": {"id": "msg_bdrk_02", "content": [], "usage": {"input_tokens": 30}},
        }
    ),
    chunk(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        }
    ),
    chunk(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Weather, so"},
        }
    ),
    chunk(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "c2lnbmVk"},
        }
    ),
    chunk({"type": "content_block_stop", "index": 0}),
    chunk(
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {},
            },
        }
    ),
    chunk(
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"city":'},
        }
    ),
    chunk(
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'},
        }
    ),
    chunk({"type": "content_block_stop", "index": 1}),
    chunk(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        }
    ),
    chunk({"type": "message_stop"}),
]
TOOL_BODY = {
    "id": "msg_bdrk_02",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-20250514",
    "content": [
        {"type": "thinking", "thinking": "Weather, so", "signature": "c2lnbmVk"},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 30, "output_tokens": 9},
}


def test_streamed_and_unstreamed_tool_calls_and_thinking_give_equal_receipts() -> None:
    bedrock = Bedrock(api_key=KEY)
    request = make_request(tools=[WEATHER])
    with (
        serving(bedrock.answering(TOOL_STREAM, body=TOOL_BODY)) as server,
        BedrockAnthropicAdapter(base_url=root(server), model=MODEL, api_key=KEY) as adapter,
    ):
        streamed = run_streamed(adapter, request)
        whole = adapter.execute(request)
    assert streamed.receipt is not None
    assert streamed.receipt == whole
    [call] = whole.tool_calls
    assert (call.call_id, call.name, call.arguments) == ("toolu_1", "get_weather", {"city": "Oslo"})
    assert whole.finish == "tool_calls"
    [part] = whole.reasoning or []
    assert part.text == "Weather, so"
    assert part.provider_metadata == {"anthropic": {"type": "thinking", "signature": "c2lnbmVk"}}
    unstreamed = bedrock.received[-1]
    assert unstreamed.target.endswith("/invoke")
    assert unstreamed.headers["accept"] == "application/json"
    assert unstreamed.body["tools"] == [
        {
            "name": "get_weather",
            "description": "The weather in a city.",
            "input_schema": WEATHER.parameters,
        }
    ]
    assert "model" not in unstreamed.body
    assert "stream" not in unstreamed.body


def test_the_entry_points_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    bedrock = Bedrock(api_key=KEY)
    with serving(bedrock.answering(answer("from", " env"))) as server:
        monkeypatch.setenv("RUNPORT_BEDROCK_ANTHROPIC_BASE_URL", root(server))
        monkeypatch.setenv("RUNPORT_BEDROCK_ANTHROPIC_MODEL", ARN)
        monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", KEY)
        made = {
            group: next(p for p in entry_points(group=group) if p.name == "bedrock-anthropic")
            for group in ("runport.adapters", "runport.async_adapters")
        }
        with made["runport.adapters"].load()() as adapter:
            assert isinstance(adapter, BedrockAnthropicAdapter)
            streamed = run_streamed(adapter, make_request())
        looped = made["runport.async_adapters"].load()()
        assert isinstance(looped, AsyncBedrockAnthropicAdapter)
        looped_outcome = run_streamed_async(looped, make_request())
    assert streamed.deltas == looped_outcome.deltas == ["from", " env"]
    assert [seen.model for seen in bedrock.received] == [ARN, ARN]


def test_a_424_is_retryable_here_too() -> None:
    """Both Bedrock codecs share ``BedrockCodec.error_code``: InvokeModel's 424
    (ModelErrorException) is unavailable, its ``Retry-After`` kept."""
    body = b'{"message":"Received server error (500) from model.","originalStatusCode":500}'
    headers = {"Content-Type": "application/json", "Retry-After": "3"}
    with serving(fixed_reply("424 Failed Dependency", headers, body)) as server:
        outcome = keyed(server)
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert outcome.error.retry_after_ms == 3000.0
