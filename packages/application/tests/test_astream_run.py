"""``astream_run``: a whole run as an async iterator; ``astream`` with history
(docs/async.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runport.application import (
    RunError,
    RunResult,
    RunStream,
    arun_stream,
    astream,
    astream_run,
)
from runport.contracts import (
    Complete,
    ExecutionRequest,
    Message,
    OutputSnapshot,
    RunEvent,
    ToolResult,
)
from runport.core import parse_contract
from runport.mock import AsyncFunctionRuntime

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"
INPUTS = {"city": "Delft"}
ANSWER = '{"city": "Delft", "celsius": 12.5}'

CHAT = parse_contract(
    {
        "api_version": "runport/v1alpha1",
        "id": "docs.chat",
        "version": "1.0.0",
        "inputs": {"message": {"schema": {"type": "string"}, "required": True}},
        "messages": [
            {"role": "system", "content": [{"kind": "text", "value": "Be brief."}]},
            {
                "role": "user",
                "content": [
                    {"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.message"}}
                ],
            },
        ],
        "output_schema": {"type": "string"},
    }
)


async def echo_all(request: ExecutionRequest, emit: Any) -> None:
    """Answers with every user message it was sent, so a test sees the history arrive."""
    said = [m.content for m in request.interaction.messages if m.role == "user"]
    await emit.text(" | ".join(said))


def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    return {"city": city, "celsius": 12.5}


async def weather_model(request: ExecutionRequest, emit: Any) -> None:
    if not any(m.role == "tool" for m in request.interaction.messages):
        await emit.tool_call("get_weather", INPUTS, call_id="c1")
        return
    for i in range(0, len(ANSWER), 6):
        await emit.text(ANSWER[i : i + 6])


def test_astream_run_holds_a_conversation_turn_after_turn() -> None:
    async def chat() -> tuple[list[str], RunResult]:
        history: list[Message] = []
        replies: list[str] = []
        result: RunResult | None = None
        for message in ("hello", "and again"):
            text = ""
            async with astream_run(
                CHAT, AsyncFunctionRuntime(echo_all), inputs={"message": message},
                history=history,
            ) as events:  # fmt: skip
                async for event in events:
                    if event.kind == "Delta":
                        text += event.text
            result = events.result
            history = list(result.messages[1:])  # the contract's system message comes anew
            replies.append(text)
        assert result is not None
        return replies, result

    replies, last = asyncio.run(chat())
    assert replies == ["hello", "hello | and again"]
    assert [m.role for m in last.messages] == ["system", "user", "assistant", "user", "assistant"]


def test_astream_run_yields_arun_streams_events_and_its_result_is_arun_streams(
    partial_output_parser: None,
) -> None:
    async def both() -> tuple[list[RunEvent], RunResult, list[RunEvent], RunResult]:
        pulled: list[RunEvent] = []
        async with astream_run(
            CONTRACT, AsyncFunctionRuntime(weather_model), inputs=INPUTS, tools=[get_weather],
            partial_output=True,
        ) as events:  # fmt: skip
            async for event in events:
                pulled.append(event)
        pushed: list[RunEvent] = []
        result = await arun_stream(
            CONTRACT, AsyncFunctionRuntime(weather_model), inputs=INPUTS, tools=[get_weather],
            partial_output=True, on_event=pushed.append,
        )  # fmt: skip
        return pulled, events.result, pushed, result

    pulled, pulled_result, pushed, pushed_result = asyncio.run(both())
    assert pulled == pushed
    assert pulled_result == pushed_result
    assert [e.kind for e in pulled].count("ToolResult") == 1
    assert any(isinstance(e, OutputSnapshot) for e in pulled)
    assert pulled[-1] == Complete(receipt=pulled_result.receipts[-1])


def test_leaving_astream_run_early_is_a_caller_stop_that_cancels_the_run() -> None:
    cancelled = asyncio.Event()

    async def slow_answer(request: ExecutionRequest, emit: Any) -> None:
        if not any(m.role == "tool" for m in request.interaction.messages):
            await emit.tool_call("get_weather", INPUTS, call_id="c1")
            return
        try:
            await emit.text("{")
            await asyncio.Event().wait()  # an upstream that never sends more
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def leave() -> RunStream:
        async with astream_run(
            CONTRACT, AsyncFunctionRuntime(slow_answer), inputs=INPUTS, tools=[get_weather]
        ) as events:
            async for event in events:
                if isinstance(event, ToolResult):
                    continue
                if event.kind == "Delta":
                    break
        return events

    events = asyncio.run(leave())
    assert cancelled.is_set()
    with pytest.raises(RuntimeError, match="not read to its end"):
        _ = events.result


def test_a_failed_run_raises_its_run_error_from_the_loop() -> None:
    async def wrong(request: ExecutionRequest, emit: Any) -> None:
        await emit.text('{"city": "Delft"}')

    async def go() -> list[RunEvent]:
        seen: list[RunEvent] = []
        async with astream_run(
            CONTRACT, AsyncFunctionRuntime(wrong), inputs=INPUTS, max_corrections=0
        ) as events:
            async for event in events:
                seen.append(event)
        return seen

    with pytest.raises(RunError) as raised:
        asyncio.run(go())
    assert raised.value.code == "TQX_RUN_CORRECTIONS_EXHAUSTED"


def test_astream_places_history_and_says_what_it_repaired() -> None:
    dangling = Message(
        role="assistant",
        content="",
        tool_calls=[{"call_id": "t1", "name": "lookup", "arguments": {}}],  # type: ignore[list-item]
    )
    history = [Message(role="user", content="earlier"), dangling]

    async def go() -> Any:
        async with astream(
            CHAT, AsyncFunctionRuntime(echo_all), inputs={"message": "now"}, history=history
        ) as events:
            async for _ in events:
                pass
        return events.envelope

    envelope = asyncio.run(go())
    assert envelope.ok
    assert envelope.result.output == "earlier | now"
    assert [d.code for d in envelope.diagnostics] == ["TQX_HISTORY_REPAIRED"]
    assert envelope.diagnostics[0].severity == "warning"


def test_entering_twice_or_iterating_outside_the_block_is_refused() -> None:
    stream = astream_run(CHAT, AsyncFunctionRuntime(echo_all), inputs={"message": "hi"})
    with pytest.raises(RuntimeError, match="astream_run"):
        stream.__aiter__()

    async def twice() -> None:
        async with stream:
            async for _ in stream:
                pass
        async with stream:
            pass

    with pytest.raises(RuntimeError, match="entered only once"):
        asyncio.run(twice())


def test_execute_contract_places_history_as_aexecute_contract_does() -> None:
    from runport.application import execute_contract
    from runport.mock import FunctionRuntime

    def echo(request: ExecutionRequest, emit: Any) -> None:
        emit.text(" | ".join(m.content for m in request.interaction.messages if m.role != "tool"))

    history = [Message(role="user", content="earlier"), Message(role="assistant", content="ok")]
    envelope = execute_contract(
        CHAT, FunctionRuntime(echo), inputs={"message": "now"}, history=history
    )
    assert envelope.result is not None
    assert envelope.result.output == "Be brief. | earlier | ok | now"
    assert envelope.diagnostics == []
