"""Run event sequences the frontend encoders are tested over: a real scripted run's events
(reasoning, text, a tool call and its result, the answer), with partial-output snapshots
placed by hand where a run puts them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from runport.application import run_stream
from runport.contracts import (
    Complete,
    Delta,
    OutputSnapshot,
    RunEvent,
)
from runport.core import load_scenario
from runport.mock import ScriptedRuntime

from .chat_tools import TOOLS, get_weather
from .conftest import catalog

HERE = Path(__file__).parent
CHAT_SCENARIO = HERE / "scenarios" / "chat.yaml"
WEATHER = get_weather("Delft")


def _scripted_turns() -> list[RunEvent]:
    events: list[RunEvent] = []
    run_stream(
        catalog()["demo.forecast"],
        ScriptedRuntime(load_scenario(CHAT_SCENARIO)),
        inputs={"city": "Delft"},
        tools=TOOLS,
        on_event=events.append,
    )
    return events


def chat_run_events(*, snapshots: bool = False) -> list[RunEvent]:
    """The chat scenario's run as a run's caller receives it, and (``snapshots``) the partial
    answer after each answer ``Delta`` of the second turn."""
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


SEARCH_SCENARIO = HERE / "scenarios" / "search.yaml"


def search_run_events() -> list[RunEvent]:
    """The search scenario's run (demo.story): a provider-run web search and its result,
    text, three citations (a page, a document, a ``javascript:`` URL), a preview and a
    whole generated PNG, then the turn's receipt."""
    events: list[RunEvent] = []
    run_stream(
        catalog()["demo.story"],
        ScriptedRuntime(load_scenario(SEARCH_SCENARIO)),
        inputs={"topic": "Delft"},
        on_event=events.append,
    )
    return events
