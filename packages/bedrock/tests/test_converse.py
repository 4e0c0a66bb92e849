"""The Converse adapters against the loopback Bedrock (``bedrock_emulation``): the URL and
body Bedrock wants, both credentials (a Bedrock API key; SigV4, verified by recomputing the
signature with botocore), ARN model ids, mid-stream exceptions and broken frames coded, and
streamed and unstreamed answers assembling alike."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from botocore.credentials import Credentials

from runport.bedrock import (
    AsyncBedrockConverseAdapter,
    BedrockConverseAdapter,
    SigV4Auth,
    create_adapter,
    create_async_adapter,
    region_url,
)
from runport.conformance import PROTOCOLS
from runport.conformance.eventstream import (
    encode_header,
    encode_message,
    event_message,
    exception_message,
)
from runport.conformance.loopback import FaultServer, fixed_reply, serving
from runport.conformance.providers import (
    WEATHER,
    Outcome,
    make_request,
    run_streamed,
    run_streamed_async,
)
from runport.contracts import ErrorCode, Message, ReasoningPart, TextPart, ToolCall
from runport.ports import PortError

from .bedrock_emulation import ACCESS_KEY, REGION, SECRET_KEY, Bedrock

KEY = "ABSKQmVkcm9ja0FQSUtleS1ydW5wb3J0LWxvb3BiYWNr"
MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"
ARN = "arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/a1b2c3d4e5"
USAGE = {"inputTokens": 12, "outputTokens": 5, "totalTokens": 17, "cacheReadInputTokens": 4}


def root(server: FaultServer) -> str:
    """The loopback server's address, with no path: Bedrock's URLs start at the host."""
    return server.base_url.removesuffix("/v1")


def answer(*texts: str, stop: str = "end_turn") -> list[bytes]:
    """A ConverseStream answer of ``texts`` in one text block."""
    deltas = [
        event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}})
        for text in texts
    ]
    return [
        event_message("messageStart", {"role": "assistant"}),
        *deltas,
        event_message("contentBlockStop", {"contentBlockIndex": 0}),
        event_message("messageStop", {"stopReason": stop}),
        event_message("metadata", {"usage": USAGE, "metrics": {"latencyMs": 9}}),
    ]


@pytest.fixture
def keyed() -> Iterator[tuple[Bedrock, FaultServer]]:
    bedrock = Bedrock(api_key=KEY)
    with serving(bedrock.answering(answer("Hel", "lo"))) as server:
        yield bedrock, server


def test_a_streamed_call_with_an_api_key(keyed: tuple[Bedrock, FaultServer]) -> None:
    bedrock, server = keyed
    request = make_request(
        messages=[
            Message(role="system", content="Be brief."),
            Message(role="user", content="Say hello."),
        ],
        runtime_policy={"max_tokens": 64, "temperature": 0.5, "stop": "END"},
    )
    with BedrockConverseAdapter(base_url=root(server), model=MODEL, api_key=KEY) as adapter:
        outcome = run_streamed(adapter, request)
    assert outcome.error is None
    assert outcome.deltas == ["Hel", "lo"]
    receipt = outcome.receipt
    assert receipt is not None
    assert receipt.finish_reason == "end_turn"
    assert receipt.finish == "stop"
    assert receipt.usage is not None
    assert (receipt.usage.input_tokens, receipt.usage.output_tokens) == (16, 5)
    [seen] = bedrock.received
    assert seen.target == "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
    assert seen.model == MODEL
    assert seen.headers["accept"] == "application/vnd.amazon.eventstream"
    assert seen.body == {
        "messages": [{"role": "user", "content": [{"text": "Say hello."}]}],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 64, "temperature": 0.5, "stopSequences": ["END"]},
    }


def test_a_wrong_api_key_is_refused_and_not_shown(keyed: tuple[Bedrock, FaultServer]) -> None:
    _, server = keyed
    wrong = "ABSKd3Jvbmcta2V5LWZvci1ydW5wb3J0LXRlc3Rz"
    with BedrockConverseAdapter(base_url=root(server), model=MODEL, api_key=wrong) as adapter:
        outcome = run_streamed(adapter, make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_PERMANENT
    assert wrong not in outcome.error.message
    assert "Invalid API Key format" in outcome.error.message


CREDENTIALS = Credentials(ACCESS_KEY, SECRET_KEY, "session-token-for-runport-tests")


@pytest.mark.parametrize("model", [MODEL, ARN])
def test_sigv4_signatures_verify_with_botocore(model: str) -> None:
    """The emulation recomputes the signature from the request as it arrived: the ARN's
    percent-escapes in the path, the body, the session token all signed."""
    bedrock = Bedrock(credentials=CREDENTIALS)
    auth = SigV4Auth(REGION, credentials=CREDENTIALS)
    with (
        serving(bedrock.answering(answer("signed"))) as server,
        BedrockConverseAdapter(base_url=root(server), model=model, auth=auth) as adapter,
    ):
        outcome = run_streamed(adapter, make_request())
    assert outcome.error is None, outcome.error
    assert outcome.deltas == ["signed"]
    [seen] = bedrock.received
    assert seen.model == model
    assert "/" not in seen.target.removeprefix("/model/").removesuffix("/converse-stream")


def test_a_signature_made_with_another_secret_is_refused() -> None:
    bedrock = Bedrock(credentials=CREDENTIALS)
    forged = Credentials(ACCESS_KEY, "not-the-secret-key", CREDENTIALS.token)
    with (
        serving(bedrock.answering(answer("never"))) as server,
        BedrockConverseAdapter(
            base_url=root(server), model=ARN, auth=SigV4Auth(REGION, credentials=forged)
        ) as adapter,
    ):
        outcome = run_streamed(adapter, make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_PERMANENT
    assert "signature we calculated does not match" in outcome.error.message


def test_the_async_twin_signs_alike() -> None:
    bedrock = Bedrock(credentials=CREDENTIALS)
    auth = SigV4Auth(REGION, credentials=CREDENTIALS)
    with serving(bedrock.answering(answer("a", "sync"))) as server:
        adapter = AsyncBedrockConverseAdapter(base_url=root(server), model=ARN, auth=auth)
        outcome = run_streamed_async(adapter, make_request())
    assert outcome.error is None, outcome.error
    assert outcome.deltas == ["a", "sync"]


@pytest.mark.parametrize(
    ("exception", "code"),
    [
        ("throttlingException", ErrorCode.RUNTIME_RATE_LIMITED),
        ("modelStreamErrorException", ErrorCode.RUNTIME_UNAVAILABLE),
        ("validationException", ErrorCode.RUNTIME_PERMANENT),
    ],
)
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_an_exception_mid_stream_reaches_the_caller_coded(
    exception: str, code: str, flavour: str
) -> None:
    messages = [*answer("Half", " an answer")[:3], exception_message(exception, "it stopped")]
    with serving(Bedrock(api_key=KEY).answering(messages)) as server:
        keywords: dict[str, Any] = {"base_url": root(server), "model": MODEL, "api_key": KEY}
        if flavour == "sync":
            with BedrockConverseAdapter(**keywords) as adapter:
                outcome = run_streamed(adapter, make_request())
        else:
            outcome = run_streamed_async(AsyncBedrockConverseAdapter(**keywords), make_request())
    assert outcome.deltas == ["Half", " an answer"]  # delivered before the failure
    assert outcome.error is not None
    assert outcome.error.code == code
    assert outcome.error.message.endswith("it stopped")


@pytest.mark.parametrize("garbage", ["message-crc", "prelude-crc", "cut-prelude"])
def test_a_broken_frame_after_deltas_is_an_invalid_response(garbage: str) -> None:
    protocol = type(PROTOCOLS["bedrock-converse"])(garbage)  # type: ignore[call-arg]
    broken = protocol.garbage_frame(_context())
    with serving(Bedrock(api_key=KEY).answering([*answer("Fine")[:2], broken])) as server:
        outcome = _streamed(server)
    assert outcome.deltas == ["Fine"]
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def _streamed(server: FaultServer) -> Outcome:
    with BedrockConverseAdapter(base_url=root(server), model=MODEL, api_key=KEY) as adapter:
        return run_streamed(adapter, make_request())


def _context() -> Any:
    from runport.conformance import WireContext

    return WireContext(model=MODEL, marker="marker")


def test_a_stream_cut_before_message_stop_is_truncated() -> None:
    with serving(Bedrock(api_key=KEY).answering(answer("Cut")[:3])) as server:
        outcome = _streamed(server)
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED


TOOL_STREAM = [
    event_message("messageStart", {"role": "assistant"}),
    event_message(
        "contentBlockDelta",
        {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Weather, so"}}},
    ),
    event_message(
        "contentBlockDelta",
        {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "c2lnbmVk"}}},
    ),
    event_message("contentBlockStop", {"contentBlockIndex": 0}),
    event_message(
        "contentBlockStart",
        {
            "contentBlockIndex": 1,
            "start": {"toolUse": {"toolUseId": "tu_1", "name": "get_weather"}},
        },
    ),
    event_message(
        "contentBlockDelta",
        {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"city":'}}},
    ),
    event_message(
        "contentBlockDelta",
        {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '"Oslo"}'}}},
    ),
    event_message("contentBlockStop", {"contentBlockIndex": 1}),
    event_message("messageStop", {"stopReason": "tool_use"}),
    event_message("metadata", {"usage": {"inputTokens": 30, "outputTokens": 9}}),
]
ASSISTANT_BLOCKS = [
    {"reasoningContent": {"reasoningText": {"text": "Weather, so", "signature": "c2lnbmVk"}}},
    {"toolUse": {"toolUseId": "tu_1", "name": "get_weather", "input": {"city": "Oslo"}}},
]
"""The assistant turn as Converse answers it, and as a tool run's next request sends it back."""
TOOL_BODY = {
    "output": {
        "message": {
            "role": "assistant",
            "content": ASSISTANT_BLOCKS,
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 30, "outputTokens": 9, "totalTokens": 39},
    "metrics": {"latencyMs": 5},
}


def test_streamed_and_unstreamed_tool_calls_and_reasoning_give_equal_receipts() -> None:
    bedrock = Bedrock(api_key=KEY)
    request = make_request(tools=[WEATHER])
    with (
        serving(bedrock.answering(TOOL_STREAM, body=TOOL_BODY)) as server,
        BedrockConverseAdapter(base_url=root(server), model=MODEL, api_key=KEY) as adapter,
    ):
        streamed = run_streamed(adapter, request)
        whole = adapter.execute(request)
    assert streamed.receipt is not None
    assert streamed.receipt == whole
    [call] = whole.tool_calls
    assert (call.call_id, call.name, call.arguments) == ("tu_1", "get_weather", {"city": "Oslo"})
    assert whole.finish == "tool_calls"
    [part] = whole.reasoning or []
    assert part.text == "Weather, so"
    assert part.provider_metadata == {"bedrock": {"signature": "c2lnbmVk"}}
    assert bedrock.received[-1].target.endswith("/converse")
    assert bedrock.received[0].body["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "description": "The weather in a city.",
                    "inputSchema": {"json": WEATHER.parameters},
                }
            }
        ]
    }


def test_a_tool_run_sends_the_calls_results_and_signed_reasoning_back() -> None:
    bedrock = Bedrock(api_key=KEY)
    history = [
        Message(role="user", content="Weather in Oslo?"),
        Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(call_id="tu_1", name="get_weather", arguments={"city": "Oslo"})],
            reasoning=[
                ReasoningPart(
                    text="Weather, so", provider_metadata={"bedrock": {"signature": "c2lnbmVk"}}
                ),
                ReasoningPart(text="not mine", provider_metadata={"anthropic": {"x": 1}}),
            ],
        ),
        Message(role="tool", content="-3 °C", tool_call_id="tu_1"),
    ]
    with (
        serving(bedrock.answering(answer("Cold."))) as server,
        BedrockConverseAdapter(base_url=root(server), model=MODEL, api_key=KEY) as adapter,
    ):
        assert run_streamed(adapter, make_request(messages=history)).error is None
    assert bedrock.received[0].body["messages"] == [
        {"role": "user", "content": [{"text": "Weather in Oslo?"}]},
        {
            "role": "assistant",
            "content": ASSISTANT_BLOCKS,
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "tu_1", "content": [{"text": "-3 °C"}]}}],
        },
    ]


def test_cache_breakpoints_are_cache_points_after_the_marked_part_or_message() -> None:
    # ADR 0051: a marked part or message is followed by a cachePoint block (ttl where given);
    # a tool result holds none, so a breakpoint among its parts follows the whole result.
    bedrock = Bedrock(api_key=KEY)
    history = [
        Message(
            role="system",
            content=[
                TextPart(text="A long manual.", cache=True, cache_ttl="1h"),
                TextPart(text=" Today is Monday."),
            ],
        ),
        Message(role="system", content="Be brief.", cache=True),
        Message(role="user", content=[TextPart(text="A report.", cache=True), TextPart(text="Q?")]),
        Message(
            role="assistant",
            content="Checking.",
            tool_calls=[ToolCall(call_id="tu_1", name="get_weather", arguments={})],
            cache=True,
        ),
        Message(
            role="tool",
            content=[TextPart(text="-3 °C", cache=True), TextPart(text=" windy")],
            tool_call_id="tu_1",
        ),
    ]
    with (
        serving(bedrock.answering(answer("Cold."))) as server,
        BedrockConverseAdapter(base_url=root(server), model=MODEL, api_key=KEY) as adapter,
    ):
        assert run_streamed(adapter, make_request(messages=history)).error is None
    point = {"cachePoint": {"type": "default"}}
    body = bedrock.received[0].body
    assert body["system"] == [
        {"text": "A long manual."},
        {"cachePoint": {"type": "default", "ttl": "1h"}},
        {"text": " Today is Monday."},
        {"text": "Be brief."},
        point,
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "A report."}, point, {"text": "Q?"}]},
        {
            "role": "assistant",
            "content": [
                {"text": "Checking."},
                {"toolUse": {"toolUseId": "tu_1", "name": "get_weather", "input": {}}},
                point,
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "tu_1", "content": [{"text": "-3 °C windy"}]}},
                point,
            ],
        },
    ]


def _with_usage(usage: dict[str, Any]) -> tuple[list[bytes], dict[str, Any]]:
    """A streamed and an unstreamed answer ``Hi`` with ``usage``."""
    streamed = [*answer("Hi")[:-1], event_message("metadata", {"usage": usage, "metrics": {}})]
    body = {
        "output": {"message": {"role": "assistant", "content": [{"text": "Hi"}]}},
        "stopReason": "end_turn",
        "usage": usage,
        "metrics": {"latencyMs": 5},
    }
    return streamed, body


def test_cache_counts_are_parts_of_the_input_streamed_and_not() -> None:
    # Converse's inputTokens leaves the cached tokens out; the receipt counts them in (ADR 0051)
    usage = {**USAGE, "cacheWriteInputTokens": 8}
    bedrock = Bedrock(api_key=KEY)
    streamed, body = _with_usage(usage)
    with (
        serving(bedrock.answering(streamed, body=body)) as server,
        BedrockConverseAdapter(base_url=root(server), model=MODEL, api_key=KEY) as adapter,
    ):
        outcome = run_streamed(adapter, make_request())
        whole = adapter.execute(make_request())
    assert outcome.receipt == whole
    assert whole.usage is not None
    assert (whole.usage.input_tokens, whole.usage.output_tokens) == (24, 5)
    assert (whole.usage.cache_read_tokens, whole.usage.cache_write_tokens) == (4, 8)


@pytest.mark.parametrize(
    "bad",
    [
        {"cacheReadInputTokens": -1},
        {"cacheReadInputTokens": 1.5},
        {"cacheWriteInputTokens": "8"},
        {"cacheWriteInputTokens": True},
    ],
)
def test_bad_cache_counts_are_invalid_responses_streamed_and_not(bad: dict[str, Any]) -> None:
    bedrock = Bedrock(api_key=KEY)
    streamed, body = _with_usage({**USAGE, **bad})
    with (
        serving(bedrock.answering(streamed, body=body)) as server,
        BedrockConverseAdapter(base_url=root(server), model=MODEL, api_key=KEY) as adapter,
    ):
        outcome = run_streamed(adapter, make_request())
        with pytest.raises(PortError) as refused:
            adapter.execute(make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert refused.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def isolate_from_the_machine_s_aws_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """No credential source of the machine's own is consulted (no network, no files)."""
    for name in (
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/runport-test")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/runport-test")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_the_entry_points_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    bedrock = Bedrock(credentials=Credentials(ACCESS_KEY, SECRET_KEY))
    with serving(bedrock.answering(answer("from env"))) as server:
        monkeypatch.setenv("RUNPORT_BEDROCK_MODEL", ARN)
        monkeypatch.setenv("RUNPORT_BEDROCK_BASE_URL", root(server))
        monkeypatch.setenv("AWS_REGION", REGION)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
        isolate_from_the_machine_s_aws_chain(monkeypatch)
        with create_adapter() as adapter:
            outcome = run_streamed(adapter, make_request())
        assert outcome.deltas == ["from env"], outcome.error
        assert isinstance(create_async_adapter(), AsyncBedrockConverseAdapter)
    monkeypatch.delenv("RUNPORT_BEDROCK_BASE_URL")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", KEY)
    with create_adapter(region="eu-central-1") as adapter:
        url = region_url("eu-central-1")
        assert repr(adapter) == f"BedrockConverseAdapter(url={url!r}, model={ARN!r})"
        assert KEY not in repr(adapter)


def test_an_api_key_and_auth_together_are_refused() -> None:
    with pytest.raises(ValueError, match="one of api_key"):
        BedrockConverseAdapter(
            model=MODEL, api_key=KEY, auth=SigV4Auth(REGION, credentials=CREDENTIALS)
        )
    with pytest.raises(TypeError, match=r"httpx\.Auth"):
        BedrockConverseAdapter(model=MODEL, auth=("user", "pass"))  # type: ignore[arg-type]


def test_auth_signs_on_a_client_passed_in_too() -> None:
    bedrock = Bedrock(credentials=CREDENTIALS)
    auth = SigV4Auth(REGION, credentials=CREDENTIALS)
    with (
        serving(bedrock.answering(answer("pooled"))) as server,
        httpx.Client() as client,
    ):
        adapter = BedrockConverseAdapter(
            base_url=root(server), model=MODEL, auth=auth, http_client=client
        )
        assert run_streamed(adapter, make_request()).deltas == ["pooled"]


def test_an_error_response_s_message_is_read(keyed: tuple[Bedrock, FaultServer]) -> None:
    _, server = keyed
    adapter = BedrockConverseAdapter(base_url=root(server), model=MODEL, api_key="wrong-key")
    with adapter, pytest.raises(PortError) as caught:
        adapter.execute(make_request())
    assert caught.value.code == ErrorCode.RUNTIME_PERMANENT
    assert "HTTP 403" in caught.value.message


def test_async_unstreamed_matches() -> None:
    bedrock = Bedrock(api_key=KEY)
    with serving(bedrock.answering([], body=TOOL_BODY)) as server:
        adapter = AsyncBedrockConverseAdapter(base_url=root(server), model=MODEL, api_key=KEY)

        async def main() -> Any:
            try:
                return await adapter.execute(make_request(tools=[WEATHER]))
            finally:
                await adapter.aclose()

        receipt = asyncio.run(main())
    assert receipt.tool_calls[0].arguments == {"city": "Oslo"}


def test_no_credentials_in_the_chain_is_said_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    isolate_from_the_machine_s_aws_chain(monkeypatch)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    with pytest.raises(ValueError, match="no AWS credentials found"):
        SigV4Auth(REGION)


def test_a_message_past_max_response_bytes_is_refused_from_its_prelude() -> None:
    """A 2 MB message against a 64 KiB bound: refused when its prelude arrives, coded."""
    big = event_message(
        "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x" * 2_000_000}}
    )
    with serving(Bedrock(api_key=KEY).answering([*answer("Start")[:2], big])) as server:
        adapter = BedrockConverseAdapter(
            base_url=root(server), model=MODEL, api_key=KEY, max_response_bytes=65536
        )
        with adapter:
            outcome = run_streamed(adapter, make_request())
    assert outcome.deltas == ["Start"]
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE


def test_a_message_type_that_is_no_string_is_an_invalid_response() -> None:
    odd = encode_message([encode_header(":message-type", "true")], b"{}")
    with serving(Bedrock(api_key=KEY).answering([*answer("Fine")[:2], odd])) as server:
        outcome = _streamed(server)
    assert outcome.deltas == ["Fine"]
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE


MODEL_ERROR = (
    b'{"message":"Received server error (500) from model. See the model logs.",'
    b'"originalStatusCode":500,"resourceName":"arn:aws:bedrock:us-west-2::foundation-model/x"}'
)
"""A ModelErrorException body as Bedrock writes one (``message``, ``originalStatusCode``,
``resourceName``)."""


@pytest.mark.parametrize(
    ("status", "code", "after"),
    [
        ("424 Failed Dependency", ErrorCode.RUNTIME_UNAVAILABLE, 2000.0),
        ("400 Bad Request", ErrorCode.RUNTIME_PERMANENT, None),
    ],
)
def test_a_424_model_error_is_retryable_and_keeps_its_hint(
    status: str, code: str, after: float | None
) -> None:
    """Bedrock's 424 (ModelErrorException) is worth another try: the codec's ``error_code``
    reads it as unavailable, streamed, unstreamed and on the event loop alike, where the
    status alone reads permanent; another 4xx stays permanent."""
    headers = {
        "Content-Type": "application/json",
        "x-amzn-ErrorType": "ModelErrorException",
        "Retry-After": "2",
    }
    with serving(fixed_reply(status, headers, MODEL_ERROR)) as server:
        keywords: dict[str, Any] = {"base_url": root(server), "model": MODEL, "api_key": KEY}
        with BedrockConverseAdapter(**keywords) as adapter:
            streamed = run_streamed(adapter, make_request()).error
            with pytest.raises(PortError) as whole:
                adapter.execute(make_request())
        looped = run_streamed_async(AsyncBedrockConverseAdapter(**keywords), make_request()).error
    for error in (streamed, whole.value, looped):
        assert error is not None
        assert error.code == code
        assert error.retry_after_ms == after
        assert "Received server error (500) from model" in error.message
