"""What the Cohere codec sends (messages with tool plans and calls, tools, ``response_format``,
``thinking``, images) and how it reads v2 chat answers shaped as Cohere writes them: a tool
plan then calls in pieces, a thinking block then text, citations, cached usage, an ``ERROR``
finish, and the unstreamed body."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from runport.cohere import CohereChatAdapter, create_adapter
from runport.contracts import (
    CompiledInteraction,
    Delta,
    ErrorCode,
    ExecutionRequest,
    ImagePart,
    Message,
    ReasoningPart,
    StreamEvent,
    TextPart,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
)
from runport.ports import PortError

KEY = "co-KEY-7d1e"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(8)).decode()
START = {
    "id": "5f1c",
    "type": "message-start",
    "delta": {
        "message": {
            "role": "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
    },
}


def event(value: dict[str, Any]) -> bytes:
    return b"event: " + value["type"].encode() + b"\ndata: " + json.dumps(value).encode() + b"\n\n"


def delta(kind: str, message: dict[str, Any], **more: Any) -> bytes:
    return event({"type": kind, **more, "delta": {"message": message}})


def end(reason: str, **more: Any) -> bytes:
    return event({"type": "message-end", "delta": {"finish_reason": reason, **more}})


USAGE = {
    "billed_units": {"input_tokens": 119, "output_tokens": 44},
    "tokens": {"input_tokens": 1549, "output_tokens": 95},
    "cached_tokens": 1504,
}


def request(*messages: Message, **policy: Any) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test/0",
            contract_id="cohere",
            contract_version="1.0.0",
            messages=list(messages) or [Message(role="user", content="Hi")],
            output_schema=policy.pop("schema", {"type": "string"}),
            runtime_policy=policy,
            tools=[ToolSpec(name="weather", parameters={"type": "object"})],
        )
    )


class Upstream:
    def __init__(self, *pieces: bytes, status: int = 200, kind: str = "text/event-stream") -> None:
        self.pieces = pieces
        self.status = status
        self.kind = kind
        self.sent: list[httpx.Request] = []

    def __call__(self, sent: httpx.Request) -> httpx.Response:
        self.sent.append(sent)
        return httpx.Response(
            self.status, headers={"content-type": self.kind}, content=iter(self.pieces)
        )

    def adapter(self) -> CohereChatAdapter:
        client = httpx.Client(transport=httpx.MockTransport(self))
        return CohereChatAdapter(
            base_url="http://127.0.0.1:9",
            model="command-a-03-2025",
            api_key=KEY,
            http_client=client,
        )


def streamed(upstream: Upstream, call: ExecutionRequest | None = None) -> Any:
    events: list[StreamEvent] = []
    with upstream.adapter() as adapter:
        receipt = adapter.execute_streaming(call or request(), events.append)
    return receipt, events


def test_a_tool_plan_then_two_calls_in_pieces() -> None:
    stream = [event(START)]
    stream += [delta("tool-plan-delta", {"tool_plan": p}) for p in ("I will", " check.")]
    for index, (name, city) in enumerate([("weather", "Paris"), ("weather", "Oslo")]):
        call = {"id": f"weather_{index}x", "type": "function", "function": {"name": name}}
        call["function"]["arguments"] = ""
        stream.append(delta("tool-call-start", {"tool_calls": call}, index=index))
        for piece in ('{"city": "', city, '"}'):
            arguments = {"tool_calls": {"function": {"arguments": piece}}}
            stream.append(delta("tool-call-delta", arguments, index=index))
        stream.append(event({"type": "tool-call-end", "index": index}))
    stream.append(end("TOOL_CALL", usage=USAGE))
    receipt, events = streamed(Upstream(*stream))
    assert [(c.call_id, c.arguments) for c in receipt.tool_calls] == [
        ("weather_0x", {"city": "Paris"}),
        ("weather_1x", {"city": "Oslo"}),
    ]
    assert [e.arguments_fragment for e in events if isinstance(e, ToolCallDelta)][:4] == [
        "",
        '{"city": "',
        "Paris",
        '"}',
    ]
    assert [(p.text, p.provider_metadata) for p in receipt.reasoning] == [
        ("I will check.", {"cohere": {"type": "tool_plan"}})
    ]
    assert (receipt.finish_reason, receipt.finish) == ("TOOL_CALL", "tool_calls")
    usage = receipt.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (1549, 95, 1504)


def test_a_thinking_block_then_text_and_a_citation() -> None:
    thinking = {"content": {"type": "thinking", "thinking": ""}}
    text = {"content": {"type": "text", "text": ""}}
    source = {"type": "document", "id": "doc:0", "document": {"id": "doc:0", "title": "a.txt"}}
    citation = {"start": 4, "end": 9, "text": "river", "sources": [source], "type": "TEXT_CONTENT"}
    stream = [
        event(START),
        delta("content-start", thinking, index=0),
        delta("content-delta", {"content": {"thinking": "The user"}}, index=0),
        event({"type": "content-end", "index": 0}),
        delta("content-start", text, index=1),
        delta("content-delta", {"content": {"text": "The "}}, index=1),
        delta("content-delta", {"content": {"text": "river."}}, index=1),
        event({"type": "content-end", "index": 1}),
        delta("citation-start", {"citations": citation}, index=0),
        event({"type": "citation-end", "index": 0}),
        end("MAX_TOKENS", usage={"tokens": {"input_tokens": 8, "output_tokens": 50}}),
    ]
    receipt, events = streamed(Upstream(*stream))
    kinds = [type(e).__name__ for e in events if type(e).__name__ != "Complete"]
    assert kinds == ["ReasoningDelta", "Delta", "Delta", "Citation"]
    assert receipt.text == "The river."
    assert [(p.text, p.provider_metadata) for p in receipt.reasoning] == [
        ("The user", {"cohere": {"type": "thinking"}})
    ]
    [cited] = receipt.citations
    # Cohere's ``text`` is the answer's words at the span, not a passage of the source
    assert receipt.text[cited.start : cited.end] == "river"
    assert (cited.source.title, cited.cited_text, cited.start, cited.end) == (
        "a.txt",
        None,
        4,
        9,
    )
    assert (receipt.finish, receipt.usage.cache_read_tokens) == ("length", None)


def test_an_error_finish_fails_after_the_text_before_it_without_the_key() -> None:
    stream = [
        event(START),
        delta("content-delta", {"content": {"text": "Half"}}, index=0),
        end("ERROR", error=f"internal server error ({KEY})"),
    ]
    events: list[StreamEvent] = []
    with Upstream(*stream).adapter() as adapter, pytest.raises(PortError) as caught:
        adapter.execute_streaming(request(), events.append)
    assert caught.value.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert "internal server error" in caught.value.message
    assert KEY not in caught.value.message
    assert [e.text for e in events if isinstance(e, Delta)] == ["Half"]


@pytest.mark.parametrize(
    ("pieces", "code"),
    [
        ((event(START), delta("content-delta", {"content": {"text": "x"}})), "STREAM_TRUNCATED"),
        ((delta("content-delta", {"content": {"text": 3}}),), "INVALID_RESPONSE"),
        ((delta("tool-call-delta", {"tool_calls": {"function": {"arguments": "{"}}}),), "INVALID"),
        ((end("COMPLETE", usage={"tokens": {"input_tokens": "many"}}),), "INVALID_RESPONSE"),
    ],
    ids=["no-message-end", "text-not-string", "delta-of-no-call", "usage"],
)
def test_a_stream_that_is_cut_or_unreadable_is_coded(pieces: tuple[bytes, ...], code: str) -> None:
    with Upstream(*pieces).adapter() as adapter, pytest.raises(PortError) as caught:
        adapter.execute_streaming(request(), lambda event: None)
    assert code in caught.value.code


def test_the_unstreamed_answer_reads_as_the_stream_does() -> None:
    body = {
        "id": "f201",
        "message": {
            "role": "assistant",
            "tool_plan": "I will use the weather tool.",
            "tool_calls": [
                {
                    "id": "weather_dq",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"location":"Paris"}'},
                }
            ],
        },
        "finish_reason": "TOOL_CALL",
        "usage": USAGE,
    }
    upstream = Upstream(json.dumps(body).encode(), kind="application/json")
    with upstream.adapter() as adapter:
        receipt = adapter.execute(request())
    assert json.loads(upstream.sent[-1].content)["stream"] is False
    assert [(c.call_id, c.arguments) for c in receipt.tool_calls] == [
        ("weather_dq", {"location": "Paris"})
    ]
    assert receipt.reasoning[0].text == "I will use the weather tool."
    assert (receipt.finish, receipt.usage.cache_read_tokens) == ("tool_calls", 1504)


def test_an_http_error_carries_cohere_s_message() -> None:
    said = json.dumps({"id": "e1", "message": "invalid api token"}).encode()
    upstream = Upstream(said, status=401, kind="application/json")
    with upstream.adapter() as adapter, pytest.raises(PortError) as caught:
        adapter.execute(request())
    assert caught.value.code == ErrorCode.RUNTIME_PERMANENT
    assert "invalid api token" in caught.value.message


def test_the_request_carries_plans_calls_results_images_format_and_thinking() -> None:
    history = [
        Message(role="system", content="Be brief."),
        Message(
            role="user",
            content=[TextPart(text="Where?"), ImagePart(media_type="image/png", data=PNG)],
        ),
        Message(
            role="assistant",
            content="",
            reasoning=[
                ReasoningPart(text="Think.", provider_metadata={"cohere": {"type": "thinking"}}),
                ReasoningPart(text="Plan.", provider_metadata={"cohere": {"type": "tool_plan"}}),
                ReasoningPart(text="theirs", provider_metadata={"anthropic": {"signature": "s"}}),
            ],
            tool_calls=[ToolCall(call_id="weather_1", name="weather", arguments={"city": "Oslo"})],
        ),
        Message(role="tool", content="Sunny", tool_call_id="weather_1"),
    ]
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    call = request(
        *history, schema=schema, top_p=0.9, top_k=40, stop="END", reasoning={"budget_tokens": 512}
    )
    upstream = Upstream(event(START), end("COMPLETE"))
    streamed(upstream, call)
    sent = upstream.sent[-1]
    assert sent.url == "http://127.0.0.1:9/v2/chat"
    default = CohereChatAdapter(model="command-a-03-2025")
    assert "url='https://api.cohere.com/v2/chat'" in repr(default)
    default.close()
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = json.loads(sent.content)
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Where?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ],
        },
        {
            "role": "assistant",
            "tool_plan": "Plan.",
            "content": [{"type": "thinking", "thinking": "Think."}],
            "tool_calls": [
                {
                    "id": "weather_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "weather_1", "content": "Sunny"},
    ]
    assert body["tools"] == [
        {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
    ]
    assert body["response_format"] == {"type": "json_object", "json_schema": schema}
    assert (body["p"], body["k"], body["stop_sequences"]) == (0.9, 40, ["END"])
    assert body["thinking"] == {"type": "enabled", "token_budget": 512}
    assert body["stream"] is True


def test_the_entry_point_reads_the_key_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CO_API_KEY", KEY)
    monkeypatch.setenv("RUNPORT_COHERE_MODEL", "command-r7b-12-2024")
    with create_adapter() as adapter:
        assert adapter.descriptor().model == "command-r7b-12-2024"
        assert KEY not in repr(adapter)
