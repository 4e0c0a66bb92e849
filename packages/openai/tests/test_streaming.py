"""What real OpenAI-compatible servers send (docs/providers.md), over real HTTP on 127.0.0.1, each
with the
streaming law checked by ``run_streamed``."""

from __future__ import annotations

import json

import httpx
import pytest

from runport.conformance.providers import make_request, run_streamed
from runport.contracts import ErrorCode, ToolCall, ToolCallDelta, Usage
from runport.openai import OpenAIChatAdapter

from .openai_upstream import (
    OBJECT_SCHEMA,
    ChunkedBody,
    LoopbackUpstream,
    Part,
    Reply,
    Stall,
    chunk,
    completion,
    finish_chunk,
    role_chunk,
    sse,
    text_chunk,
    tool_chunk,
    usage_chunk,
)

HELLO = [role_chunk(), text_chunk("Hel"), text_chunk("lo"), finish_chunk(), usage_chunk()]


def test_text_stream_assembles_and_completes(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse(HELLO)]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.deltas == ["Hel", "lo"]  # the role-only chunk yields nothing
    assert outcome.receipt is not None
    assert outcome.receipt.text == "Hello"
    assert outcome.receipt.output == "Hello"
    assert outcome.receipt.output_schema_valid is True
    assert outcome.receipt.finish_reason == "stop"
    assert outcome.receipt.usage == Usage(input_tokens=7, output_tokens=3)
    assert outcome.receipt.adapter.id == "openai-chat"


def test_each_frame_is_its_own_http_chunk(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    frames: list[Part] = [sse([item], done=False) for item in HELLO]
    frames.append(b"data: [DONE]\n\n")
    upstream.queue(Reply(frames))
    assert run_streamed(adapter, make_request()).deltas == ["Hel", "lo"]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("space", [True, False], ids=["data: ", "data:"])
def test_line_endings_and_data_prefixes(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, newline: str, space: bool
) -> None:
    upstream.queue(Reply([sse(HELLO, newline=newline, space=space)]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.text == "Hello"


def test_comments_and_keep_alives_are_ignored(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    body = sse(
        [
            b": OPENROUTER PROCESSING\n\n",
            role_chunk(),
            b":\n\n",
            text_chunk("a"),
            b": keep-alive\r\n\r\n",
            b"id: 7\nretry: 1000\n\n",
            finish_chunk(),
        ]
    )
    upstream.queue(Reply([body]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.deltas == ["a"]


def test_chunks_with_empty_choices_carry_usage_or_filter_results(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    filters = {"id": "x", "choices": [], "prompt_filter_results": [{"prompt_index": 0}]}
    no_choices = {"id": "x", "object": "chat.completion.chunk"}
    body = sse([filters, no_choices, text_chunk("ok"), finish_chunk(), usage_chunk(11, 2)])
    upstream.queue(Reply([body]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.usage == Usage(input_tokens=11, output_tokens=2)


def test_finish_reason_null_then_done_completes_without_finish_reason(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse([text_chunk("hi")], done=True)]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.text == "hi"
    assert outcome.receipt.finish_reason is None  # never invented


def test_finish_reason_then_eof_completes_without_usage(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse([text_chunk("hi"), finish_chunk("length")], done=False)]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.finish_reason == "length"
    assert outcome.receipt.usage is None


def test_usage_after_finish_reason_is_read(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(
        Reply([sse([text_chunk("hi"), finish_chunk()], done=False), sse([usage_chunk()])])
    )
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.usage == Usage(input_tokens=7, output_tokens=3)


def test_stall_after_finish_reason_before_done_times_out(
    upstream: LoopbackUpstream, stalling_adapter: OpenAIChatAdapter
) -> None:
    """A finish reason is not the completion marker: a stall before ``[DONE]`` is a stall."""
    upstream.queue(Reply([sse([text_chunk("hi"), finish_chunk()], done=False), Stall()]))
    outcome = run_streamed(stalling_adapter, make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_TIMEOUT
    upstream.release()


def test_stall_after_done_still_completes(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse([text_chunk("hi"), finish_chunk()], done=True), Stall()]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.text == "hi"
    upstream.release()


def test_tool_call_id_and_name_only_on_the_first_fragment(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    body = sse(
        [
            role_chunk(),
            tool_chunk(0, call_id="call_abc", name="get_weather", arguments=""),
            tool_chunk(0, arguments='{"ci'),
            tool_chunk(0, arguments='ty": "Oslo"}'),
            finish_chunk("tool_calls"),
        ]
    )
    upstream.queue(Reply([body]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.tool_deltas == [
        ToolCallDelta(index=0, call_id="call_abc", name="get_weather", arguments_fragment=""),
        ToolCallDelta(index=0, call_id="call_abc", name="get_weather", arguments_fragment='{"ci'),
        ToolCallDelta(
            index=0, call_id="call_abc", name="get_weather", arguments_fragment='ty": "Oslo"}'
        ),
    ]
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == [
        ToolCall(call_id="call_abc", name="get_weather", arguments={"city": "Oslo"})
    ]
    assert outcome.receipt.output is None
    assert outcome.receipt.output_schema_valid is None
    assert outcome.receipt.finish_reason == "tool_calls"


def test_tool_call_fragments_repeating_id_name_and_legacy_function_call(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    """llama.cpp's shape: every fragment repeats id, type and name beside a legacy field."""

    def fragment(arguments: str) -> dict[str, object]:
        return chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "abc",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": arguments},
                    }
                ],
                "function_call": {"name": "get_weather", "arguments": arguments},
            }
        )

    upstream.queue(Reply([sse([fragment('{"city":'), fragment('"Oslo"}'), finish_chunk()])]))
    outcome = run_streamed(adapter, make_request())
    assert [d.arguments_fragment for d in outcome.tool_deltas] == ['{"city":', '"Oslo"}']
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == [
        ToolCall(call_id="abc", name="get_weather", arguments={"city": "Oslo"})
    ]


def test_interleaved_calls_in_index_order_0_2_1(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    body = sse(
        [
            tool_chunk(0, call_id="a", name="f", arguments="[1"),
            tool_chunk(2, call_id="c", name="h", arguments="[3"),
            tool_chunk(1, call_id="b", name="g", arguments="[2"),
            tool_chunk(2, arguments="]"),
            tool_chunk(0, arguments="]"),
            tool_chunk(1, arguments="]"),
            finish_chunk("tool_calls"),
        ]
    )
    upstream.queue(Reply([body]))
    outcome = run_streamed(adapter, make_request())
    assert [(d.index, d.arguments_fragment) for d in outcome.tool_deltas] == [
        (0, "[1"),
        (2, "[3"),
        (1, "[2"),
        (2, "]"),
        (0, "]"),
        (1, "]"),
    ]
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == [
        ToolCall(call_id="a", name="f", arguments=[1]),
        ToolCall(call_id="b", name="g", arguments=[2]),
        ToolCall(call_id="c", name="h", arguments=[3]),
    ]


def test_a_call_without_an_id_is_call_index_and_waits_for_its_name(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    body = sse(
        [
            tool_chunk(3, arguments='{"a"'),
            tool_chunk(3, name="f", arguments=":"),
            tool_chunk(3, call_id="late-id", arguments="1}"),
            finish_chunk("tool_calls"),
        ]
    )
    upstream.queue(Reply([body]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.tool_deltas == [
        ToolCallDelta(index=3, call_id="call_3", name="f", arguments_fragment='{"a":'),
        ToolCallDelta(index=3, call_id="call_3", name="f", arguments_fragment="1}"),
    ]
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == [ToolCall(call_id="call_3", name="f", arguments={"a": 1})]


def test_unparseable_arguments_are_kept_as_text(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    body = sse([tool_chunk(0, call_id="a", name="f", arguments="{oops"), finish_chunk()])
    upstream.queue(Reply([body]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.tool_calls == [ToolCall(call_id="a", name="f", arguments="{oops")]


def test_text_and_tool_calls_in_one_turn(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    body = sse(
        [
            text_chunk("Let me look."),
            tool_chunk(0, call_id="a", name="f", arguments="{}"),
            finish_chunk("tool_calls"),
        ]
    )
    upstream.queue(Reply([body]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.text == "Let me look."
    assert outcome.receipt.output == "Let me look."
    assert outcome.receipt.output_schema_valid is None


def test_structured_output_follows_the_text_structured_rule(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(
        Reply([sse([text_chunk('{"ans'), text_chunk('wer": 42}'), finish_chunk()])]),
        Reply([sse([text_chunk("not json"), finish_chunk()])]),
    )
    good = run_streamed(adapter, make_request(OBJECT_SCHEMA))
    assert good.receipt is not None
    assert good.receipt.output == {"answer": 42}
    assert good.receipt.output_schema_valid is True
    bad = run_streamed(adapter, make_request(OBJECT_SCHEMA))
    assert bad.receipt is not None
    assert bad.receipt.output == "not json"
    assert bad.receipt.output_schema_valid is False


def test_a_refusal_is_kept_as_the_turns_text(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    body = sse([chunk({"refusal": "I can't"}), chunk({"refusal": " help."}), finish_chunk()])
    upstream.queue(Reply([body]))
    outcome = run_streamed(adapter, make_request(OBJECT_SCHEMA))
    assert outcome.receipt is not None
    assert outcome.receipt.text == "I can't help."
    assert outcome.receipt.output_schema_valid is False


def test_reasoning_content_is_not_text(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    body = sse([chunk({"reasoning_content": "hmm"}), text_chunk("42"), finish_chunk()])
    upstream.queue(Reply([body]))
    assert run_streamed(adapter, make_request()).deltas == ["42"]


def test_utf8_split_across_reads() -> None:
    body = sse([text_chunk("héllo 🌍 wörld"), finish_chunk()])
    cut = body.index("🌍".encode()) + 2  # inside the four-byte sequence
    accent = body.index("é".encode()) + 1
    reads = [body[:accent], body[accent:cut], body[cut:]]
    with httpx.Client(transport=ChunkedBody(reads)) as client:
        adapter = OpenAIChatAdapter(
            base_url="http://upstream.test/v1", model="m", http_client=client
        )
        outcome = run_streamed(adapter, make_request())
    assert outcome.deltas == ["héllo 🌍 wörld"]


def test_utf8_split_across_http_chunks(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    body = sse([text_chunk("日本語"), finish_chunk()])
    middle = body.index("本".encode()) + 1
    upstream.queue(Reply([body[:middle], body[middle:]]))
    assert run_streamed(adapter, make_request()).deltas == ["日本語"]


@pytest.mark.parametrize("framing", ["length", "close"])
def test_bodies_framed_by_length_or_by_close(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, framing: str
) -> None:
    upstream.queue(Reply([sse(HELLO)], framing=framing))  # type: ignore[arg-type]
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.text == "Hello"


def test_a_server_that_ignores_stream_true_still_streams_its_answer(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply.json(completion("whole", [("c1", "f", '{"x":1}')], finish="tool_calls")))
    outcome = run_streamed(adapter, make_request())
    assert outcome.deltas == ["whole"]
    assert [(d.call_id, d.arguments_fragment) for d in outcome.tool_deltas] == [("c1", '{"x":1}')]


def test_execute_and_execute_streaming_agree(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    calls = [("c1", "get_weather", '{"city":"Oslo"}'), ("c2", "get_time", "{}")]
    streamed_body = sse(
        [
            role_chunk(),
            text_chunk("Checking"),
            tool_chunk(0, call_id="c1", name="get_weather", arguments='{"city":'),
            tool_chunk(1, call_id="c2", name="get_time", arguments="{}"),
            tool_chunk(0, arguments='"Oslo"}'),
            finish_chunk("tool_calls"),
            usage_chunk(),
        ]
    )
    upstream.queue(
        Reply([streamed_body]), Reply.json(completion("Checking", calls, finish="tool_calls"))
    )
    streamed = run_streamed(adapter, make_request()).receipt
    assert streamed == adapter.execute(make_request())


def test_the_request_goes_to_chat_completions_with_stream_options(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([sse(HELLO)]), Reply.json(completion("Hello")))
    run_streamed(adapter, make_request())
    adapter.execute(make_request())
    streamed, plain = upstream.requests
    assert streamed.path == plain.path == "/v1/chat/completions"
    assert streamed.body["stream"] is True
    assert streamed.body["stream_options"] == {"include_usage": True}
    assert streamed.headers["accept"] == "text/event-stream"
    assert "stream" not in plain.body
    assert "stream_options" not in plain.body
    assert streamed.headers["authorization"] == plain.headers["authorization"]
    assert streamed.headers["authorization"].startswith("Bearer sk-test-")
    assert json.dumps(streamed.body["messages"]) == json.dumps(
        [{"role": "user", "content": "Say hello."}]
    )


def test_the_adapter_is_reusable_after_every_outcome(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    upstream.queue(Reply([b"data: garbage\n\n"]), Reply(status=500), Reply([sse(HELLO)]))
    assert run_streamed(adapter, make_request()).error is not None
    assert run_streamed(adapter, make_request()).error is not None
    assert run_streamed(adapter, make_request()).receipt is not None


def test_thousands_of_tiny_fragments(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    words = [f"w{n} " for n in range(1500)]
    numbers = [f"{n}," for n in range(700)]
    frames = [text_chunk(word) for word in words]
    frames += [tool_chunk(0, arguments="[")]  # arguments before the name: held, then announced
    frames += [tool_chunk(0, arguments=number) for number in numbers]
    frames += [tool_chunk(0, call_id="c", name="f", arguments="0]"), finish_chunk()]
    upstream.queue(Reply([sse(frames)]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.text == "".join(words)
    assert outcome.tool_deltas[0].arguments_fragment == "[" + "".join(numbers) + "0]"
    assert outcome.receipt.tool_calls == [
        ToolCall(call_id="c", name="f", arguments=[*range(700), 0])
    ]


def test_execute_reads_an_event_stream_answer_too(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    """A server that streams even when not asked to is still understood."""
    upstream.queue(Reply([sse(HELLO)]))
    receipt = adapter.execute(make_request())
    assert receipt.text == "Hello"
    assert receipt.usage == Usage(input_tokens=7, output_tokens=3)


def test_named_events_other_than_message_and_error_are_skipped(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    body = sse([role_chunk(), b"event: ping\ndata: hello\n\n", text_chunk("a"), finish_chunk()])
    upstream.queue(Reply([body]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.deltas == ["a"]


def test_a_usage_object_without_counts_invents_no_usage(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    empty_usage = {**usage_chunk(), "usage": {}}
    upstream.queue(Reply([sse([role_chunk(), text_chunk("a"), finish_chunk(), empty_usage])]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.usage is None


def test_a_base_url_with_a_query_keeps_it_a_query(upstream: LoopbackUpstream) -> None:
    upstream.queue(Reply([sse(HELLO)]))
    with OpenAIChatAdapter(
        base_url=upstream.base_url + "/?api-version=2024-06-01", model="m"
    ) as adapter:
        run_streamed(adapter, make_request())
    (recorded,) = upstream.requests
    assert recorded.path.endswith("/chat/completions?api-version=2024-06-01")
