"""The event-loop twins (docs/async.md): equal to the sync functions for the same upstream;
leaving ``astream`` early and cancelling are caller stops; the bridges round-trip."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.application import (
    AsyncFallback,
    BridgeUsageError,
    CallerGone,
    RunError,
    RunResult,
    aexecute_contract,
    arun,
    arun_stream,
    astream,
    execute_contract,
    run,
    run_stream,
    to_async,
    to_sync,
)
from runport.contracts import Delta, ExecutionRequest, OperationEnvelope, StreamEvent
from runport.core import Scenario, parse_scenario
from runport.mock import (
    AsyncEmitter,
    AsyncFunctionRuntime,
    AsyncScriptedRuntime,
    Emitter,
    FunctionRuntime,
    ScriptedRuntime,
)
from runport.ports import PortError

HERE = Path(__file__).parent
EXTRACT = HERE / "contract.yaml"
WEATHER = HERE / "data" / "weather.yaml"
EXTRACT_INPUTS = {"text": "Delft on 2024-05-01"}
ANSWER = '{"city": "Delft", "day": "2024-05-01"}'


def scenario(*turns: list[dict[str, Any]]) -> Scenario:
    return parse_scenario(
        {"api_version": "runport.mock/v1", "id": "t", "turns": [{"events": t} for t in turns]}
    )


def pieces(text: str, size: int) -> list[dict[str, Any]]:
    return [{"kind": "delta", "text": text[i : i + size]} for i in range(0, len(text), size)]


STOP = {"kind": "finish", "finish_reason": "stop"}
RESET = {"kind": "fail", "code": "TQX_RUNTIME_UNAVAILABLE", "message": "reset"}

TURNS: dict[str, list[dict[str, Any]]] = {
    "answer": [*pieces(ANSWER, 5), {"kind": "usage", "input_tokens": 3, "output_tokens": 2}, STOP],
    "invalid": [*pieces('{"city": 1}', 4), STOP],
    "not-json": [*pieces("Delft, I think", 3), STOP],
    "cut": [*pieces(ANSWER[:10], 4), RESET],
    "failed": [RESET],
    "tools": [
        {
            "kind": "tool_call_delta",
            "index": 0,
            "call_id": "c1",
            "name": "lookup",
            "arguments_fragment": '{"q": 1}',
        },
        {"kind": "finish", "finish_reason": "tool_calls"},
    ],
}


def sync_envelope(turn: list[dict[str, Any]], streamed: bool) -> OperationEnvelope:
    runtime = ScriptedRuntime(scenario(turn))
    sink = (lambda event: None) if streamed else None
    return execute_contract(EXTRACT, runtime, inputs=EXTRACT_INPUTS, on_event=sink)


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "plain"])
@pytest.mark.parametrize("name", sorted(TURNS))
def test_aexecute_contract_equals_execute_contract(name: str, streamed: bool) -> None:
    runtime = AsyncScriptedRuntime(scenario(TURNS[name]))

    async def sink(event: StreamEvent) -> None:
        await asyncio.sleep(0)

    envelope = asyncio.run(
        aexecute_contract(
            EXTRACT, runtime, inputs=EXTRACT_INPUTS, on_event=sink if streamed else None
        )
    )
    assert envelope == sync_envelope(TURNS[name], streamed)


def test_aexecute_contract_reports_what_it_can_name() -> None:
    envelope = asyncio.run(aexecute_contract(EXTRACT, AsyncScriptedRuntime(scenario([STOP]))))
    assert [d.code for d in envelope.diagnostics] == ["TQX_VALUE_REQUIRED"]


def weather_turns(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    call = {
        "kind": "tool_call_delta",
        "index": 0,
        "call_id": "c1",
        "name": "get_weather",
        "arguments_fragment": '{"city": "Delft"}',
    }
    answer = '{"city": "Delft", "celsius": 12.5}'
    turns: list[list[dict[str, Any]]] = []
    for _ in range(draw(st.integers(0, 2))):
        turns.append([call, {"kind": "finish", "finish_reason": "tool_calls"}])
    if draw(st.booleans()):
        turns.append([RESET])
    if draw(st.booleans()):
        turns.append([*pieces('{"city": 3}', draw(st.integers(1, 5))), STOP])
    turns.append([*pieces(answer, draw(st.integers(1, 9))), STOP])
    return turns


def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    return {"city": city, "celsius": 12.5}


def outcome(call: Any) -> RunResult | tuple[str, str, Any]:
    try:
        result: RunResult = call()
        return result
    except RunError as error:
        return (error.stage, error.code, error.partial)


@settings(deadline=None, max_examples=settings.default.max_examples // 2)
@given(st.data())
def test_arun_and_arun_stream_equal_run_and_run_stream(data: st.DataObject) -> None:
    turns = data.draw(st.composite(weather_turns)())
    played = scenario(*turns)
    options: dict[str, Any] = {"tools": [get_weather], "sleep": lambda s: None}
    inputs = {"city": "Delft"}
    plain = outcome(lambda: run(WEATHER, ScriptedRuntime(played), inputs=inputs, **options))
    seen: list[StreamEvent] = []
    streamed = outcome(
        lambda: run_stream(
            WEATHER, ScriptedRuntime(played), inputs=inputs, on_event=seen.append, **options
        )
    )
    aseen: list[StreamEvent] = []

    async def both() -> tuple[Any, Any]:
        async def sink(event: StreamEvent) -> None:
            aseen.append(event)

        first = await arun(WEATHER, AsyncScriptedRuntime(played), inputs=inputs, **options)
        second = await arun_stream(
            WEATHER, AsyncScriptedRuntime(played), inputs=inputs, on_event=sink, **options
        )
        return first, second

    assert outcome(lambda: asyncio.run(both())) == (plain, streamed)
    assert aseen == seen


def test_arun_waits_with_an_awaitable_sleep() -> None:
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    played = scenario(
        [{**RESET, "retry_after_ms": 250}], [*pieces('{"city": "Delft", "celsius": 1}', 6), STOP]
    )
    result = asyncio.run(
        arun(WEATHER, AsyncScriptedRuntime(played), inputs={"city": "Delft"}, sleep=sleep)
    )
    assert waited == [0.25]
    assert result.output == {"city": "Delft", "celsius": 1}


def test_astream_yields_the_turns_events_then_the_streamed_envelope() -> None:
    played = scenario(TURNS["answer"], TURNS["answer"])

    async def main() -> tuple[list[StreamEvent], OperationEnvelope, OperationEnvelope]:
        seen: list[StreamEvent] = []
        runtime = AsyncScriptedRuntime(played)
        async with astream(EXTRACT, runtime, inputs=EXTRACT_INPUTS) as events:
            async for event in events:
                seen.append(event)
        other: list[StreamEvent] = []
        expected = await aexecute_contract(
            EXTRACT, AsyncScriptedRuntime(played), inputs=EXTRACT_INPUTS, on_event=other.append
        )
        return seen, events.envelope, expected

    seen, envelope, expected = asyncio.run(main())
    assert envelope == expected
    assert envelope.stream_events == seen
    assert seen[-1].kind == "Complete"
    assert envelope.ok is True


def test_astream_of_a_contract_that_cannot_run_yields_nothing_and_says_why() -> None:
    async def main() -> tuple[list[StreamEvent], OperationEnvelope]:
        async with astream(EXTRACT, AsyncScriptedRuntime(scenario([STOP]))) as events:
            seen = [event async for event in events]
        return seen, events.envelope

    seen, envelope = asyncio.run(main())
    assert seen == []
    assert [d.code for d in envelope.diagnostics] == ["TQX_VALUE_REQUIRED"]


def closing_model(log: list[str]) -> Any:
    async def model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        try:
            for piece in ("one", "two", "three", "four"):
                await emit.text(piece)
        except asyncio.CancelledError:
            log.append("upstream closed")
            raise

    return model


def test_leaving_astream_early_is_a_caller_stop() -> None:
    log: list[str] = []
    runtime = AsyncFunctionRuntime(closing_model(log))

    async def main() -> tuple[list[StreamEvent], Any]:
        seen: list[StreamEvent] = []
        async with astream(EXTRACT, runtime, inputs=EXTRACT_INPUTS) as events:
            async for event in events:
                seen.append(event)
                break
        return seen, events

    seen, events = asyncio.run(main())
    assert seen == [Delta(text="one")]
    assert log == ["upstream closed"]
    with pytest.raises(RuntimeError, match="not read to its end"):
        _ = events.envelope
    assert runtime.stats().attempts == 1


def test_cancelling_arun_stream_cancels_the_adapter() -> None:
    log: list[str] = []
    runtime = AsyncFunctionRuntime(closing_model(log))

    async def main() -> list[StreamEvent]:
        seen: list[StreamEvent] = []
        started = asyncio.Event()

        async def sink(event: StreamEvent) -> None:
            seen.append(event)
            started.set()
            await asyncio.Event().wait()

        task = asyncio.ensure_future(
            arun_stream(EXTRACT, runtime, inputs=EXTRACT_INPUTS, on_event=sink)
        )
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    assert asyncio.run(main()) == [Delta(text="one")]
    assert log == ["upstream closed"]


def test_to_async_of_a_sync_runtime_plays_like_the_async_twin() -> None:
    played = scenario(TURNS["answer"], TURNS["cut"])

    async def envelopes(adapter: Any) -> list[OperationEnvelope]:
        found = []
        for _ in range(2):
            seen: list[StreamEvent] = []
            found.append(
                await aexecute_contract(
                    EXTRACT, adapter, inputs=EXTRACT_INPUTS, on_event=seen.append
                )
            )
        return found

    bridged = asyncio.run(envelopes(to_async(ScriptedRuntime(played))))
    assert bridged == asyncio.run(envelopes(AsyncScriptedRuntime(played)))
    assert to_async(ScriptedRuntime(played)).descriptor() == ScriptedRuntime(played).descriptor()


def test_cancelling_a_to_async_call_stops_delivery_and_the_worker_closes() -> None:
    log: list[str] = []
    worker_done = threading.Event()

    def model(request: ExecutionRequest, emit: Emitter) -> None:
        try:
            for piece in ("one", "two", "three"):
                emit.text(piece)
        except CallerGone:
            log.append("upstream closed")
            raise
        finally:
            worker_done.set()

    runtime = FunctionRuntime(model)
    adapter = to_async(runtime)

    async def main() -> list[StreamEvent]:
        seen: list[StreamEvent] = []

        async def sink(event: StreamEvent) -> None:
            seen.append(event)
            await asyncio.Event().wait()

        task = asyncio.ensure_future(adapter.execute_streaming(REQUEST, sink))
        while not seen:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.to_thread(worker_done.wait, 10)
        return seen

    assert asyncio.run(main()) == [Delta(text="one")]
    assert log == ["upstream closed"]
    assert asyncio.run(adapter.execute(REQUEST)).text == "onetwothree"


def test_a_to_async_sinks_exception_reaches_the_worker_and_propagates() -> None:
    log: list[BaseException] = []
    mine = LookupError("enough")

    def model(request: ExecutionRequest, emit: Emitter) -> None:
        try:
            emit.text("one")
        except LookupError as error:
            log.append(error)
            raise

    def sink(event: StreamEvent) -> None:
        raise mine

    with pytest.raises(LookupError) as raised:
        asyncio.run(to_async(FunctionRuntime(model)).execute_streaming(REQUEST, sink))
    assert raised.value is mine
    assert log == [mine]


def test_to_sync_inside_a_running_loop_is_a_clear_usage_error() -> None:
    adapter = to_sync(AsyncScriptedRuntime(scenario(TURNS["answer"])))

    async def main() -> None:
        adapter.execute(REQUEST)

    with pytest.raises(BridgeUsageError, match="inside a running event loop"):
        asyncio.run(main())
    assert adapter.execute(REQUEST).text == ANSWER
    with pytest.raises(TypeError, match="to_sync needs an AsyncRuntimeAdapter"):
        to_sync(ScriptedRuntime(scenario([STOP])))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="to_async needs a RuntimeAdapter"):
        to_async(AsyncScriptedRuntime(scenario([STOP])))  # type: ignore[arg-type]


def test_async_fallback_moves_on_before_anything_was_shown() -> None:
    first = AsyncScriptedRuntime(scenario([RESET]))
    second = AsyncScriptedRuntime(scenario(TURNS["answer"]))
    fallback = AsyncFallback([first, second])
    seen: list[StreamEvent] = []
    envelope = asyncio.run(
        aexecute_contract(EXTRACT, fallback, inputs=EXTRACT_INPUTS, on_event=seen.append)
    )
    assert envelope.ok is True
    assert [e.kind for e in seen].count("Failed") == 0
    assert "composite" in fallback.descriptor().capabilities
    assert (first.stats().attempts, second.stats().attempts) == (1, 1)
    with pytest.raises(ValueError, match="at least one"):
        AsyncFallback([])


def test_async_fallback_keeps_a_failure_after_progress() -> None:
    second = AsyncScriptedRuntime(scenario(TURNS["answer"]))
    fallback = AsyncFallback([AsyncScriptedRuntime(scenario(TURNS["cut"])), second])
    with pytest.raises(PortError):
        asyncio.run(fallback.execute_streaming(REQUEST, lambda event: None))
    assert second.stats().attempts == 0


REQUEST = ExecutionRequest.model_validate(
    {
        "interaction": {
            "compiler": "test/0",
            "contract_id": "async-test",
            "contract_version": "1.0.0",
            "messages": [{"role": "user", "content": "hi"}],
            "output_schema": {"type": "string"},
        }
    }
)
