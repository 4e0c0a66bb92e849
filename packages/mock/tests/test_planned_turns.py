"""A scenario turn's deltas and usage are made once per turn (adr/0028-per-contract-caches.md):
every runtime that plays the turn, sync or async, still plays exactly what it always played."""

from __future__ import annotations

import asyncio
import gc

import pytest

from runport.contracts import ExecutionRequest, StreamEvent
from runport.core import DeltaEvent, Scenario, ScenarioTurn, parse_scenario
from runport.mock import AsyncScriptedRuntime, ScriptedRuntime, TurnUsageError, _scripted
from runport.ports import PortError

DOCUMENT = {
    "api_version": "runport.mock/v1",
    "id": "planned",
    "turns": [
        {
            "events": [
                {"kind": "delta", "text": "Hé"},
                {"kind": "delay", "ms": 5},
                {"kind": "delta", "text": "llo ✓"},
                {"kind": "usage", "input_tokens": 3, "output_tokens": 2},
                {"kind": "usage", "input_tokens": 1, "output_tokens": 1},
                {"kind": "finish", "finish_reason": "stop"},
            ]
        }
    ],
}


def _played(scenario: Scenario, request: ExecutionRequest) -> tuple[list[StreamEvent], str]:
    events: list[StreamEvent] = []
    receipt = ScriptedRuntime(scenario).execute_streaming(request, events.append)
    return events, receipt.model_dump_json()


def test_every_runtime_plays_the_same_events_and_receipt(text_request: ExecutionRequest) -> None:
    scenario = parse_scenario(DOCUMENT)
    first = _played(scenario, text_request)
    assert [e.kind for e in first[0]] == ["Delta", "Delta", "Complete"]
    assert '"usage":{"input_tokens":4,"output_tokens":3}' in first[1]
    assert _played(scenario, text_request) == first
    assert ScriptedRuntime(scenario).execute(text_request).model_dump_json() == first[1]
    awaited = asyncio.run(AsyncScriptedRuntime(scenario).execute(text_request))
    assert awaited.model_dump_json() == first[1]
    runtime = ScriptedRuntime(scenario)
    runtime.execute(text_request)
    assert runtime.stats().elapsed_ms == 5


def test_a_byte_bound_still_cuts_a_planned_delta(text_request: ExecutionRequest) -> None:
    scenario = parse_scenario(DOCUMENT)
    events: list[StreamEvent] = []
    with pytest.raises(PortError) as raised:
        ScriptedRuntime(scenario, max_response_bytes=3).execute_streaming(
            text_request, events.append
        )
    assert [e.kind for e in events] == ["Delta", "Failed"]
    assert raised.value.code == "TQX_RUNTIME_RESPONSE_TOO_LARGE"


def test_a_delta_built_in_code_without_text_fails_at_its_place(
    text_request: ExecutionRequest,
) -> None:
    good = parse_scenario(DOCUMENT)
    events = list(good.turns[0].events)
    events[2] = DeltaEvent.model_construct(kind="delta", text="")
    broken = good.model_copy(
        update={"turns": (ScenarioTurn.model_construct(events=tuple(events)),)}
    )
    seen: list[StreamEvent] = []
    with pytest.raises(TurnUsageError, match="non-empty text"):
        ScriptedRuntime(broken).execute_streaming(text_request, seen.append)
    assert [e.kind for e in seen] == ["Delta"]


def test_a_plan_leaves_with_its_scenario(text_request: ExecutionRequest) -> None:
    gc.collect()
    before = len(_scripted._PLANS)
    scenario = parse_scenario({**DOCUMENT, "id": "short-lived"})
    ScriptedRuntime(scenario).execute(text_request)
    assert len(_scripted._PLANS) == before + 1
    del scenario
    gc.collect()
    assert len(_scripted._PLANS) == before
