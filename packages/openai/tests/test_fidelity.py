"""What real servers send, and hostile shapes an upstream may send: typed content parts, the
rules after ``finish_reason``, strict structured output, the provider's own error text, JSON
past the bounds — each a receipt or exactly one coded ``Failed``, never a traceback."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runport.conformance.providers import make_request, run_streamed
from runport.contracts import ErrorCode, Message, ReasoningDelta, ReasoningPart, ToolCall, Usage
from runport.core import strict_schema
from runport.openai import OpenAIChatAdapter
from runport.ports import PortError

from .openai_upstream import (
    API_KEY,
    OBJECT_SCHEMA,
    LoopbackUpstream,
    Reply,
    chunk,
    completion,
    finish_chunk,
    role_chunk,
    sse,
    text_chunk,
    tool_chunk,
    usage_chunk,
)


def test_content_as_typed_parts_keeps_text_parts_as_the_answer_and_thinking_as_reasoning(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "let me think"}]}
    upstream.queue(
        Reply(
            [
                sse(
                    [
                        role_chunk(),
                        chunk({"content": [thinking]}),
                        chunk({"content": [{"type": "text", "text": "The answer"}]}),
                        chunk({"content": [thinking, {"type": "text", "text": " is 4."}]}),
                        finish_chunk(),
                    ]
                )
            ]
        ),
        Reply.json(
            completion(None)
            | {
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": [thinking, {"type": "text", "text": "The answer is 4."}],
                        },
                        "finish_reason": "stop",
                    }
                ]
            }
        ),
    )
    outcome = run_streamed(adapter, make_request())
    assert outcome.deltas == ["The answer", " is 4."]
    reasoning = [e.text for e in outcome.events if isinstance(e, ReasoningDelta)]
    assert reasoning == ["let me think", "let me think"]  # Mistral's thinking parts
    assert outcome.receipt is not None
    assert outcome.receipt.text == "The answer is 4."
    assert [part.text for part in outcome.receipt.reasoning or []] == ["let me thinklet me think"]
    unstreamed = adapter.execute(make_request())
    assert unstreamed.text == "The answer is 4."
    assert unstreamed.reasoning == [
        ReasoningPart(text="let me think", provider_metadata={"openai": {"field": "thinking"}})
    ]


def test_a_usage_chunk_and_a_repeated_finish_reason_after_finish_are_allowed(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(
        Reply(
            [sse([text_chunk("hi"), finish_chunk("length"), finish_chunk("stop"), usage_chunk()])]
        )
    )
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.finish_reason == "stop"  # the last one stands
    assert outcome.receipt.usage == Usage(input_tokens=7, output_tokens=3)


@pytest.mark.parametrize(
    "late",
    [text_chunk("more"), tool_chunk(0, call_id="c", name="f", arguments="{}")],
    ids=["text", "tool call"],
)
def test_content_after_finish_reason_is_kept(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, late: dict[str, Any]
) -> None:
    """A finish reason is not a completion marker (docs/streaming-law.md, law 9):
    what follows it before ``[DONE]`` is part of the answer."""
    upstream.queue(Reply([sse([text_chunk("done"), finish_chunk(), late])]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.finish_reason == "stop"
    if late is not None and "tool_calls" in late["choices"][0]["delta"]:
        assert outcome.receipt.tool_calls == [ToolCall(call_id="c", name="f", arguments={})]
        assert outcome.receipt.text == "done"
    else:
        assert outcome.receipt.text == "donemore"


def _glm_chunk(delta: dict[str, Any]) -> dict[str, Any]:
    """Z.ai GLM-4.5's shape (direct and through OpenRouter): ``finish_reason: "tool_calls"``
    on every chunk, those carrying the calls included."""
    return chunk(delta, finish="tool_calls")


GLM_FRAMES = [
    _glm_chunk({"role": "assistant", "content": ""}),
    _glm_chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_-8e1a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": '},
                }
            ]
        }
    ),
    _glm_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Oslo"}'}}]}),
    _glm_chunk(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "call_-8e1b",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Bergen"}'},
                }
            ]
        }
    ),
    {**_glm_chunk({}), "usage": {"prompt_tokens": 12, "completion_tokens": 30}},
]


def test_finish_reason_on_every_chunk_with_the_tool_calls_assembles_the_calls(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(
        Reply([sse(GLM_FRAMES)]),
        Reply.json(
            completion(
                None,
                [
                    ("call_-8e1a", "get_weather", '{"city": "Oslo"}'),
                    ("call_-8e1b", "get_weather", '{"city": "Bergen"}'),
                ],
                finish="tool_calls",
                usage=(12, 30),
            )
        ),
    )
    calls = [
        ToolCall(call_id="call_-8e1a", name="get_weather", arguments={"city": "Oslo"}),
        ToolCall(call_id="call_-8e1b", name="get_weather", arguments={"city": "Bergen"}),
    ]
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == calls
    assert outcome.receipt.finish_reason == "tool_calls"
    assert [d.arguments_fragment for d in outcome.tool_deltas] == [
        '{"city": ',
        '"Oslo"}',
        '{"city": "Bergen"}',
    ]
    assert adapter.execute(make_request()) == outcome.receipt  # law 2


MISTRAL_FRAMES = [
    chunk({"role": "assistant", "content": ""}),
    # Mistral streams each call whole, in one chunk, with neither ``index`` nor ``type``
    chunk(
        {
            "tool_calls": [
                {
                    "id": "Zq4u1",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ]
        }
    ),
    chunk(
        {
            "tool_calls": [
                {"id": "Zq4u2", "function": {"name": "get_time", "arguments": '{"tz": "CET"}'}}
            ]
        }
    ),
    chunk({}, finish="tool_calls"),
]


def test_whole_calls_streamed_without_an_index_take_the_next_positions(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse(MISTRAL_FRAMES)]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == [
        ToolCall(call_id="Zq4u1", name="get_weather", arguments={"city": "Oslo"}),
        ToolCall(call_id="Zq4u2", name="get_time", arguments={"tz": "CET"}),
    ]
    assert [(d.index, d.name, d.arguments_fragment) for d in outcome.tool_deltas] == [
        (0, "get_weather", '{"city": "Oslo"}'),
        (1, "get_time", '{"tz": "CET"}'),
    ]


def test_a_fragment_with_no_index_and_no_name_is_still_refused(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse([chunk({"tool_calls": [{"function": {"arguments": "{}"}}]})])]))
    with pytest.raises(PortError) as raised:
        adapter.execute_streaming(make_request(), lambda event: None)
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "no valid index" in raised.value.message


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("schema", "arguments", "text"),
    [
        (OBJECT_SCHEMA, None, '{"answer": ' + _deep(3000) + "}"),
        (OBJECT_SCHEMA, None, '{"answer": ' + "9" * 5000 + "}"),
        (None, '{"city": ' + _deep(5000) + "}", None),
        (None, '{"n": ' + "1" * 4400 + "}", None),
    ],
    ids=["deep answer", "huge integer answer", "deep arguments", "huge integer arguments"],
)
def test_json_past_the_bounds_is_one_coded_failure(
    upstream: LoopbackUpstream,
    adapter: OpenAIChatAdapter,
    schema: dict[str, Any] | None,
    arguments: str | None,
    text: str | None,
) -> None:
    frames = [role_chunk()]
    if text is not None:
        frames.append(text_chunk(text))
    if arguments is not None:
        frames.append(tool_chunk(0, call_id="c1", name="get_weather", arguments=arguments))
    frames.append(finish_chunk())
    calls = [("c1", "get_weather", arguments)] if arguments is not None else None
    upstream.queue(Reply([sse(frames)]), Reply.json(completion(text, calls)))
    outcome = run_streamed(adapter, make_request(schema))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    with pytest.raises(PortError) as raised:
        adapter.execute(make_request(schema))
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_a_frame_nested_past_the_decoders_limit_is_invalid(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([b'data: {"choices": ' + _deep(5000).encode() + b"}\n\n"]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_a_lone_surrogate_in_the_request_is_data_invalid(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    request = make_request(messages=[Message(role="user", content="half \ud800 a pair")])
    outcome = run_streamed(adapter, request)
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.DATA_INVALID
    assert "not valid Unicode" in outcome.error.message
    assert upstream.requests == []


def test_the_providers_own_error_message_is_kept_bounded_and_redacted(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    message = (
        "Invalid schema for response_format 'x': 'required' must list every property. "
        f"(key {API_KEY}) \x1b[2J" + "pad " * 200
    )
    upstream.queue(
        Reply.json({"error": {"message": message, "type": "invalid_request_error"}}, 400)
    )
    outcome = run_streamed(adapter, make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_PERMANENT
    text = outcome.error.message
    assert text.startswith(
        "the upstream refused the request (HTTP 400 Bad Request): Invalid schema"
    )
    assert API_KEY not in text
    assert "\x1b" not in text
    assert len(text) <= 80 + 300


def test_an_error_frame_mid_stream_carries_its_message(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    frame = {"error": {"message": "The server is overloaded.", "type": "server_error"}}
    upstream.queue(Reply([sse([text_chunk("so far"), frame], done=False)]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert outcome.error.message == "the upstream sent a server error: The server is overloaded."
    assert outcome.deltas == ["so far"]


@pytest.mark.parametrize(
    "base_url",
    ["http://user:hunter2@127.0.0.1:9/v1", "http://127.0.0.1:9/v1?api-key=hunter2"],
)
def test_the_repr_shows_no_credentials_from_the_base_url(base_url: str) -> None:
    key = None if "@" in base_url else API_KEY  # user-info beside a key is refused (below)
    with OpenAIChatAdapter(base_url=base_url, model="m", api_key=key) as adapter:
        assert "hunter2" not in repr(adapter)
        assert API_KEY not in repr(adapter)
        assert "model='m'" in repr(adapter)


def test_user_info_beside_an_api_key_is_refused_not_a_dropped_key() -> None:
    with pytest.raises(ValueError, match="user-info") as refused:
        OpenAIChatAdapter(base_url="http://user:hunter2@127.0.0.1:9/v1", model="m", api_key=API_KEY)
    assert "hunter2" not in str(refused.value)
    assert API_KEY not in str(refused.value)


# --- strict structured output --------------------------------------------------------------


def _response_format(upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, schema: Any) -> Any:
    upstream.queue(Reply.json(completion('{"answer": 1}')))
    adapter.execute(make_request(schema))
    return upstream.requests[-1].body["response_format"]["json_schema"]


def test_a_schema_in_the_strict_subset_is_sent_strict(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    sent = _response_format(upstream, adapter, OBJECT_SCHEMA)
    assert sent["strict"] is True
    assert sent["schema"] == OBJECT_SCHEMA


def test_an_open_object_is_closed_and_a_nullable_optional_made_required() -> None:
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "integer"},
            "note": {"type": ["string", "null"]},
            "items": {"type": "array", "items": {"type": "object", "properties": {}}},
        },
        "required": ["answer", "items"],
    }
    strict = strict_schema(schema)
    assert strict == {
        "type": "object",
        "properties": {
            "answer": {"type": "integer"},
            "note": {"type": ["string", "null"]},
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {},
                    "additionalProperties": False,
                    "required": [],
                },
            },
        },
        "required": ["answer", "note", "items"],
        "additionalProperties": False,
    }
    assert "additionalProperties" not in schema  # the contract's own schema is untouched


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string"}}},  # optional, not nullable
        {"type": "object", "additionalProperties": True},
        {
            "type": "object",
            "properties": {"a": {"type": "string", "minLength": 2}},
            "required": ["a"],
        },
        {"type": "object", "patternProperties": {"^x": {}}},
        {"type": "array", "items": {"type": "string"}},  # the root must be an object
        {
            "type": "object",
            "properties": {"a": {"$ref": "https://example.test/s.json"}},
            "required": ["a"],
        },
    ],
)
def test_a_schema_outside_the_subset_is_sent_with_strict_false(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, schema: dict[str, Any]
) -> None:
    assert strict_schema(schema) is None
    sent = _response_format(upstream, adapter, schema)
    assert sent["strict"] is False
    assert sent["schema"] == schema


def test_the_answer_is_validated_against_the_contracts_own_schema(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer", "minimum": 10}}}
    upstream.queue(Reply.json(completion(json.dumps({"answer": 3}))))
    receipt = adapter.execute(make_request(schema))
    assert receipt.output == {"answer": 3}
    assert receipt.output_schema_valid is False
