"""What the Ollama codec sends (messages, tools, ``format``, ``options`` with ``num_ctx``,
``think``, images) and how it reads ``/api/chat`` answers shaped as Ollama writes them: the
fields of its API reference (``created_at``, ``images: null``, the durations on the last
line), thinking, whole tool calls with and without ids, ``done_reason``, and failures."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import (
    CompiledInteraction,
    Delta,
    ErrorCode,
    ExecutionRequest,
    FilePart,
    ImagePart,
    Message,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    TextPart,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
)
from runport.ollama import OllamaChatAdapter, create_adapter
from runport.ports import PortError

NDJSON = {"content-type": "application/x-ndjson"}
PDF = base64.b64encode(b"%PDF-1.7\n").decode()
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(8)).decode()


def line(message: dict[str, Any] | None = None, **more: Any) -> bytes:
    chunk: dict[str, Any] = {"model": "qwen3:8b", "created_at": "2026-03-01T10:00:00.1Z"}
    if message is not None:
        chunk["message"] = {"role": "assistant", "content": "", "images": None, **message}
    return json.dumps({**chunk, "done": False, **more}).encode() + b"\n"


def last(**more: Any) -> bytes:
    stats = {"total_duration": 4883583458, "load_duration": 1334875, "eval_duration": 4535599000}
    return line({}, done=True, **stats, **more)


def request(
    *messages: Message, schema: dict[str, Any] | None = None, **policy: Any
) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test/0",
            contract_id="ollama",
            contract_version="1.0.0",
            messages=list(messages) or [Message(role="user", content="Hi")],
            output_schema=schema or {"type": "string"},
            runtime_policy=policy,
            tools=[ToolSpec(name="weather", description="Weather", parameters={"type": "object"})]
            if any(m.role == "tool" for m in messages)
            else [],
        )
    )


class Upstream:
    """An ``httpx.MockTransport`` that records each request and answers with ``pieces``."""

    def __init__(
        self, *pieces: bytes, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        self.pieces = pieces
        self.status = status
        self.headers = NDJSON if headers is None else headers
        self.sent: list[httpx.Request] = []

    def __call__(self, sent: httpx.Request) -> httpx.Response:
        self.sent.append(sent)
        return httpx.Response(self.status, headers=self.headers, content=iter(self.pieces))

    @property
    def body(self) -> Any:
        return json.loads(self.sent[-1].content)

    def adapter(self, **keywords: Any) -> OllamaChatAdapter:
        client = httpx.Client(transport=httpx.MockTransport(self))
        return OllamaChatAdapter(model="qwen3:8b", http_client=client, **keywords)


def streamed(upstream: Upstream, call: ExecutionRequest | None = None, **keywords: Any) -> Any:
    events: list[StreamEvent] = []
    with upstream.adapter(**keywords) as adapter:
        receipt = adapter.execute_streaming(call or request(), events.append)
    return receipt, [e for e in events if isinstance(e, Delta | ReasoningDelta | ToolCallDelta)]


def test_a_streamed_answer_is_read_line_by_line_even_a_line_split_across_reads() -> None:
    answer = line({"thinking": "The user"}) + line({"thinking": " greets."})
    answer += line({"content": "Hel"}) + line({"content": "lo!"})
    answer += last(done_reason="stop", prompt_eval_count=26, eval_count=282)
    cut = answer.index(b'"lo!"')
    receipt, events = streamed(Upstream(answer[:cut], answer[cut:]))
    assert [type(e).__name__ for e in events] == ["ReasoningDelta"] * 2 + ["Delta"] * 2
    assert receipt.text == "Hello!"
    assert [part.text for part in receipt.reasoning] == ["The user greets."]
    assert (receipt.finish_reason, receipt.finish) == ("stop", "stop")
    assert (receipt.usage.input_tokens, receipt.usage.output_tokens) == (26, 282)


def test_whole_tool_calls_with_and_without_ids_and_a_stop_that_made_calls() -> None:
    first = {"function": {"index": 0, "name": "weather", "arguments": {"city": "Paris"}}}
    second = {"id": "call_x1", "function": {"name": "weather", "arguments": {"city": "Oslo"}}}
    answer = line({"tool_calls": [first]}) + line({"tool_calls": [second]})
    receipt, events = streamed(Upstream(answer + last(done_reason="stop", eval_count=9)))
    assert [(c.call_id, c.name, c.arguments) for c in receipt.tool_calls] == [
        ("call_0", "weather", {"city": "Paris"}),
        ("call_x1", "weather", {"city": "Oslo"}),
    ]
    assert [e.arguments_fragment for e in events] == ["", '{"city":"Paris"}', "", '{"city":"Oslo"}']
    assert (receipt.finish_reason, receipt.finish) == ("stop", "tool_calls")
    # a prompt served wholly from the cache comes without prompt_eval_count
    assert (receipt.usage.input_tokens, receipt.usage.output_tokens) == (0, 9)


def test_done_reason_length_is_a_cut_turn_and_an_unknown_word_is_other() -> None:
    cut, _ = streamed(Upstream(line({"content": "Once"}) + last(done_reason="length")))
    assert (cut.finish_reason, cut.finish, cut.usage) == ("length", "length", None)
    loaded, _ = streamed(Upstream(last(done_reason="load")))
    assert (loaded.finish_reason, loaded.finish) == ("load", "other")


def test_the_unstreamed_answer_reads_as_the_stream_does() -> None:
    message = {
        "role": "assistant",
        "content": '{"age": 22}',
        "thinking": "Think.",
        "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Paris"}}}],
    }
    body = {
        "model": "qwen3:8b",
        "created_at": "2024-12-06T00:46:58.265747Z",
        "message": message,
        "done_reason": "stop",
        "done": True,
        "prompt_eval_count": 34,
        "eval_count": 12,
    }
    upstream = Upstream(json.dumps(body).encode(), headers={"content-type": "application/json"})
    with upstream.adapter() as adapter:
        receipt = adapter.execute(request())
    assert upstream.body["stream"] is False
    assert upstream.sent[-1].headers["accept"] == "application/json"
    assert receipt.text == '{"age": 22}'
    assert receipt.reasoning[0].text == "Think."
    assert [c.arguments for c in receipt.tool_calls] == [{"city": "Paris"}]
    assert (receipt.finish, receipt.usage.input_tokens, receipt.usage.output_tokens) == (
        "tool_calls",
        34,
        12,
    )


def failure(*pieces: bytes, status: int = 200) -> tuple[PortError, list[StreamEvent]]:
    events: list[StreamEvent] = []
    upstream = Upstream(*pieces, status=status)
    with upstream.adapter(api_key="ollama-KEY-5f2c") as adapter, pytest.raises(PortError) as caught:
        adapter.execute_streaming(request(), events.append)
    return caught.value, events


def test_an_error_line_mid_answer_fails_after_the_text_before_it() -> None:
    error, events = failure(
        line({"content": "Half"}), b'{"error":"model runner has unexpectedly stopped"}\n'
    )
    assert error.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert "model runner has unexpectedly stopped" in error.message
    assert [e.text for e in events if isinstance(e, Delta)] == ["Half"]


@pytest.mark.parametrize(
    ("pieces", "code"),
    [
        ((line({"content": "Half"}),), ErrorCode.RUNTIME_STREAM_TRUNCATED),
        (
            (line({"content": "Half"}), b'{"model":"qwen3:8b","mess'),
            ErrorCode.RUNTIME_INVALID_RESPONSE,
        ),
        ((b"not json\n",), ErrorCode.RUNTIME_INVALID_RESPONSE),
        ((b'{"message":"Hi","done":false}\n',), ErrorCode.RUNTIME_INVALID_RESPONSE),
        (
            (line({"tool_calls": [{"function": {"arguments": {}}}]}),),
            ErrorCode.RUNTIME_INVALID_RESPONSE,
        ),
        ((last(done_reason="stop", eval_count=-1),), ErrorCode.RUNTIME_INVALID_RESPONSE),
    ],
    ids=["no-done-line", "cut-line", "bad-line", "message-not-object", "call-no-name", "counts"],
)
def test_a_stream_that_is_cut_or_unreadable_is_coded(
    pieces: tuple[bytes, ...], code: ErrorCode
) -> None:
    assert failure(*pieces)[0].code == code


def test_an_http_error_carries_ollamas_text_without_the_key() -> None:
    said = b'{"error":"model \\"nope\\" not found, try pulling it first (key ollama-KEY-5f2c)"}'
    error, _ = failure(said, status=404)
    assert error.code == ErrorCode.RUNTIME_PERMANENT
    assert "try pulling it first" in error.message
    assert "ollama-KEY-5f2c" not in error.message


def test_the_request_carries_messages_tools_format_options_think_and_images() -> None:
    history = [
        Message(role="system", content="Be brief."),
        Message(
            role="user",
            content=[TextPart(text="What is here?"), ImagePart(media_type="image/png", data=PNG)],
        ),
        Message(
            role="assistant",
            content="",
            reasoning=[
                ReasoningPart(text="Look it up."),
                ReasoningPart(text="theirs", provider_metadata={"anthropic": {"signature": "s"}}),
            ],
            tool_calls=[
                ToolCall(call_id="call_0", name="weather", arguments={"city": "Paris"}),
                ToolCall(call_id="call_x1", name="weather", arguments={"city": "Oslo"}),
            ],
        ),
        Message(role="tool", content="Sunny", tool_call_id="call_x1"),
    ]
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    call = request(
        *history,
        schema=schema,
        temperature=0.2,
        max_tokens=64,
        stop="\n\n",
        options={"num_ctx": 16384, "repeat_penalty": 1.1},
        reasoning={"effort": "high"},
    )
    upstream = Upstream(last(done_reason="stop"))
    streamed(upstream, call, num_ctx=8192, options={"num_gpu": 1}, keep_alive="10m")
    body = upstream.body
    assert upstream.sent[-1].url == "http://localhost:11434/api/chat"
    assert upstream.sent[-1].headers["accept"] == "application/x-ndjson"
    assert "authorization" not in upstream.sent[-1].headers
    assert body["model"] == "qwen3:8b"
    assert body["stream"] is True
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is here?", "images": [PNG]},
        {
            "role": "assistant",
            "content": "",
            "thinking": "Look it up.",
            "tool_calls": [
                {"function": {"name": "weather", "arguments": {"city": "Paris"}}},
                {"id": "call_x1", "function": {"name": "weather", "arguments": {"city": "Oslo"}}},
            ],
        },
        {"role": "tool", "content": "Sunny", "tool_name": "weather"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Weather",
                "parameters": {"type": "object"},
            },
        }
    ]
    assert body["format"] == schema
    # the adapter's options, under the policy's (runtime_policy.options last)
    assert body["options"] == {
        "num_gpu": 1,
        "num_ctx": 16384,
        "temperature": 0.2,
        "num_predict": 64,
        "stop": ["\n\n"],
        "repeat_penalty": 1.1,
    }
    assert (body["think"], body["keep_alive"]) == ("high", "10m")


def test_a_plain_request_sends_no_optional_field_and_a_key_as_bearer() -> None:
    upstream = Upstream(last(done_reason="stop"))
    streamed(upstream, api_key="ollama-KEY-5f2c")
    assert set(upstream.body) == {"model", "messages", "stream"}
    assert upstream.sent[-1].headers["authorization"] == "Bearer ollama-KEY-5f2c"
    streamed(upstream, request(reasoning=False))
    assert upstream.body["think"] is False


@pytest.mark.parametrize(
    ("content", "policy", "code"),
    [
        ([FilePart(media_type="application/pdf", data=PDF)], {}, "CAPABILITY_UNSUPPORTED"),
        ([ImagePart(media_type="image/png", url="https://x.test/a.png")], {}, "CAPABILITY"),
        ("Hi", {"options": [1]}, "DATA_INVALID"),
        ("Hi", {"think": 3}, "DATA_INVALID"),
        ("Hi", {"keep_alive": 1.5}, "DATA_INVALID"),
    ],
    ids=["file", "image-url", "options", "think", "keep-alive"],
)
def test_what_ollama_cannot_take_is_refused_before_sending(
    content: Any, policy: dict[str, Any], code: str
) -> None:
    upstream = Upstream(last(done_reason="stop"))
    with upstream.adapter() as adapter, pytest.raises(PortError) as caught:
        adapter.execute(request(Message(role="user", content=content), **policy))
    assert code in caught.value.code
    assert upstream.sent == []


@pytest.mark.parametrize("num_ctx", [0, -4, "big", True, 2.5])
def test_num_ctx_must_be_a_positive_count(num_ctx: Any) -> None:
    with pytest.raises(ValueError, match="num_ctx"):
        OllamaChatAdapter(model="m", num_ctx=num_ctx)


def test_the_entry_point_reads_num_ctx_and_keep_alive_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUNPORT_OLLAMA_MODEL", "llama3.2")
    monkeypatch.setenv("RUNPORT_OLLAMA_NUM_CTX", "32768")
    monkeypatch.setenv("RUNPORT_OLLAMA_KEEP_ALIVE", "-1")
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    adapter = create_adapter()
    with adapter:
        sent = adapter._codec.encode(request(), stream=True)
    body = json.loads(sent.body)
    assert (body["model"], body["options"], body["keep_alive"]) == (
        "llama3.2",
        {"num_ctx": 32768},
        -1,
    )


def test_a_line_of_calls_failing_midway_delivers_the_calls_before_it() -> None:
    good = {"function": {"name": "weather", "arguments": {"city": "Paris"}}}
    error, events = failure(line({"tool_calls": [good, {"function": {"arguments": {}}}]}))
    assert error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert [e.arguments_fragment for e in events if isinstance(e, ToolCallDelta)] == [
        "",
        '{"city":"Paris"}',
    ]


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
def test_arguments_json_cannot_carry_are_an_invalid_response(number: bytes) -> None:
    """pydantic-core's reader takes ``NaN`` and the infinities on a line; as arguments they
    are refused, coded, not sent on as text no JSON reader takes."""
    bad = line({"tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]})
    error, events = failure(bad.replace(b'"x": 1', b'"x": [' + number + b"]"))
    assert error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "NaN or infinity" in error.message
    assert not [e for e in events if isinstance(e, ToolCallDelta)]


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(deadline=None, max_examples=40)
@given(arguments=st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4))
def test_whole_call_arguments_reach_the_event_and_the_receipt_unchanged(
    arguments: dict[str, Any],
) -> None:
    """The fragment is JSON text of the object the line held, and the receipt holds that
    object (taken as the line gave it, not parsed again), whatever its values."""
    body = line({"tool_calls": [{"function": {"name": "f", "arguments": arguments}}]})
    receipt, events = streamed(Upstream(body + last(done_reason="stop")))
    (call,) = receipt.tool_calls
    assert call.arguments == arguments
    assert json.loads("".join(e.arguments_fragment for e in events)) == arguments
    assert (
        call.model_dump_json()
        == ToolCall(call_id="call_0", name="f", arguments=arguments).model_dump_json()
    )
