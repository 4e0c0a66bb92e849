"""Prompt-cache counts in usage over loopback (ADR 0051): ``cache_read_input_tokens`` and
``cache_creation_input_tokens`` are ``Usage.cache_read_tokens``/``cache_write_tokens`` and are
added to ``input_tokens``, streamed (including counts only ``message_start`` carries) and
unstreamed alike; bad counts are coded."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from runport.anthropic import AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter
from runport.conformance.loopback import json_reply, seen, serving, stream_reply
from runport.conformance.providers import Provider, make_request, run_streamed
from runport.contracts import ErrorCode, ImagePart, Message, TextPart, ToolCall, Usage
from runport.ports import PortError

from .anthropic_wire import Text, Turn, event, message_body

PROVIDER = Provider(
    AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter, "claude-test", "sk-ant-api03-CACHE"
)


def _cache(read: Any, write: Any) -> dict[str, Any]:
    counts = {"cache_read_input_tokens": read, "cache_creation_input_tokens": write}
    return {key: value for key, value in counts.items() if value is not None}


def _stream(start: dict[str, Any], delta: dict[str, Any]) -> list[bytes]:
    message = {
        "id": "msg_cache",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start,
    }
    text = {"type": "text_delta", "text": "hi"}
    return [
        event("message_start", {"type": "message_start", "message": message}),
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": text}),
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": delta},
        ),
        event("message_stop", {"type": "message_stop"}),
    ]


def _streamed(client: httpx.Client, start: dict[str, Any], delta: dict[str, Any]) -> Any:
    with serving(stream_reply(_stream(start, delta))) as server:
        outcome = run_streamed(PROVIDER.adapter_for(server, client), make_request())
    if outcome.error is not None:
        return outcome.error
    assert outcome.receipt is not None
    return outcome.receipt.usage


def _unstreamed(client: httpx.Client, usage: dict[str, Any]) -> Any:
    body = {**message_body(Turn([Text(["hi"])])), "usage": usage}
    with serving(json_reply(body)) as server:
        try:
            return PROVIDER.adapter_for(server, client).execute(make_request()).usage
        except PortError as error:
            return error


CASES = [
    pytest.param(
        1920,
        100,
        Usage(input_tokens=2032, output_tokens=5, cache_read_tokens=1920, cache_write_tokens=100),
        id="both",
    ),
    pytest.param(
        1920, 0, Usage(input_tokens=1932, output_tokens=5, cache_read_tokens=1920), id="read"
    ),
    pytest.param(
        None, 100, Usage(input_tokens=112, output_tokens=5, cache_write_tokens=100), id="write"
    ),
    pytest.param(0, 0, Usage(input_tokens=12, output_tokens=5), id="zeros"),
    pytest.param(None, None, Usage(input_tokens=12, output_tokens=5), id="absent"),
]


@pytest.mark.parametrize(("read", "write", "expected"), CASES)
def test_counts_only_message_start_sends_are_kept(
    client: httpx.Client, read: Any, write: Any, expected: Usage
) -> None:
    start = {"input_tokens": 12, **_cache(read, write), "output_tokens": 1}
    assert _streamed(client, start, {"output_tokens": 5}) == expected


@pytest.mark.parametrize(("read", "write", "expected"), CASES)
def test_counts_message_delta_repeats_read_the_same(
    client: httpx.Client, read: Any, write: Any, expected: Usage
) -> None:
    start = {"input_tokens": 12, **_cache(read, write), "output_tokens": 1}
    delta = {"input_tokens": 12, **_cache(read, write), "output_tokens": 5}
    assert _streamed(client, start, delta) == expected


@pytest.mark.parametrize(("read", "write", "expected"), CASES)
def test_an_unstreamed_message_reads_the_same(
    client: httpx.Client, read: Any, write: Any, expected: Usage
) -> None:
    usage = {"input_tokens": 12, **_cache(read, write), "output_tokens": 5}
    assert _unstreamed(client, usage) == expected


def test_message_delta_counts_override_message_starts(client: httpx.Client) -> None:
    start = {"input_tokens": 12, **_cache(0, 100), "output_tokens": 1}
    delta = {"output_tokens": 5, **_cache(64, None)}
    assert _streamed(client, start, delta) == Usage(
        input_tokens=176, output_tokens=5, cache_read_tokens=64, cache_write_tokens=100
    )


BAD = [-1, 1.5, "7", [3]]


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("key", ["cache_read_input_tokens", "cache_creation_input_tokens"])
@pytest.mark.parametrize("where", ["message_start", "message_delta", "unstreamed"])
def test_bad_cache_counts_are_invalid_responses(
    client: httpx.Client, bad: Any, key: str, where: str
) -> None:
    if where == "unstreamed":
        got = _unstreamed(client, {"input_tokens": 12, key: bad, "output_tokens": 5})
    elif where == "message_start":
        got = _streamed(
            client, {"input_tokens": 12, key: bad, "output_tokens": 1}, {"output_tokens": 5}
        )
    else:
        got = _streamed(
            client, {"input_tokens": 12, "output_tokens": 1}, {key: bad, "output_tokens": 5}
        )
    assert isinstance(got, PortError)
    assert got.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def _sent(client: httpx.Client, messages: list[Message]) -> Any:
    with serving(json_reply(message_body(Turn([Text(["ok"])])))) as server:
        PROVIDER.adapter_for(server, client).execute(make_request(messages=messages))
        return seen(server).body


def test_a_breakpoint_is_cache_control_on_the_marked_messages_last_block(
    client: httpx.Client,
) -> None:
    body = _sent(
        client,
        [
            Message(role="system", content="Be brief."),
            Message(role="system", content="A long manual.", cache=True, cache_ttl="1h"),
            Message(role="user", content="First question.", cache=True),
            Message(
                role="assistant",
                content="Checking.",
                tool_calls=[ToolCall(call_id="t1", name="get_weather", arguments={})],
                cache=True,
            ),
            Message(role="tool", content="sunny", tool_call_id="t1"),
        ],
    )
    assert body["system"] == [
        {"type": "text", "text": "Be brief."},
        {
            "type": "text",
            "text": "A long manual.",
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        },
    ]
    user, assistant, _ = body["messages"]
    assert user["content"] == [
        {"type": "text", "text": "First question.", "cache_control": {"type": "ephemeral"}}
    ]
    text, call = assistant["content"]
    assert "cache_control" not in text
    assert call["cache_control"] == {"type": "ephemeral"}


def test_without_a_breakpoint_nothing_is_marked(client: httpx.Client) -> None:
    body = _sent(
        client,
        [Message(role="system", content="Be brief."), Message(role="user", content="Hi.")],
    )
    assert body["system"] == "Be brief."
    assert "cache_control" not in json.dumps(body)


def test_a_parts_breakpoint_is_cache_control_on_that_parts_block(client: httpx.Client) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(8)).decode("ascii")
    body = _sent(
        client,
        [
            Message(
                role="system",
                content=[
                    TextPart(text="A long manual.", cache=True, cache_ttl="1h"),
                    TextPart(text=" Today is Monday."),
                ],
            ),
            Message(
                role="user",
                content=[
                    ImagePart(media_type="image/png", data=png, cache=True),
                    TextPart(text="What is it?"),
                ],
            ),
            Message(
                role="assistant",
                content="Checking.",
                tool_calls=[ToolCall(call_id="t1", name="get_weather", arguments={})],
            ),
            Message(
                role="tool",
                content=[TextPart(text="sunny", cache=True), TextPart(text=", 20 °C")],
                tool_call_id="t1",
            ),
        ],
    )
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [
        {"type": "text", "text": "A long manual.", "cache_control": {**ephemeral, "ttl": "1h"}},
        {"type": "text", "text": " Today is Monday."},
    ]
    user, _, result = body["messages"]
    image, question = user["content"]
    assert (image["type"], image["cache_control"]) == ("image", ephemeral)
    assert question == {"type": "text", "text": "What is it?"}
    [tool_result] = result["content"]
    assert "cache_control" not in tool_result
    assert tool_result["content"] == [
        {"type": "text", "text": "sunny", "cache_control": ephemeral},
        {"type": "text", "text": ", 20 °C"},
    ]
