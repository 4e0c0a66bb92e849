"""The async doubles play exactly what their sync twins play, and cancellation is a caller
stop that leaves them usable."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from runport.conformance import CASES, ScenarioUpstream
from runport.contracts import Delta, ExecutionReceipt, ExecutionRequest, StreamEvent
from runport.mock import (
    AsyncEmitter,
    AsyncFunctionRuntime,
    AsyncScriptedRuntime,
    Emitter,
    FunctionRuntime,
    ScriptedRuntime,
)
from runport.ports import AsyncRuntimeAdapter, PortError, RuntimeAdapter

SCENARIOS = Path(__file__).parent / "scenarios"

Outcome = tuple[list[StreamEvent], ExecutionReceipt | tuple[str, str, int | None]]


def _ending(error: PortError) -> tuple[str, str, int | None]:
    return (error.code, error.message, error.retry_after_ms)


def sync_outcome(runtime: RuntimeAdapter, request: ExecutionRequest, streamed: bool) -> Outcome:
    events: list[StreamEvent] = []
    try:
        if streamed:
            return events, runtime.execute_streaming(request, events.append)
        return events, runtime.execute(request)
    except PortError as error:
        return events, _ending(error)


async def async_outcome(
    runtime: AsyncRuntimeAdapter, request: ExecutionRequest, streamed: bool
) -> Outcome:
    events: list[StreamEvent] = []

    async def sink(event: StreamEvent) -> None:
        await asyncio.sleep(0)
        events.append(event)

    try:
        if streamed:
            return events, await runtime.execute_streaming(request, sink)
        return events, await runtime.execute(request)
    except PortError as error:
        return events, _ending(error)


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "plain"])
def test_every_conformance_case_plays_the_same_sync_and_async(streamed: bool) -> None:
    scenario = ScenarioUpstream(list(CASES)).scenario
    plain, twin = ScriptedRuntime(scenario), AsyncScriptedRuntime(scenario)

    async def play_all() -> list[Outcome]:
        return [await async_outcome(twin, case.request(), streamed) for case in CASES]

    expected = [sync_outcome(plain, case.request(), streamed) for case in CASES]
    assert asyncio.run(play_all()) == expected
    assert twin.stats() == plain.stats()


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.iterdir()))
def test_scenario_files_load_and_play_alike(name: str, make_request: Any) -> None:
    request = make_request(fixture_output="fixture")
    plain = ScriptedRuntime.from_scenario(SCENARIOS / name)
    twin = AsyncScriptedRuntime.from_scenario(SCENARIOS / name)
    assert twin.scenario == plain.scenario
    assert twin.descriptor() == plain.descriptor()
    assert asyncio.run(async_outcome(twin, request, True)) == sync_outcome(plain, request, True)


def hold_forever(events: list[StreamEvent]) -> Callable[[StreamEvent], Awaitable[None]]:
    async def sink(event: StreamEvent) -> None:
        events.append(event)
        await asyncio.Event().wait()

    return sink


def test_cancelling_a_call_stops_it_and_the_runtime_plays_on(text_request: Any) -> None:
    scenario = ScenarioUpstream(list(CASES[:2])).scenario
    runtime = AsyncScriptedRuntime(scenario)

    async def main() -> tuple[list[StreamEvent], Outcome]:
        seen: list[StreamEvent] = []
        task = asyncio.ensure_future(
            runtime.execute_streaming(CASES[0].request(), hold_forever(seen))
        )
        while not seen:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen, await async_outcome(runtime, CASES[1].request(), True)

    seen, after = asyncio.run(main())
    assert len(seen) == 1
    assert after == sync_outcome(
        ScriptedRuntime(ScenarioUpstream([CASES[1]]).scenario), CASES[1].request(), True
    )
    assert runtime.stats().attempts == 2


def test_async_function_runtime_matches_its_sync_twin(text_request: ExecutionRequest) -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        emit.text("Hel")
        emit.tool_call("add", {"a": 1})
        emit.usage(3, 4)
        raise PortError("TQX_RUNTIME_UNAVAILABLE", "cut", retry_after_ms=7)

    async def amodel(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        await emit.text("Hel")
        await emit.tool_call("add", {"a": 1})
        emit.usage(3, 4)
        raise PortError("TQX_RUNTIME_UNAVAILABLE", "cut", retry_after_ms=7)

    async def answer(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        await emit.text("Hello")
        await emit.finish("length")

    expected = sync_outcome(FunctionRuntime(model), text_request, True)
    assert asyncio.run(async_outcome(AsyncFunctionRuntime(amodel), text_request, True)) == expected
    twin = AsyncFunctionRuntime(answer)
    events, receipt = asyncio.run(async_outcome(twin, text_request, True))
    assert events[0] == Delta(text="Hello")
    assert isinstance(receipt, ExecutionReceipt)
    assert receipt.finish_reason == "length"
    assert asyncio.run(twin.execute(text_request)) == receipt
    assert twin.requests == (text_request, text_request)


def test_a_cancelled_async_function_call_sends_nothing_more(text_request: Any) -> None:
    async def model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        await emit.text("one")
        await emit.text("two")

    runtime = AsyncFunctionRuntime(model)

    async def main() -> list[StreamEvent]:
        seen: list[StreamEvent] = []
        task = asyncio.ensure_future(runtime.execute_streaming(text_request, hold_forever(seen)))
        while not seen:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    assert asyncio.run(main()) == [Delta(text="one")]
    assert asyncio.run(runtime.execute(text_request)).text == "onetwo"
