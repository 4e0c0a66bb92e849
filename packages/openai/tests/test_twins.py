"""Sync and async, streamed and unstreamed: for the same upstream bytes, equal receipts — and
for the same fault, the same code and message — over every case the conformance suite's
scripted upstream plays."""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance import CASES, Case, ScriptedUpstream
from runport.conformance.providers import WEATHER, make_request
from runport.contracts import Complete, ExecutionReceipt, Failed, StreamEvent
from runport.openai import AsyncOpenAIChatAdapter, OpenAIChatAdapter
from runport.ports import PortError

from .openai_upstream import (
    LoopbackUpstream,
    Part,
    Reply,
    completion,
    finish_chunk,
    role_chunk,
    sse,
    text_chunk,
    tool_chunk,
    usage_chunk,
)

Result = ExecutionReceipt | tuple[str, str, int | None]


def sync_results(
    upstream: ScriptedUpstream, case: Case
) -> tuple[Result, Result, list[StreamEvent]]:
    timeout = httpx.Timeout(5.0, read=upstream.read_timeout)
    with OpenAIChatAdapter(
        base_url=upstream.base_url, model=upstream.model, api_key=upstream.api_key, timeout=timeout
    ) as adapter:
        events: list[StreamEvent] = []
        try:
            streamed: Result = adapter.execute_streaming(case.request(), events.append)
        except PortError as error:
            streamed = (error.code, error.message, error.retry_after_ms)
        try:
            plain: Result = adapter.execute(case.request())
        except PortError as error:
            plain = (error.code, error.message, error.retry_after_ms)
    return streamed, plain, events


def async_results(
    upstream: ScriptedUpstream, case: Case
) -> tuple[Result, Result, list[StreamEvent]]:
    timeout = httpx.Timeout(5.0, read=upstream.read_timeout)

    async def main() -> tuple[Result, Result, list[StreamEvent]]:
        async with AsyncOpenAIChatAdapter(
            base_url=upstream.base_url,
            model=upstream.model,
            api_key=upstream.api_key,
            timeout=timeout,
        ) as adapter:
            events: list[StreamEvent] = []
            try:
                streamed: Result = await adapter.execute_streaming(case.request(), events.append)
            except PortError as error:
                streamed = (error.code, error.message, error.retry_after_ms)
            try:
                plain: Result = await adapter.execute(case.request())
            except PortError as error:
                plain = (error.code, error.message, error.retry_after_ms)
        return streamed, plain, events

    return asyncio.run(main())


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_sync_and_async_twins_agree_on_every_scripted_case(case: Case) -> None:
    upstream = ScriptedUpstream([case] * 4, pacing="off")
    try:
        sync_streamed, sync_plain, sync_events = sync_results(upstream, case)
        async_streamed, async_plain, async_events = async_results(upstream, case)
    finally:
        upstream.close()
    assert async_streamed == sync_streamed
    assert async_plain == sync_plain
    assert async_events == sync_events
    assert isinstance(async_events[-1], Failed if case.fails else Complete)
    if not case.fails:
        assert async_streamed == async_plain


CHUNKS = [
    role_chunk(),
    text_chunk("Checking the "),
    text_chunk("weather in Kraków 🌍"),
    tool_chunk(0, call_id="c1", name="get_weather", arguments='{"city":'),
    tool_chunk(1, call_id="c2", name="get_time", arguments="{}"),
    tool_chunk(0, arguments=' "Kraków"}'),
    finish_chunk("tool_calls"),
    usage_chunk(),
]
BODY = sse(CHUNKS, newline="\r\n")
WHOLE = completion(
    "Checking the weather in Kraków 🌍",
    [("c1", "get_weather", '{"city": "Kraków"}'), ("c2", "get_time", "{}")],
    finish="tool_calls",
)


@settings(max_examples=settings.default.max_examples // 4, deadline=None)
@given(cuts=st.sets(st.integers(1, len(BODY) - 1), max_size=20))
def test_any_chunking_gives_equal_receipts_sync_async_streamed_or_not(cuts: set[int]) -> None:
    bounds = [0, *sorted(cuts), len(BODY)]
    parts: list[Part] = [BODY[a:b] for a, b in itertools.pairwise(bounds)]
    upstream = LoopbackUpstream()
    try:
        upstream.queue(Reply(list(parts)), Reply.json(WHOLE), Reply(list(parts)), Reply.json(WHOLE))
        request = make_request(tools=[WEATHER])
        with OpenAIChatAdapter(base_url=upstream.base_url, model="m") as adapter:
            receipts = [adapter.execute_streaming(request, lambda event: None)]
            receipts.append(adapter.execute(request))

        async def main() -> list[ExecutionReceipt]:
            async with AsyncOpenAIChatAdapter(base_url=upstream.base_url, model="m") as twin:
                return [
                    await twin.execute_streaming(request, lambda event: None),
                    await twin.execute(request),
                ]

        receipts += asyncio.run(main())
    finally:
        upstream.close()
    assert receipts[0].text == "Checking the weather in Kraków 🌍"
    assert all(receipt == receipts[0] for receipt in receipts)
