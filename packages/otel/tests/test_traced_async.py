"""``Traced`` around an ``AsyncRuntimeAdapter``: the same span and metrics on the event loop, and
a cancelled call recorded as the caller's stop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from runport.contracts import StreamEvent
from runport.otel import AsyncTracedAdapter, Traced
from runport.ports import PortError

from .otel_doubles import ANSWER, FAILURE, AsyncScripted, Recorded, answered, make_request, scenario


def traced(recorded: Recorded, *turns: list[dict[str, Any]], **options: Any) -> AsyncTracedAdapter:
    return Traced(AsyncScripted(scenario(*turns)), **recorded.providers, **options)


def test_an_async_streamed_call_records_what_a_sync_one_does(recorded: Recorded) -> None:
    events: list[StreamEvent] = []

    async def sink(event: StreamEvent) -> None:
        events.append(event)

    receipt = asyncio.run(traced(recorded, ANSWER).execute_streaming(make_request(), sink))

    assert [event.kind for event in events] == ["Delta", "Delta", "Complete"]
    span = recorded.only_span()
    assert (span.name, span.kind) == ("chat rivers", SpanKind.CLIENT)
    assert span.status.status_code is StatusCode.UNSET
    assert dict(span.attributes or {}) == answered(receipt)
    points = recorded.points()
    assert [p.count for p in points["gen_ai.client.operation.time_to_first_chunk"]] == [1]
    assert sorted(p.sum for p in points["gen_ai.client.token.usage"]) == [4, 12]


def test_a_plain_callable_sink_works_too(recorded: Recorded) -> None:
    events: list[StreamEvent] = []

    asyncio.run(traced(recorded, ANSWER).execute_streaming(make_request(), events.append))

    assert [event.kind for event in events] == ["Delta", "Delta", "Complete"]


def test_an_async_unstreamed_call_has_no_time_to_first_chunk(recorded: Recorded) -> None:
    receipt = asyncio.run(traced(recorded, ANSWER).execute(make_request()))

    assert receipt.text == "Rivers run downhill."
    assert recorded.only_span().name == "chat rivers"
    assert "gen_ai.client.operation.time_to_first_chunk" not in recorded.points()


def test_an_async_port_error_is_an_error_with_its_code(recorded: Recorded) -> None:
    with pytest.raises(PortError):
        asyncio.run(traced(recorded, FAILURE).execute_streaming(make_request(), print))

    span = recorded.only_span()
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "TQX_RUNTIME_UNAVAILABLE"


def test_cancelling_the_calling_task_is_a_caller_stop(recorded: Recorded) -> None:
    adapter = traced(recorded, ANSWER)
    seen: list[StreamEvent] = []

    async def main() -> None:
        first = asyncio.Event()

        async def sink(event: StreamEvent) -> None:
            seen.append(event)
            first.set()
            await asyncio.Event().wait()  # a consumer that never catches up

        task = asyncio.create_task(adapter.execute_streaming(make_request(), sink))
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())

    assert [event.kind for event in seen] == ["Delta"]
    recorded.assert_caller_stopped()


def test_cancelling_an_unstreamed_call_is_a_caller_stop(recorded: Recorded) -> None:
    adapter = traced(recorded, ANSWER)

    async def main() -> None:
        task = asyncio.create_task(adapter.execute(make_request()))
        await asyncio.sleep(0)  # the call has started and waits on the loop
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())

    recorded.assert_caller_stopped()


def test_concurrent_async_calls_get_their_own_spans_each_current_in_its_task(
    recorded: Recorded,
) -> None:
    adapter = Traced(AsyncScripted(scenario(*[ANSWER] * 5)), **recorded.providers)
    current: dict[int, set[int]] = {}

    async def one(number: int) -> None:
        def sink(event: StreamEvent) -> None:
            current.setdefault(number, set()).add(
                trace.get_current_span().get_span_context().span_id
            )

        await adapter.execute_streaming(make_request(), sink)

    async def main() -> None:
        await asyncio.gather(*(one(number) for number in range(5)))

    asyncio.run(main())

    spans = recorded.spans.get_finished_spans()
    assert len(spans) == 5
    assert all(len(ids) == 1 for ids in current.values())
    assert {span.context.span_id for span in spans} == set().union(*current.values())  # type: ignore[union-attr]
    assert all(span.parent is None for span in spans)
