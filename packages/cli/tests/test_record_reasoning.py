"""``runport record`` turns streamed reasoning into ``reasoning_delta`` events with each block's
signature, and refuses a stream whose reasoning is not its receipt's."""

from __future__ import annotations

from typing import Any

import pytest

from runport.cli._errors import CliError
from runport.cli._record import comparable, redact_answer, redacted_blocks, turn_events
from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    Usage,
)

ADAPTER = AdapterDescriptor(id="anthropic", version="1", capabilities=["text"])


def receipt(*parts: ReasoningPart, text: str = "ok") -> ExecutionReceipt:
    return ExecutionReceipt(
        adapter=ADAPTER,
        request_fingerprint="0" * 64,
        output=text,
        output_fingerprint="1" * 64,
        output_schema_valid=True,
        text=text,
        reasoning=list(parts) or None,
        usage=Usage(input_tokens=1, output_tokens=9, reasoning_tokens=5),
    )


def anthropic(text: str, signature: str) -> ReasoningPart:
    return ReasoningPart(
        text=text, provider_metadata={"anthropic": {"type": "thinking", "signature": signature}}
    )


REDACTED = ReasoningPart(
    provider_metadata={"anthropic": {"type": "redacted_thinking", "data": "opaque"}}
)


def stream(*pieces: str | StreamEvent, final: ExecutionReceipt) -> list[StreamEvent]:
    events: list[StreamEvent] = [
        ReasoningDelta(text=piece) if isinstance(piece, str) else piece for piece in pieces
    ]
    return [*events, Complete(receipt=final)]


def test_each_block_ends_with_its_providers_signature() -> None:
    final = receipt(
        anthropic("one two", "s1"),
        REDACTED,
        ReasoningPart(text="three", provider_metadata={"gemini": {"thoughtSignature": "g"}}),
        ReasoningPart(text="four", provider_metadata={"openai": {"field": "reasoning"}}),
    )
    events = stream("one ", "two", "three", Delta(text="ok"), "four", final=final)

    assert turn_events(events) == [
        {"kind": "reasoning_delta", "text": "one "},
        {"kind": "reasoning_delta", "text": "two", "signature": "s1"},
        {"kind": "reasoning_delta", "text": "three", "signature": "g"},
        {"kind": "delta", "text": "ok"},
        {"kind": "reasoning_delta", "text": "four"},
        {"kind": "usage", "input_tokens": 1, "output_tokens": 9, "reasoning_tokens": 5},
        {"kind": "finish"},
    ]
    assert redacted_blocks(final) == 1


def test_the_replay_is_compared_on_reasoning_text_and_signatures() -> None:
    live = receipt(anthropic("one two", "s1"), REDACTED, ReasoningPart(text="three"))
    mock = {"mock": {"signature": "s1"}}
    replayed = receipt(ReasoningPart(text="one two", provider_metadata=mock), ReasoningPart(
        text="three"))  # fmt: skip
    merged = receipt(ReasoningPart(text="one twothree", provider_metadata=mock))
    assert comparable(live) == comparable(replayed) == comparable(merged)
    assert comparable(live) != comparable(receipt(ReasoningPart(text="one twothree")))
    shown = comparable(live)
    assert shown is not None
    assert shown["reasoning"] == {"text": "one twothree", "signatures": ["s1"]}
    assert "reasoning" not in (comparable(receipt()) or {})


@pytest.mark.parametrize(
    ("pieces", "problem"),
    [
        ((), "the receipt has reasoning the stream never sent"),
        (("one ",), "the receipt has reasoning the stream never sent"),
        (("one ", "three"), "the streamed reasoning differs"),
        (("one two", "extra"), "reasoning was streamed beyond"),
    ],
)
def test_a_stream_whose_reasoning_is_not_its_receipts_is_refused(
    pieces: tuple[str, ...], problem: str
) -> None:
    events = stream(*pieces, final=receipt(anthropic("one two", "s1")))
    with pytest.raises(CliError) as caught:
        turn_events(events)
    assert caught.value.code == "TQX_RUNTIME_INVALID_RESPONSE"
    assert problem in str(caught.value)
    assert "s1" not in str(caught.value)  # a signature never reaches an error


def test_redacting_the_answer_leaves_the_reasoning_out() -> None:
    final = receipt(ReasoningPart(text="the answer is ok"))
    events: list[dict[str, Any]] = turn_events(stream("the answer is ok", Delta(text="ok"),
                                                       final=final))  # fmt: skip
    redacted = redact_answer(events, final, [""])
    assert [event["kind"] for event in redacted] == ["delta", "usage", "finish"]
    assert redacted[0] == {"kind": "delta", "text": "[redacted]"}


def test_scenarios_check_names_reasoning_when_the_two_plays_differ_there() -> None:
    from runport.cli._check import Observed, _disagreement

    def seen(final: ExecutionReceipt) -> Observed:
        return Observed(ok=True, codes=(), errors=(), receipt=final)

    thought = seen(receipt(ReasoningPart(text="a")))
    assert _disagreement(thought, seen(receipt())).endswith("disagree on reasoning")
    assert _disagreement(thought, seen(receipt(ReasoningPart(text="a"), text="no"))) == (
        "the streamed and the non-streamed play disagree"
    )
