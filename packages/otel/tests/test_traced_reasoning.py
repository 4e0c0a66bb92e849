"""Reasoning in a traced call: its token count where the GenAI conventions name it,
its text as ``reasoning`` parts only when content is captured, never its signatures, and a
``ReasoningDelta`` counted as the first chunk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Message,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    Usage,
)
from runport.core import build_receipt
from runport.otel import Traced
from runport.ports import AsyncRuntimeAdapter, AsyncSink, RuntimeAdapter, Sink, deliver

from .otel_doubles import Recorded, make_request

SIGNATURE = "sig-EqQBCgIYAhIM-never-shown"
THINKING = ["The Rhine is long; ", "the Danube longer."]


class Thinking(RuntimeAdapter):
    """Reasons (``thinking``), then answers (``answer``, or a structured output when empty)."""

    def __init__(
        self, thinking: Sequence[str] = THINKING, answer: Sequence[str] = ("Danube.",)
    ) -> None:
        self.thinking = list(thinking)
        self.answer = list(answer)

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="thinking", version="1", provider="anthropic", model="m")

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return build_receipt(
            request,
            adapter=self.descriptor(),
            **({"text": "".join(self.answer)} if self.answer else {"output": {"river": "Danube"}}),
            finish_reason="stop",
            usage=Usage(input_tokens=10, output_tokens=30, reasoning_tokens=22),
            reasoning=[
                ReasoningPart(
                    text="".join(self.thinking),
                    provider_metadata={"anthropic": {"type": "thinking", "signature": SIGNATURE}},
                ),
                ReasoningPart(text="", provider_metadata={"anthropic": {"data": SIGNATURE}}),
            ],
        )

    def events(self, request: ExecutionRequest) -> list[StreamEvent]:
        progress: list[StreamEvent] = [ReasoningDelta(text=piece) for piece in self.thinking]
        progress += [Delta(text=piece) for piece in self.answer]
        return [*progress, Complete(receipt=self.execute(request))]

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        for piece in self.thinking:
            sink(ReasoningDelta(text=piece))
        for piece in self.answer:
            sink(Delta(text=piece))
        receipt = self.execute(request)
        sink(Complete(receipt=receipt))
        return receipt


class AsyncThinking(AsyncRuntimeAdapter):
    """``Thinking`` on the event loop."""

    def __init__(self, inner: Thinking) -> None:
        self.inner = inner

    def descriptor(self) -> AdapterDescriptor:
        return self.inner.descriptor()

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.inner.execute(request)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        for event in self.inner.events(request):
            await deliver(sink, event)
        return self.inner.execute(request)


def shown(recorded: Recorded) -> str:
    span = recorded.only_span()
    return json.dumps(dict(span.attributes or {})) + str(span.status.description)


def test_reasoning_tokens_are_recorded_as_the_conventions_attribute(recorded: Recorded) -> None:
    Traced(Thinking(), **recorded.providers).execute(make_request())

    attributes = dict(recorded.only_span().attributes or {})
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 22
    assert attributes["gen_ai.usage.output_tokens"] == 30  # reasoning is part of it, not added
    tokens = {
        point.attributes["gen_ai.token.type"]: point.sum
        for point in recorded.points()["gen_ai.client.token.usage"]
        if point.attributes is not None
    }
    assert tokens == {"input": 10, "output": 30}


def test_reasoning_text_is_never_recorded_without_capture_content(recorded: Recorded) -> None:
    Traced(Thinking(), **recorded.providers).execute_streaming(make_request(), lambda e: None)

    text = shown(recorded)
    for secret in (*THINKING, SIGNATURE, 'reasoning"'):
        assert secret not in text
    assert "gen_ai.output.messages" not in text


def test_capture_content_writes_reasoning_as_reasoning_parts_before_the_answer(
    recorded: Recorded,
) -> None:
    Traced(Thinking(), capture_content=True, **recorded.providers).execute(make_request())

    attributes = recorded.only_span().attributes
    assert attributes is not None
    assert json.loads(str(attributes["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "".join(THINKING)},
                {"type": "text", "content": "Danube."},
            ],
            "finish_reason": "stop",
        }
    ]
    assert SIGNATURE not in shown(recorded)  # the redacted block and every signature stay out


def test_capture_content_writes_the_historys_reasoning_in_its_assistant_message(
    recorded: Recorded,
) -> None:
    earlier = Message(
        role="assistant",
        content="Which river?",
        reasoning=[
            ReasoningPart(text="Ask first.", provider_metadata={"mock": {"signature": SIGNATURE}})
        ],
    )
    interaction = make_request().interaction.model_copy(
        update={"messages": [Message(role="user", content="Longest?"), earlier]}
    )
    Traced(Thinking(), capture_content=True, **recorded.providers).execute(
        ExecutionRequest(interaction=interaction)
    )

    attributes = recorded.only_span().attributes
    assert attributes is not None
    assert json.loads(str(attributes["gen_ai.input.messages"]))[1] == {
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "content": "Ask first."},
            {"type": "text", "content": "Which river?"},
        ],
    }
    assert SIGNATURE not in shown(recorded)


def test_a_reasoning_delta_is_the_first_chunk(recorded: Recorded) -> None:
    # Nothing but reasoning streams: the structured answer comes only in the receipt.
    events: list[StreamEvent] = []
    adapter = Traced(Thinking(answer=()), **recorded.providers)
    adapter.execute_streaming(make_request(), events.append)

    assert [event.kind for event in events] == ["ReasoningDelta", "ReasoningDelta", "Complete"]
    [first_chunk] = recorded.points()["gen_ai.client.operation.time_to_first_chunk"]
    [duration] = recorded.points()["gen_ai.client.operation.duration"]
    assert first_chunk.count == 1
    assert 0 <= first_chunk.sum <= duration.sum


def test_an_async_traced_call_counts_reasoning_the_same_way(recorded: Recorded) -> None:
    adapter = Traced(AsyncThinking(Thinking(answer=())), **recorded.providers)

    async def main() -> None:
        async def sink(event: StreamEvent) -> None:
            return None

        await adapter.execute_streaming(make_request(), sink)

    asyncio.run(main())
    assert recorded.points()["gen_ai.client.operation.time_to_first_chunk"][0].count == 1
    attributes = dict(recorded.only_span().attributes or {})
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 22
