"""Run event sequences the frontend encoders are tested over: a real scripted run's events
(reasoning, text, a tool call, the answer), with the events a run adds between turns placed
by hand where a run puts them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from runport.application import run_stream
from runport.contracts import (
    Complete,
    Delta,
    OutputSnapshot,
    RunEvent,
    StreamEvent,
    ToolResult,
)
from runport.core import load_scenario
from runport.mock import ScriptedRuntime

from .chat_tools import TOOLS, get_weather
from .conftest import catalog

HERE = Path(__file__).parent
CHAT_SCENARIO = HERE / "scenarios" / "chat.yaml"
WEATHER = get_weather("Delft")


def _scripted_turns() -> list[StreamEvent]:
    events: list[StreamEvent] = []
    run_stream(
        catalog()["demo.forecast"],
        ScriptedRuntime(load_scenario(CHAT_SCENARIO)),
        inputs={"city": "Delft"},
        tools=TOOLS,
        on_event=events.append,
    )
    return events


def chat_run_events(*, snapshots: bool = False) -> list[RunEvent]:
    """The chat scenario's run as a run's caller receives it: the tool's result after the
    first turn's ``Complete``, and (``snapshots``) the partial answer after each answer
    ``Delta`` of the second turn."""
    turns = _scripted_turns()
    partial = iter(
        [
            OutputSnapshot(value={}),
            OutputSnapshot(value={"coat": "light jacket"}, completed=["/coat", ""]),
        ]
    )
    events: list[RunEvent] = []
    completes = 0
    for event in turns:
        events.append(event)
        if isinstance(event, Complete):
            completes += 1
            if completes == 1:
                events.append(
                    ToolResult(call_id="call-weather", name="get_weather", output=WEATHER)
                )
        elif snapshots and completes == 1 and isinstance(event, Delta):
            events.append(next(partial))
    return events


async def replay(
    events: Sequence[RunEvent], error: BaseException | None = None
) -> AsyncIterator[RunEvent]:
    """``events`` as an async iterator, raising ``error`` after the last one."""
    for event in events:
        yield event
    if error is not None:
        raise error
