"""What the adapter sends: the chat-completions body, the headers, and how it is built."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from runport.conformance.providers import WEATHER, make_request
from runport.contracts import Message, ReasoningPart, ToolCall
from runport.openai import DEFAULT_TIMEOUT, OpenAIChatAdapter, create_adapter
from runport.openai._codec import ChatCompletionsCodec

from .openai_upstream import OBJECT_SCHEMA, ChunkedBody, LoopbackUpstream, Reply, completion


def sent_body(
    request_kwargs: dict[str, Any] | None = None, **adapter_kwargs: Any
) -> dict[str, Any]:
    """The JSON body ``execute`` posts for ``make_request(**request_kwargs)``."""
    transport = ChunkedBody([httpx_json(completion("ok"))], content_type="application/json")
    with httpx.Client(transport=transport) as client:
        adapter = OpenAIChatAdapter(
            base_url="http://upstream.test/v1", model="m-1", http_client=client, **adapter_kwargs
        )
        adapter.execute(make_request(**(request_kwargs or {})))
    body: dict[str, Any] = transport.bodies[0]
    return body


def httpx_json(value: Any) -> bytes:
    return httpx.Response(200, json=value).content


def test_text_contract_minimal_body() -> None:
    assert sent_body() == {"model": "m-1", "messages": [{"role": "user", "content": "Say hello."}]}


def test_structured_contract_asks_for_a_strict_json_schema() -> None:
    body = sent_body({"schema": OBJECT_SCHEMA})
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "provider-test", "schema": OBJECT_SCHEMA, "strict": True},
    }


def test_json_object_mode_sends_the_schema_beside_it() -> None:
    body = sent_body({"schema": OBJECT_SCHEMA}, response_format_mode="json_object")
    assert body["response_format"] == {"type": "json_object", "schema": OBJECT_SCHEMA}


def test_mode_none_sends_no_response_format() -> None:
    assert "response_format" not in sent_body(
        {"schema": OBJECT_SCHEMA}, response_format_mode="none"
    )


def test_runtime_policy_keys_pass_through_as_the_api_names_them() -> None:
    policy = {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_tokens": 50,
        "seed": 7,
        "stop": ["\n\n"],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "max_response_bytes": 100_000,
        "retries": 2,
    }
    body = sent_body({"runtime_policy": policy, "tools": [WEATHER]})
    for key in ("temperature", "top_p", "max_tokens", "seed", "stop", "tool_choice"):
        assert body[key] == policy[key]
    assert "max_response_bytes" not in body
    assert "retries" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]


def test_history_with_tool_calls_and_results() -> None:
    messages = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Weather in Oslo and Rome?"),
        Message(
            role="assistant",
            content="",
            tool_calls=[
                ToolCall(call_id="c1", name="get_weather", arguments={"city": "Oslo"}),
                ToolCall(call_id="c2", name="get_weather", arguments="{broken"),
            ],
        ),
        Message(role="tool", content='{"temp": 3}', tool_call_id="c1"),
        Message(role="tool", content="bad arguments", tool_call_id="c2"),
    ]
    body = sent_body({"messages": messages})
    assistant = body["messages"][2]
    assert assistant == {
        "role": "assistant",
        "content": "",  # never null beside tool calls (llama.cpp answers 500 to null)
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{broken"},
            },
        ],
    }
    assert body["messages"][3] == {"role": "tool", "content": '{"temp": 3}', "tool_call_id": "c1"}


# --- reasoning sent back (adr/0031-reasoning-sent-back-per-dialect.md) ----------------------

DETAILS = [
    {"type": "reasoning.text", "text": "Look it up.", "signature": "sig-1", "index": 0},
    {"type": "reasoning.encrypted", "data": "gAAAA-opaque", "index": 1},
]


def _history(*parts: ReasoningPart) -> list[Message]:
    return [
        Message(role="user", content="Weather in Oslo?"),
        Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(call_id="c1", name="get_weather", arguments={"city": "Oslo"})],
            reasoning=list(parts),
        ),
        Message(role="tool", content='{"temp": 3}', tool_call_id="c1"),
    ]


def test_reasoning_content_is_not_sent_back_by_default() -> None:
    """DeepSeek's reasoner answers 400 to ``reasoning_content`` in its input."""
    part = ReasoningPart(
        text="The user wants Oslo.", provider_metadata={"openai": {"field": "reasoning_content"}}
    )
    assistant = sent_body({"messages": _history(part)})["messages"][1]
    assert set(assistant) == {"role", "content", "tool_calls"}


def test_openrouter_reasoning_details_go_back_as_they_came() -> None:
    part = ReasoningPart(
        text="Look it up.",
        provider_metadata={
            "openai": {"field": "reasoning"},
            "openrouter": {"reasoning_details": DETAILS},
        },
    )
    assistant = sent_body({"messages": _history(part)})["messages"][1]
    assert assistant["reasoning_details"] == DETAILS
    assert "reasoning" not in assistant
    assert "reasoning_content" not in assistant


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_send_reasoning_as_names_the_field_the_text_goes_back_in(field: str) -> None:
    """DeepSeek's thinking mode wants ``reasoning_content`` back on a tool-call turn."""
    parts = (ReasoningPart(text="First, "), ReasoningPart(text="Oslo."), ReasoningPart(text=""))
    body = sent_body({"messages": _history(*parts)}, send_reasoning_as=field)
    assert body["messages"][1][field] == "First, Oslo."
    assert all(field not in message for message in (body["messages"][0], body["messages"][2]))


def test_reasoning_on_a_user_message_is_never_sent() -> None:
    messages = [Message(role="user", content="hi", reasoning=[ReasoningPart(text="x")])]
    body = sent_body({"messages": messages}, send_reasoning_as="reasoning_content")
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_factory_reads_send_reasoning_as(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNPORT_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RUNPORT_OPENAI_MODEL", "tiny")
    monkeypatch.setenv("RUNPORT_OPENAI_SEND_REASONING_AS", "reasoning_content")
    with create_adapter() as adapter:
        codec = adapter._codec
        assert isinstance(codec, ChatCompletionsCodec)
        assert codec.send_reasoning_as == "reasoning_content"
    monkeypatch.setenv("RUNPORT_OPENAI_SEND_REASONING_AS", "thoughts")
    with pytest.raises(ValueError, match="reasoning_content"):
        create_adapter()


def test_no_key_no_authorization_header(upstream: LoopbackUpstream) -> None:
    upstream.queue(Reply.json(completion("ok")))
    with OpenAIChatAdapter(base_url=upstream.base_url + "/", model="m") as adapter:
        adapter.execute(make_request())
    (recorded,) = upstream.requests
    assert "authorization" not in recorded.headers
    assert recorded.path == "/v1/chat/completions"
    assert recorded.headers["content-type"] == "application/json"
    assert recorded.headers["user-agent"].startswith("runport-openai/")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_url": "ftp://x/v1"}, "http"),
        ({"base_url": "/v1"}, "http"),
        ({"model": ""}, "model"),
        ({"max_response_bytes": -1}, "max_response_bytes"),
        ({"max_response_bytes": True}, "max_response_bytes"),
        ({"response_format_mode": "xml"}, "json_schema"),
        ({"send_reasoning_as": "thinking"}, "reasoning_content"),
        ({"api_key": "sk-abc\r\nX-Injected: 1"}, "printable ASCII"),
    ],
)
def test_bad_construction_is_refused(kwargs: dict[str, Any], message: str) -> None:
    options: dict[str, Any] = {"base_url": "http://x/v1", "model": "m", **kwargs}
    with pytest.raises(ValueError, match=message) as raised:
        OpenAIChatAdapter(**options)
    assert "sk-abc" not in str(raised.value)


def test_the_descriptor_names_the_capabilities() -> None:
    with OpenAIChatAdapter(base_url="http://x/v1", model="m") as adapter:
        descriptor = adapter.descriptor()
    assert descriptor.id == "openai-chat"
    assert descriptor.capabilities == ["streaming", "structured_output", "text", "tool_calls"]


def test_own_client_uses_the_default_timeout_and_closes() -> None:
    adapter = OpenAIChatAdapter(base_url="http://x/v1", model="m", timeout=3.0)
    assert adapter._client.timeout == httpx.Timeout(3.0)
    adapter.close()
    assert adapter._client.is_closed
    with OpenAIChatAdapter(base_url="http://x/v1", model="m") as default:
        assert default._client.timeout == DEFAULT_TIMEOUT


def test_a_client_passed_in_is_not_closed_by_the_adapter() -> None:
    with httpx.Client() as client:
        OpenAIChatAdapter(base_url="http://x/v1", model="m", http_client=client).close()
        assert not client.is_closed


# --- the entry-point factory -----------------------------------------------------------------


def test_factory_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNPORT_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RUNPORT_OPENAI_MODEL", "tiny")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("RUNPORT_OPENAI_RESPONSE_FORMAT", "json_object")
    with create_adapter() as adapter:
        assert "url='http://127.0.0.1:9/v1/chat/completions'" in repr(adapter)
        assert "model='tiny'" in repr(adapter)
        codec = adapter._codec
        assert isinstance(codec, ChatCompletionsCodec)
        assert (
            codec.encode(make_request(), stream=False).headers["Authorization"] == "Bearer sk-env"
        )
        assert codec.response_format_mode == "json_object"
        assert "sk-env" not in repr(adapter)


@pytest.mark.parametrize("missing", ["RUNPORT_OPENAI_BASE_URL", "RUNPORT_OPENAI_MODEL"])
def test_factory_names_what_is_missing(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    monkeypatch.setenv("RUNPORT_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RUNPORT_OPENAI_MODEL", "tiny")
    monkeypatch.delenv(missing)
    with pytest.raises(ValueError, match=missing):
        create_adapter()


def test_factory_refuses_an_unknown_response_format(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNPORT_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RUNPORT_OPENAI_MODEL", "tiny")
    monkeypatch.setenv("RUNPORT_OPENAI_RESPONSE_FORMAT", "yaml")
    with pytest.raises(ValueError, match="json_object"):
        create_adapter()


def test_the_entry_point_is_registered() -> None:
    from importlib.metadata import entry_points

    (entry,) = [ep for ep in entry_points(group="runport.adapters") if ep.name == "openai"]
    assert entry.load() is create_adapter
