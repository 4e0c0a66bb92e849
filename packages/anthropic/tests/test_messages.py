"""``AnthropicMessagesAdapter`` over real HTTP on 127.0.0.1: what it sends, what it makes of
the stream and of a whole message, and how each fault ends."""

from __future__ import annotations

import json

import httpx
import pytest

from runport.anthropic import (
    ANSWER_TOOL,
    ANTHROPIC_VERSION,
    AnthropicMessagesAdapter,
    AsyncAnthropicMessagesAdapter,
    create_adapter,
)
from runport.conformance.loopback import (
    FaultServer,
    Handler,
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
from runport.contracts import ErrorCode, Message, ToolCall, ToolCallDelta, Usage
from runport.ports import PortError

from .anthropic_wire import (
    Text,
    Thinking,
    ToolUse,
    Turn,
    error_body,
    error_event,
    event,
    message_body,
    stream_events,
)

API_KEY = "sk-ant-api03-SECRET-7f3a2c1b"

TOOL_TURN = Turn(
    blocks=[
        Thinking(["Let me ", "think."]),
        Text(["The weather ", "is "]),
        ToolUse("srvtoolu_1", "web_search", ['{"query":', '"x"}'], kind="server_tool_use"),
        ToolUse("toolu_01", "get_weather", ['{"ci', 'ty": "Par', 'is"}']),
        ToolUse("mcptoolu_1", "fetch", ['{"url": "x"}'], kind="mcp_tool_use"),
        ToolUse("", "get_weather", []),
    ],
    stop_reason="tool_use",
    input_tokens=40,
    start_output_tokens=1,
    output_tokens=33,
    cache_read_tokens=1000,
)


PROVIDER = Provider(AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter, "claude-test", API_KEY)
adapter_for = PROVIDER.adapter_for
streamed = PROVIDER.streamed


def generating(text: str, *, times: int = 1, every: float = 0.01) -> Handler:
    """A message whose one text block goes on growing until the client goes away."""
    delta = {"type": "text_delta", "text": text}
    piece = event(
        "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    )
    return trickle(b"".join(stream_events(Turn([Text([])]), stop=False)[:2]), piece * times, every)


def test_a_streamed_turn_is_text_and_tool_use_blocks_only(client: httpx.Client) -> None:
    with serving(stream_reply(stream_events(TOOL_TURN))) as server:
        outcome = run_streamed(adapter_for(server, client), make_request(tools=[WEATHER]))
    receipt = outcome.receipt
    assert receipt is not None
    assert receipt.text == "The weather is "  # thinking never reaches the answer
    assert receipt.tool_calls == [
        ToolCall(call_id="toolu_01", name="get_weather", arguments={"city": "Paris"}),
        # no upstream id: call_<n> counting calls, not blocks; no arguments: {}
        ToolCall(call_id="call_1", name="get_weather", arguments={}),
    ]
    assert [d.arguments_fragment for d in outcome.tool_deltas if d.index == 1] == ["", "{}"]
    assert receipt.finish_reason == "tool_use"
    # message_delta's cumulative usage overrides message_start's; cache reads are not added.
    assert receipt.usage == Usage(input_tokens=40, output_tokens=33)


def test_the_request_carries_the_messages_api_shape(client: httpx.Client) -> None:
    with serving(stream_reply(stream_events(Turn([Text(["ok"])])))) as server:
        history = [
            Message(role="system", content="Be brief."),
            Message(role="user", content="Weather in Paris and Rome?"),
            Message(
                role="assistant",
                content="Checking.",
                tool_calls=[
                    ToolCall(call_id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
                    ToolCall(call_id="toolu_2", name="get_weather", arguments={"city": "Rome"}),
                ],
            ),
            Message(role="tool", content="sunny", tool_call_id="toolu_1"),
            Message(role="tool", content="rain", tool_call_id="toolu_2"),
        ]
        request = make_request(
            messages=history, tools=[WEATHER], runtime_policy={"temperature": 0.2, "stop": "END"}
        )
        run_streamed(adapter_for(server, client, max_tokens=99), request)
        request_seen = seen(server)
    assert (request_seen.method, request_seen.target) == ("POST", "/v1/messages")
    assert request_seen.headers["x-api-key"] == API_KEY
    assert request_seen.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert "authorization" not in request_seen.headers
    body = request_seen.body
    assert body["system"] == "Be brief."
    assert body["max_tokens"] == 99
    assert body["stream"] is True
    assert body["temperature"] == 0.2
    assert body["stop_sequences"] == ["END"]
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "The weather in a city.",
            "input_schema": WEATHER.parameters,
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "get_weather",
                    "input": {"city": "Rome"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "rain"},
            ],
        },
    ]


def test_a_structured_answer_is_the_forced_tool_input_streamed_as_text(
    client: httpx.Client,
) -> None:
    turn = Turn(
        [ToolUse("toolu_9", ANSWER_TOOL, ['{"ans', 'wer": 4', "2}"])], stop_reason="tool_use"
    )
    with serving(stream_reply(stream_events(turn)), json_reply(message_body(turn))) as server:
        adapter = adapter_for(server, client)
        outcome = run_streamed(adapter, make_request(OBJECT_SCHEMA))
        whole = adapter.execute(make_request(OBJECT_SCHEMA))
        body = seen(server, 0).body
    assert body["tool_choice"] == {"type": "tool", "name": ANSWER_TOOL}
    assert body["tools"][-1]["input_schema"] == OBJECT_SCHEMA
    receipt = outcome.receipt
    assert receipt is not None
    assert outcome.text == '{"answer":42}'  # whitespace outside strings dropped (ADR 0025)
    assert whole.text == outcome.text
    assert receipt.output == {"answer": 42}
    assert receipt.output_schema_valid is True
    assert receipt.tool_calls is None
    assert whole.output == receipt.output
    assert whole.output_fingerprint == receipt.output_fingerprint


def test_a_contract_tool_may_not_take_the_answer_tools_name(client: httpx.Client) -> None:
    with serving(stream_reply([])) as server:
        clash = WEATHER.model_copy(update={"name": ANSWER_TOOL})
        with pytest.raises(PortError) as raised:
            adapter_for(server, client).execute(make_request(OBJECT_SCHEMA, tools=[clash]))
    assert raised.value.code == ErrorCode.DATA_INVALID


def test_execute_and_execute_streaming_agree(client: httpx.Client) -> None:
    with serving(
        stream_reply(stream_events(TOOL_TURN)), json_reply(message_body(TOOL_TURN))
    ) as server:
        adapter = adapter_for(server, client)
        streamed = run_streamed(adapter, make_request(tools=[WEATHER])).receipt
        whole = adapter.execute(make_request(tools=[WEATHER]))
        assert "stream" not in seen(server).body
    assert whole == streamed


def test_the_async_twin_gives_the_same_receipt(client: httpx.Client) -> None:
    PROVIDER.check_the_async_twin(client, stream_reply(stream_events(TOOL_TURN)))


def test_a_stream_without_message_stop_is_truncated(client: httpx.Client) -> None:
    outcome = streamed(
        client, stream_reply(stream_events(Turn([Text(["half an ", "answer"])]), stop=False))
    )
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED
    assert "message_stop" in outcome.error.message
    assert outcome.text == "half an answer"  # what was sent stays sent; the turn still fails


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("overloaded_error", ErrorCode.RUNTIME_UNAVAILABLE),
        ("rate_limit_error", ErrorCode.RUNTIME_RATE_LIMITED),
        ("api_error", ErrorCode.RUNTIME_UNAVAILABLE),
        ("invalid_request_error", ErrorCode.RUNTIME_PERMANENT),
        ("authentication_error", ErrorCode.RUNTIME_PERMANENT),
    ],
)
def test_error_frames_map_by_type(client: httpx.Client, kind: str, code: ErrorCode) -> None:
    events = stream_events(Turn([Text(["partial"])]), stop=False)[:4]
    leaked = f"Overloaded; your key {API_KEY} was fine"
    outcome = streamed(client, stream_reply([*events, error_event(kind, leaked)]))
    assert outcome.error is not None
    assert outcome.error.code == code
    assert kind in outcome.error.message
    assert "Overloaded" in outcome.error.message
    assert API_KEY not in outcome.error.message


@pytest.mark.parametrize(
    ("status", "kind", "code"),
    [
        ("429 Too Many Requests", "rate_limit_error", ErrorCode.RUNTIME_RATE_LIMITED),
        ("529 Overloaded", "overloaded_error", ErrorCode.RUNTIME_UNAVAILABLE),
        ("500 Internal Server Error", "api_error", ErrorCode.RUNTIME_UNAVAILABLE),
        ("400 Bad Request", "invalid_request_error", ErrorCode.RUNTIME_PERMANENT),
    ],
)
def test_error_statuses_keep_the_providers_message_and_retry_after(
    client: httpx.Client, status: str, kind: str, code: ErrorCode
) -> None:
    message = "max_tokens: must be at most 8192"
    PROVIDER.check_an_error_status(client, status, error_body(kind, message), code, message)


def test_an_oversize_stream_fails_and_closes(client: httpx.Client) -> None:
    PROVIDER.check_an_oversize_stream(client, generating("x" * 200, times=10, every=0.001))


def test_a_caller_stop_closes_the_response_and_the_adapter_stays_usable(
    client: httpx.Client,
) -> None:
    server = FaultServer([generating("tick"), stream_reply(stream_events(Turn([Text(["ok"])])))])
    PROVIDER.check_a_caller_stop(client, server, after=3)


def test_cancelling_the_async_call_closes_the_upstream() -> None:
    PROVIDER.check_cancelling_closes_the_upstream(FaultServer([generating("tick")]))


def test_a_message_body_that_is_an_error_object_is_mapped(client: httpx.Client) -> None:
    body = json.loads(error_body("overloaded_error", "Overloaded"))
    with serving(json_reply(body)) as server, pytest.raises(PortError) as raised:
        adapter_for(server, client).execute(make_request())
    assert raised.value.code == ErrorCode.RUNTIME_UNAVAILABLE


def test_malformed_events_are_invalid_responses(client: httpx.Client) -> None:
    start = stream_events(Turn([Text([])]), stop=False)[:1]
    bad = event("content_block_delta", {"type": "content_block_delta", "index": 5, "delta": {}})
    outcome = streamed(client, stream_reply([*start, bad]))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_tool_deltas_announce_the_call_before_its_arguments(client: httpx.Client) -> None:
    with serving(stream_reply(stream_events(TOOL_TURN))) as server:
        outcome = run_streamed(adapter_for(server, client), make_request(tools=[WEATHER]))
    first = outcome.tool_deltas[0]
    assert isinstance(first, ToolCallDelta)
    assert (first.index, first.call_id, first.arguments_fragment) == (0, "toolu_01", "")


def test_create_adapter_names_the_missing_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "RUNPORT_ANTHROPIC_MODEL", "RUNPORT_ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY and RUNPORT_ANTHROPIC_MODEL"):
        create_adapter()
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    with pytest.raises(ValueError, match="RUNPORT_ANTHROPIC_MODEL") as raised:
        create_adapter()
    assert API_KEY not in str(raised.value)
    monkeypatch.setenv("RUNPORT_ANTHROPIC_MODEL", "claude-test")
    monkeypatch.setenv("RUNPORT_ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    PROVIDER.check_the_entry_point("anthropic", create_adapter)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="model"):
        AnthropicMessagesAdapter(model="")
    with pytest.raises(ValueError, match="max_tokens"):
        AnthropicMessagesAdapter(model="m", max_tokens=0)
    with pytest.raises(ValueError, match="api_key"):
        AnthropicMessagesAdapter(model="m", api_key="bad\nkey")
