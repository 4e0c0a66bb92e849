"""The Responses API adapters over real HTTP on 127.0.0.1: the request a stateless turn sends,
each output item read as the streaming law asks (text, reasoning summaries with their
encrypted content, function calls, built-in tools that are not calls), how a turn ends, and
streamed and unstreamed receipts agreeing (docs/providers-openai-responses.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import FaultServer, json_reply, seen, serving, stream_reply
from runport.conformance.providers import (
    OBJECT_SCHEMA,
    WEATHER,
    make_request,
    run_streamed,
    run_streamed_async,
)
from runport.contracts import (
    Delta,
    ErrorCode,
    ReasoningDelta,
    ReasoningPart,
    ServerToolCall,
    ServerToolResult,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.contracts import (
    Message as WireMessage,
)
from runport.openai import (
    AsyncOpenAIResponsesAdapter,
    OpenAIResponsesAdapter,
    create_async_responses_adapter,
    create_responses_adapter,
)
from runport.ports import PortError

from .responses_wire import (
    MODEL,
    BuiltIn,
    FunctionCall,
    Message,
    Reasoning,
    Turn,
    response_body,
    stream_events,
)

API_KEY = "sk-proj-SECRET-responses-key"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


ENCRYPTED = "gAAAAABpEncryptedReasoning-" + "x" * 40


def adapter_for(server: FaultServer, client: httpx.Client, **kwargs: Any) -> OpenAIResponsesAdapter:
    return OpenAIResponsesAdapter(
        base_url=server.base_url, model=MODEL, api_key=API_KEY, http_client=client, **kwargs
    )


def streamed(client: httpx.Client, turn: Turn, request: Any = None, **kwargs: Any) -> Any:
    with serving(stream_reply(stream_events(turn))) as server:
        return run_streamed(adapter_for(server, client, **kwargs), request or make_request())


def unstreamed(client: httpx.Client, turn: Turn, request: Any = None) -> Any:
    with serving(json_reply(response_body(turn))) as server:
        return adapter_for(server, client).execute(request or make_request())


def sent(client: httpx.Client, request: Any, **kwargs: Any) -> dict[str, Any]:
    """The body the server saw for ``request``."""
    with serving(stream_reply(stream_events(Turn([Message(("ok",))])))) as server:
        run_streamed(adapter_for(server, client, **kwargs), request)
        body = seen(server)
    assert body.target == "/v1/responses"
    assert body.headers["authorization"] == f"Bearer {API_KEY}"
    return body.body  # type: ignore[no-any-return]


RICH = Turn(
    [
        Reasoning((("**Plan**\n\nLook it ", "up."), ("**Then**\n\nAnswer.",)), ENCRYPTED),
        Message(("Checking ", "Paris.")),
        BuiltIn("web_search_call"),
        FunctionCall("get_weather", "call_a", ('{"city": ', '"Paris"}')),
        FunctionCall("get_weather", "call_b", ('{"city": "Oslo"}',)),
    ]
)


# -- the request ------------------------------------------------------------------------------


def test_a_turn_is_stateless_with_instructions_and_message_items(client: httpx.Client) -> None:
    request = make_request(
        messages=[
            WireMessage(role="system", content="Be brief."),
            WireMessage(role="developer", content="Answer in French."),
            WireMessage(role="user", content="Weather?"),
        ],
        runtime_policy={"temperature": 0.2, "max_tokens": 64, "seed": 7, "stop": ["x"]},
    )
    body = sent(client, request)
    assert body == {
        "model": MODEL,
        "instructions": "Be brief.\n\nAnswer in French.",
        "input": [{"type": "message", "role": "user", "content": "Weather?"}],
        "store": False,
        "temperature": 0.2,
        "max_output_tokens": 64,
        "stream": True,
    }


def test_reasoning_asks_for_summaries_and_encrypted_content(client: httpx.Client) -> None:
    body = sent(client, make_request(runtime_policy={"reasoning": {"effort": "low"}}))
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    body = sent(client, make_request(runtime_policy={"reasoning": {"summary": None}}))
    assert body["reasoning"] == {}
    assert "reasoning" not in sent(client, make_request(runtime_policy={"reasoning": False}))


def test_tools_structured_output_and_tool_choice(client: httpx.Client) -> None:
    request = make_request(
        OBJECT_SCHEMA,
        tools=[WEATHER],
        runtime_policy={"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    )
    body = sent(client, request)
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": WEATHER.description,
            "parameters": WEATHER.parameters,
            "strict": False,
        }
    ]
    text_format = body["text"]["format"]
    assert text_format["type"] == "json_schema"
    assert text_format["strict"] is True
    assert text_format["schema"]["additionalProperties"] is False
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    loose = {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}}
    assert sent(client, make_request(loose))["text"]["format"]["strict"] is False
    assert "text" not in sent(client, make_request(OBJECT_SCHEMA), response_format_mode="none")
    assert sent(client, make_request(OBJECT_SCHEMA), response_format_mode="json_object")[
        "text"
    ] == {"format": {"type": "json_object"}}


def test_a_tool_runs_history_goes_back_as_items_with_the_encrypted_reasoning(
    client: httpx.Client,
) -> None:
    assistant = WireMessage(
        role="assistant",
        content="Checking.",
        reasoning=[
            ReasoningPart(
                text="Look it up.",
                provider_metadata={"openai-responses": {"id": "rs_1", "encrypted_content": "E1"}},
            ),
            ReasoningPart(
                text="unencrypted", provider_metadata={"openai-responses": {"id": "rs_2"}}
            ),
            ReasoningPart(text="another provider's", provider_metadata={"anthropic": {"x": 1}}),
        ],
        tool_calls=[ToolCall(call_id="call_a", name="get_weather", arguments={"city": "Paris"})],
    )
    messages = [
        WireMessage(role="user", content="Weather?"),
        assistant,
        WireMessage(role="tool", tool_call_id="call_a", content='{"c": 21}'),
    ]
    body = sent(client, make_request(messages=messages, tools=[WEATHER]))
    assert body["input"] == [
        {"type": "message", "role": "user", "content": "Weather?"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Look it up."}],
            "encrypted_content": "E1",
        },
        {"type": "message", "role": "assistant", "content": "Checking."},
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_a", "output": '{"c": 21}'},
    ]
    stored = sent(client, make_request(messages=messages, tools=[WEATHER]), store=True)
    assert stored["store"] is True
    assert [item.get("id") for item in stored["input"] if item["type"] == "reasoning"] == [
        "rs_1",
        "rs_2",
    ]


def test_a_bad_reasoning_policy_is_refused_before_sending(client: httpx.Client) -> None:
    with serving() as server:
        adapter = adapter_for(server, client)
        outcome = run_streamed(adapter, make_request(runtime_policy={"reasoning": {"effort": 3}}))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.DATA_INVALID


# -- the answer -------------------------------------------------------------------------------


def test_each_item_is_read_as_it_streams(client: httpx.Client) -> None:
    outcome = streamed(client, RICH, make_request(tools=[WEATHER]))
    progress = [e for e in outcome.events if isinstance(e, Delta | ReasoningDelta | ToolCallDelta)]
    assert progress == [
        ReasoningDelta(text="**Plan**\n\nLook it "),
        ReasoningDelta(text="up."),
        ReasoningDelta(text="\n\n"),
        ReasoningDelta(text="**Then**\n\nAnswer."),
        Delta(text="Checking "),
        Delta(text="Paris."),
        ToolCallDelta(index=0, call_id="call_a", name="get_weather"),
        ToolCallDelta(
            index=0, call_id="call_a", name="get_weather", arguments_fragment='{"city": '
        ),
        ToolCallDelta(index=0, call_id="call_a", name="get_weather", arguments_fragment='"Paris"}'),
        ToolCallDelta(index=1, call_id="call_b", name="get_weather"),
        ToolCallDelta(
            index=1, call_id="call_b", name="get_weather", arguments_fragment='{"city": "Oslo"}'
        ),
    ]
    receipt = outcome.receipt
    assert receipt.text == "Checking Paris."
    assert receipt.finish_reason == "tool_calls"
    assert [(c.call_id, c.arguments) for c in receipt.tool_calls] == [
        ("call_a", {"city": "Paris"}),
        ("call_b", {"city": "Oslo"}),
    ]
    assert receipt.reasoning == [
        ReasoningPart(
            text="**Plan**\n\nLook it up.\n\n**Then**\n\nAnswer.",
            provider_metadata={"openai-responses": {"id": "rs_0", "encrypted_content": ENCRYPTED}},
        )
    ]
    assert receipt.usage == Usage(input_tokens=11, output_tokens=7, reasoning_tokens=3)
    assert ENCRYPTED not in repr(receipt)


def test_streamed_and_unstreamed_receipts_agree(client: httpx.Client) -> None:
    request = make_request(tools=[WEATHER])
    for turn in (
        RICH,
        Turn([Reasoning(content=("I think", " so."))], status="completed"),
        Turn([Message(("Cut",))], status="incomplete", incomplete="max_output_tokens"),
        Turn([Message(("I can't help with that.",), refusal=True)]),
        Turn([Reasoning(encrypted=ENCRYPTED), Message(("Hi",))]),
    ):
        assert streamed(client, turn, request).receipt == unstreamed(client, turn, request)


def test_how_a_turn_ends(client: httpx.Client) -> None:
    def finish(turn: Turn) -> str | None:
        return streamed(client, turn).receipt.finish_reason  # type: ignore[no-any-return]

    assert finish(Turn([Message(("Hi",))])) == "stop"
    assert (
        finish(Turn([Message(("Hi",))], "incomplete", incomplete="max_output_tokens")) == "length"
    )
    assert (
        finish(Turn([Message(("Hi",))], "incomplete", incomplete="content_filter"))
        == "content_filter"
    )
    refused = streamed(client, Turn([Message(("No.",), refusal=True)])).receipt
    assert (refused.text, refused.finish_reason) == ("No.", "content_filter")


def test_message_items_are_one_answer_joined_as_sent(client: httpx.Client) -> None:
    turn = Turn([Message(("I'll check", ".")), BuiltIn(), Message(("It is ", "sunny."))])
    outcome = streamed(client, turn)
    assert outcome.deltas == ["I'll check", ".", "It is ", "sunny."]
    assert outcome.receipt.text == "I'll check.It is sunny."
    assert outcome.receipt == unstreamed(client, turn)


def test_built_in_tools_ran_at_the_provider_and_are_not_calls(client: httpx.Client) -> None:
    turn = Turn(
        [
            BuiltIn("web_search_call"),
            BuiltIn("file_search_call"),
            BuiltIn("code_interpreter_call"),
            BuiltIn("mcp_call"),
            Message(("Found it.",)),
        ]
    )
    receipt = streamed(client, turn).receipt
    assert (receipt.text, receipt.tool_calls, receipt.finish_reason) == ("Found it.", None, "stop")
    names = [tool.name for tool in receipt.server_tools]
    assert names == [name for name in ("web_search", "file_search", "code_interpreter", "lookup")
                     for _ in range(2)]  # fmt: skip


def _ids_aside(events: list[Any]) -> list[Any]:
    return [
        event.model_copy(update={"call_id": "-"})
        if isinstance(event, ServerToolCall | ServerToolResult)
        else event
        for event in events
    ]


def test_items_whose_ids_change_on_every_event_are_matched_by_position(
    client: httpx.Client,
) -> None:
    """GitHub Copilot's endpoint gives an item a new id on every event (found replaying Vercel
    AI SDK's recorded stream): events are matched to items by ``output_index``."""
    rotated: list[bytes] = []
    for number, frame in enumerate(stream_events(RICH)):
        head, _, data = frame.partition(b"data: ")
        value = json.loads(data)
        if "item_id" in value:
            value["item_id"] = f"rotated_{number}"
        if "item" in value:
            value["item"] = {**value["item"], "id": f"rotated_{number}"}
        rotated.append(head + b"data: " + json.dumps(value).encode() + b"\n\n")
    with serving(stream_reply(rotated)) as server:
        outcome = run_streamed(adapter_for(server, client), make_request(tools=[WEATHER]))
    expected = streamed(client, RICH, make_request(tools=[WEATHER]))
    # a server tool's id is its finished item's, which the endpoint rotated too
    assert _ids_aside(outcome.events[:-1]) == _ids_aside(expected.events[:-1])
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == expected.receipt.tool_calls
    assert [part.text for part in outcome.receipt.reasoning] == [
        part.text for part in expected.receipt.reasoning
    ]


def test_a_reasoning_item_with_nothing_in_it_is_nothing(client: httpx.Client) -> None:
    receipt = streamed(client, Turn([Reasoning(), Message(("Hi",))])).receipt
    assert receipt.reasoning is None


def test_a_stream_cut_before_its_marker_is_truncated(client: httpx.Client) -> None:
    with serving(stream_reply(stream_events(RICH, terminal=False))) as server:
        outcome = run_streamed(adapter_for(server, client), make_request(tools=[WEATHER]))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED
    assert outcome.text == "Checking Paris."


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (
            {"type": "error", "error": {"type": "insufficient_quota", "code": "insufficient_quota",
                                        "message": "You exceeded your current quota"}},
            ErrorCode.RUNTIME_RATE_LIMITED,
        ),
        (
            {"type": "error", "code": "server_error", "message": "The server had an error"},
            ErrorCode.RUNTIME_UNAVAILABLE,
        ),
        (
            {"type": "response.failed", "response": {"status": "failed", "error": {
                "code": "rate_limit_exceeded", "message": "Slow down"}}},
            ErrorCode.RUNTIME_RATE_LIMITED,
        ),
        (
            {"type": "response.failed", "response": {"status": "failed", "error": {
                "code": "context_length_exceeded", "message": "Too long"}}},
            ErrorCode.RUNTIME_PERMANENT,
        ),
        (
            {"type": "response.failed", "response": {"status": "failed", "error": {
                "code": "server_error", "message": "Overloaded"}}},
            ErrorCode.RUNTIME_UNAVAILABLE,
        ),
    ],
)  # fmt: skip
def test_failures_are_coded(client: httpx.Client, frame: dict[str, Any], code: ErrorCode) -> None:
    events = stream_events(Turn([Message(("Half",))]), terminal=False)
    data = f"event: {frame['type']}\ndata: {json.dumps(frame)}\n\n".encode()
    with serving(stream_reply([*events, data])) as server:
        outcome = run_streamed(adapter_for(server, client), make_request())
    assert outcome.error is not None
    assert outcome.error.code == code
    assert outcome.text == "Half"


def test_a_failed_unstreamed_response_is_its_error(client: httpx.Client) -> None:
    turn = Turn([], status="failed", error={"code": "rate_limit_exceeded", "message": "Slow"})
    with serving(json_reply(response_body(turn))) as server, pytest.raises(PortError) as raised:
        adapter_for(server, client).execute(make_request())
    assert raised.value.code == ErrorCode.RUNTIME_RATE_LIMITED


def test_the_output_only_in_the_terminal_event_is_read(client: httpx.Client) -> None:
    terminal = stream_events(RICH)[-1]
    with serving(stream_reply([terminal])) as server:
        outcome = run_streamed(adapter_for(server, client), make_request(tools=[WEATHER]))
    assert outcome.receipt == unstreamed(client, RICH, make_request(tools=[WEATHER]))


def test_arguments_for_a_call_never_announced_are_refused(client: httpx.Client) -> None:
    frame = {"type": "response.function_call_arguments.delta", "item_id": "fc_x", "delta": "{"}
    with serving(stream_reply([f"data: {json.dumps(frame)}\n\n".encode()])) as server:
        outcome = run_streamed(adapter_for(server, client), make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_the_async_twin_agrees(client: httpx.Client) -> None:
    request = make_request(tools=[WEATHER])
    with serving(stream_reply(stream_events(RICH))) as server:
        async_outcome = run_streamed_async(
            AsyncOpenAIResponsesAdapter(base_url=server.base_url, model=MODEL, api_key=API_KEY),
            request,
        )
    assert async_outcome.events == streamed(client, RICH, request).events


def test_the_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import entry_points

    monkeypatch.setenv("RUNPORT_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RUNPORT_OPENAI_MODEL", "gpt-5-mini")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    for group, made in (
        ("runport.adapters", create_responses_adapter),
        ("runport.async_adapters", create_async_responses_adapter),
    ):
        (point,) = [p for p in entry_points(group=group) if p.name == "openai-responses"]
        assert point.load() is made
    adapter = create_responses_adapter()
    assert repr(adapter) == (
        "OpenAIResponsesAdapter(url='http://127.0.0.1:9/v1/responses', model='gpt-5-mini')"
    )
    assert adapter.descriptor().id == "openai-responses"
    adapter.close()
