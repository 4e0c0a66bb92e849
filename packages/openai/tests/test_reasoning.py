"""Reasoning from OpenAI-compatible servers (docs/providers.md): every dialect's
field streamed as ``ReasoningDelta`` and kept in ``receipt.reasoning``, never in the answer;
streamed and unstreamed receipts equal (law 2); the bound counts it; a cut stream fails once.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.conformance.providers import make_request, run_streamed
from runport.contracts import (
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.core import build_receipt, parse_json_text
from runport.openai import OpenAIChatAdapter

from .openai_upstream import (
    LoopbackUpstream,
    Reply,
    Reset,
    chunk,
    completion,
    finish_chunk,
    role_chunk,
    sse,
    text_chunk,
    usage_chunk,
)

REQUEST = make_request({"type": ["object", "array", "string", "number", "boolean", "null"]})
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

DIALECTS = ("reasoning_content", "deepseek", "reasoning", "openrouter", "details", "mistral")
"""How a server streams reasoning: ``reasoning_content`` alone (vLLM, SGLang, Qwen), beside a
null ``content`` (DeepSeek), ``reasoning`` (Groq, Ollama), ``reasoning`` with the same text in
``reasoning_details`` (OpenRouter), ``reasoning_details`` alone, Mistral's ``thinking`` parts."""

SIGNATURE = {"type": "reasoning.text", "signature": "sig-Zx81", "index": 0}
"""OpenRouter's last ``reasoning_details`` piece of a block: its signature, no text."""


def reasoning_delta(dialect: str, piece: str) -> dict[str, Any]:
    if dialect == "reasoning_content":
        return {"reasoning_content": piece}
    if dialect == "deepseek":
        return {"content": None, "reasoning_content": piece}
    if dialect == "reasoning":
        return {"reasoning": piece}
    entry = {"type": "reasoning.text", "text": piece, "index": 0, "format": "unknown"}
    if dialect == "openrouter":
        return {
            "role": "assistant",
            "content": "",
            "reasoning": piece,
            "reasoning_details": [entry],
        }
    if dialect == "details":
        return {"reasoning_details": [entry]}
    return {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": piece}]}]}


def whole_reasoning(dialect: str, text: str) -> dict[str, Any]:
    """The same reasoning in an unstreamed ``message``."""
    entry = {"type": "reasoning.text", "text": text, "index": 0, "format": "unknown"}
    signed = {**entry, "signature": SIGNATURE["signature"]}
    if dialect in ("reasoning_content", "deepseek"):
        return {"reasoning_content": text}
    if dialect == "reasoning":
        return {"reasoning": text}
    if dialect == "openrouter":
        return {"reasoning": text, "reasoning_details": [signed]}
    if dialect == "details":
        return {"reasoning_details": [signed]}
    return {}  # Mistral's go in ``content``


def metadata(dialect: str, text: str) -> dict[str, Any]:
    signed = {
        "type": "reasoning.text",
        "text": text,
        "index": 0,
        "format": "unknown",
        "signature": SIGNATURE["signature"],
    }
    if dialect in ("reasoning_content", "deepseek"):
        return {"openai": {"field": "reasoning_content"}}
    if dialect == "reasoning":
        return {"openai": {"field": "reasoning"}}
    if dialect == "openrouter":
        return {"openai": {"field": "reasoning"}, "openrouter": {"reasoning_details": [signed]}}
    if dialect == "details":
        return {"openrouter": {"reasoning_details": [signed]}}
    return {"openai": {"field": "thinking"}}


@dataclass(frozen=True)
class Turn:
    """Reasoning in pieces, then text in pieces or one tool call's arguments in pieces."""

    dialect: str
    reasoning: tuple[str, ...]
    text: tuple[str, ...]
    call: tuple[str, ...] | None  # the call's argument fragments
    finish: str
    reasoning_tokens: int

    def frames(self) -> list[dict[str, Any]]:
        frames = [role_chunk()]
        frames += [chunk(reasoning_delta(self.dialect, piece)) for piece in self.reasoning]
        if self.dialect in ("openrouter", "details"):
            frames.append(chunk({"reasoning_details": [SIGNATURE]}))
        frames += [text_chunk(piece) for piece in self.text]
        for number, fragment in enumerate(self.call or ()):
            entry: dict[str, Any] = {"index": 0, "function": {"arguments": fragment}}
            if number == 0:
                entry = {**entry, "id": "call_r1", "type": "function"}
                entry["function"] = {"name": "get_weather", "arguments": fragment}
            frames.append(chunk({"tool_calls": [entry]}))
        frames.append(finish_chunk(self.finish))
        frames.append(self.usage_chunk())
        return frames

    def usage_chunk(self) -> dict[str, Any]:
        usage = usage_chunk(9, 40)
        usage["usage"]["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        return usage

    def completion(self) -> dict[str, Any]:
        joined = "".join(self.reasoning)
        calls = None if self.call is None else [("call_r1", "get_weather", "".join(self.call))]
        body = completion("".join(self.text) or None, calls, finish=self.finish, usage=(9, 40))
        message = body["choices"][0]["message"]
        message.update(whole_reasoning(self.dialect, joined))
        if self.dialect == "mistral":
            thinking = {"type": "thinking", "thinking": [{"type": "text", "text": joined}]}
            answer = [{"type": "text", "text": message["content"]}] if message["content"] else []
            message["content"] = [thinking, *answer]
        body["usage"] = self.usage_chunk()["usage"]
        return body

    def expected_events(self) -> list[StreamEvent]:
        events: list[StreamEvent] = [ReasoningDelta(text=piece) for piece in self.reasoning]
        events += [Delta(text=piece) for piece in self.text]
        for fragment in self.call or ():
            events.append(
                ToolCallDelta(
                    index=0, call_id="call_r1", name="get_weather", arguments_fragment=fragment
                )
            )
        return events

    def expected_receipt(
        self, request: ExecutionRequest, adapter: OpenAIChatAdapter
    ) -> ExecutionReceipt:
        joined = "".join(self.reasoning)
        calls = []
        if self.call is not None:
            arguments = parse_json_text("".join(self.call))[1]
            calls = [ToolCall(call_id="call_r1", name="get_weather", arguments=arguments)]
        return build_receipt(
            request,
            adapter=adapter.descriptor(),
            text="".join(self.text),
            tool_calls=calls,
            finish_reason=self.finish,
            usage=Usage(input_tokens=9, output_tokens=40, reasoning_tokens=self.reasoning_tokens),
            reasoning=[
                ReasoningPart(text=joined, provider_metadata=metadata(self.dialect, joined))
            ],
        )


@st.composite
def pieces(draw: st.DrawFn, text: str) -> tuple[str, ...]:
    """``text`` cut into non-empty pieces at arbitrary code-point boundaries."""
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=6)))
    bounds = [0, *(cut for cut in cuts if 0 < cut < len(text)), len(text)]
    return tuple(text[a:b] for a, b in itertools.pairwise(bounds) if b > a)


@st.composite
def turns(draw: st.DrawFn, then: str | None = None) -> Turn:
    dialect = draw(st.sampled_from(DIALECTS))
    reasoning = draw(pieces(draw(st.text(min_size=1, max_size=40))))
    then = then or draw(st.sampled_from(["text", "call"]))
    text: tuple[str, ...] = ()
    call = None
    if then == "text":
        answer = draw(st.text(max_size=30))
        text = draw(pieces(answer)) if answer else ()
    else:
        arguments = json.dumps({"city": draw(st.text(max_size=12))}, ensure_ascii=False)
        call = draw(pieces(arguments))
    return Turn(
        dialect=dialect,
        reasoning=reasoning,
        text=text,
        call=call,
        finish="stop" if call is None else "tool_calls",
        reasoning_tokens=draw(st.integers(0, 500)),
    )


@pytest.fixture(scope="module")
def loopback() -> Iterator[tuple[LoopbackUpstream, OpenAIChatAdapter]]:
    server = LoopbackUpstream()
    with OpenAIChatAdapter(base_url=server.base_url, model="m") as adapter:
        yield server, adapter
    server.close()


def _check(loopback: tuple[LoopbackUpstream, OpenAIChatAdapter], turn: Turn) -> None:
    server, adapter = loopback
    server.queue(Reply([sse(turn.frames())]), Reply.json(turn.completion()))
    outcome = run_streamed(adapter, REQUEST)  # one terminal, law 3 (reasoning joined) inside
    expected = turn.expected_receipt(REQUEST, adapter)
    assert outcome.receipt == expected
    assert outcome.events[:-1] == turn.expected_events()  # no empty ReasoningDelta, in order
    assert outcome.receipt.text == ("".join(turn.text) or None)  # never the reasoning
    assert adapter.execute(REQUEST) == expected  # law 2


@SETTINGS
@given(turn=turns("text"))
def test_reasoning_then_text_in_any_fragmentation(
    loopback: tuple[LoopbackUpstream, OpenAIChatAdapter], turn: Turn
) -> None:
    _check(loopback, turn)


@SETTINGS
@given(turn=turns("call"))
def test_reasoning_then_a_tool_call_in_any_fragmentation(
    loopback: tuple[LoopbackUpstream, OpenAIChatAdapter], turn: Turn
) -> None:
    _check(loopback, turn)


@SETTINGS
@given(turn=turns(), data=st.data())
def test_reasoning_split_across_any_reads(
    loopback: tuple[LoopbackUpstream, OpenAIChatAdapter], turn: Turn, data: st.DataObject
) -> None:
    """The same turn's bytes cut anywhere, each piece one HTTP chunk."""
    server, adapter = loopback
    body = sse(turn.frames())
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=12)))
    server.queue(Reply([body[a:b] for a, b in itertools.pairwise([0, *cuts, len(body)])]))
    outcome = run_streamed(adapter, REQUEST)
    assert outcome.receipt == turn.expected_receipt(REQUEST, adapter)
    assert outcome.events[:-1] == turn.expected_events()


def test_a_reasoning_content_stream_as_deepseek_sends_it(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    thoughts = ["The user", " wants", " a greeting."]
    frames = [role_chunk()]
    frames += [chunk({"content": None, "reasoning_content": piece}) for piece in thoughts]
    frames += [chunk({"content": "Hello", "reasoning_content": None}), finish_chunk()]
    upstream.queue(Reply([sse(frames)]))
    outcome = run_streamed(adapter, make_request())
    assert [e.text for e in outcome.events if isinstance(e, ReasoningDelta)] == thoughts
    assert outcome.deltas == ["Hello"]
    assert outcome.receipt is not None
    assert outcome.receipt.text == "Hello"
    assert outcome.receipt.reasoning == [
        ReasoningPart(
            text="The user wants a greeting.",
            provider_metadata={"openai": {"field": "reasoning_content"}},
        )
    ]


def test_empty_reasoning_fields_are_no_events_and_no_block(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    frames = [
        chunk({"content": "", "reasoning_content": ""}),
        chunk({"reasoning": "", "reasoning_details": []}),
        text_chunk("Hi"),
        finish_chunk(),
    ]
    upstream.queue(Reply([sse(frames)]))
    outcome = run_streamed(adapter, make_request())
    assert [e.kind for e in outcome.events] == ["Delta", "Complete"]
    assert outcome.receipt is not None
    assert outcome.receipt.reasoning is None


def test_a_server_sending_both_field_names_is_read_once(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    """A server keeping the old name beside the new one (the same text in both)."""
    frames = [chunk({"reasoning_content": p, "reasoning": p}) for p in ("a", "b")]
    upstream.queue(Reply([sse([*frames, text_chunk("c"), finish_chunk()])]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert [part.text for part in outcome.receipt.reasoning or []] == ["ab"]


def test_encrypted_reasoning_details_are_kept_without_an_event(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    encrypted = {"type": "reasoning.encrypted", "data": "gAAAAB-opaque", "index": 0}
    frames = [chunk({"reasoning_details": [encrypted]}), text_chunk("Done."), finish_chunk()]
    upstream.queue(Reply([sse(frames)]))
    outcome = run_streamed(adapter, make_request())
    assert [e.kind for e in outcome.events] == ["Delta", "Complete"]
    assert outcome.receipt is not None
    assert outcome.receipt.reasoning == [
        ReasoningPart(text="", provider_metadata={"openrouter": {"reasoning_details": [encrypted]}})
    ]


def test_reasoning_tokens_are_usage_and_zero_is_left_out(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    def usage(reasoning: int) -> dict[str, Any]:
        frame = usage_chunk(7, 30)
        frame["usage"]["completion_tokens_details"] = {"reasoning_tokens": reasoning}
        return frame

    upstream.queue(
        Reply([sse([text_chunk("a"), finish_chunk(), usage(24)])]),
        Reply([sse([text_chunk("a"), finish_chunk(), usage(0)])]),
    )
    first = run_streamed(adapter, make_request()).receipt
    second = run_streamed(adapter, make_request()).receipt
    assert first is not None
    assert second is not None
    assert first.usage == Usage(input_tokens=7, output_tokens=30, reasoning_tokens=24)
    assert second.usage == Usage(input_tokens=7, output_tokens=30)


@pytest.mark.parametrize(
    "delta",
    [
        {"reasoning_content": 5},
        {"reasoning": ["a"]},
        {"reasoning_details": "text"},
        {"reasoning_details": ["text"]},
        {"reasoning_details": [{"type": "reasoning.text", "text": 3}]},
        {"content": [{"type": "thinking", "thinking": 7}]},
    ],
)
def test_malformed_reasoning_is_an_invalid_response(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, delta: dict[str, Any]
) -> None:
    upstream.queue(Reply([sse([chunk({"reasoning_content": "ok"}), chunk(delta)])]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert [e.kind for e in outcome.events] == ["ReasoningDelta", "Failed"]


def test_reasoning_past_max_response_bytes_fails_with_the_bound_code(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    frames = [sse([chunk({"reasoning_content": "x" * 64})], done=False) for _ in range(64)]
    upstream.queue(Reply([*frames, sse([text_chunk("late"), finish_chunk()])]))  # a chunk each
    outcome = run_streamed(adapter, make_request(runtime_policy={"max_response_bytes": 2048}))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE
    assert outcome.deltas == []  # the answer never came
    assert 0 < sum(isinstance(e, ReasoningDelta) for e in outcome.events) < 64


def test_a_stream_cut_before_done_after_reasoning_is_truncation(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    frames = [role_chunk(), chunk({"reasoning_content": "Let me"}), chunk({"reasoning": " see"})]
    upstream.queue(Reply([sse(frames, done=False)]))
    outcome = run_streamed(adapter, make_request())  # exactly one terminal, checked inside
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED
    assert [e.kind for e in outcome.events] == ["ReasoningDelta", "ReasoningDelta", "Failed"]


def test_a_reset_after_reasoning_before_done_is_unavailable(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    frames = [chunk({"reasoning_content": "Let me"}), finish_chunk()]
    upstream.queue(Reply([sse(frames, done=False), Reset()]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert [e.kind for e in outcome.events] == ["ReasoningDelta", "Failed"]


def test_reasoning_interleaved_with_the_answer_is_one_block_of_the_turn(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    """Chat completions marks no block boundaries: every piece of a turn's reasoning is one
    part, as the unstreamed message's one field is."""
    frames = [
        chunk({"reasoning_content": "first"}),
        text_chunk("Answer"),
        chunk({"reasoning_content": " then more"}),
        finish_chunk(),
    ]
    upstream.queue(Reply([sse(frames)]))
    outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.text == "Answer"
    assert [part.text for part in outcome.receipt.reasoning or []] == ["first then more"]
