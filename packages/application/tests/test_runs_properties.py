"""Property: for any scripted multi-turn upstream, ``run_stream`` returns what ``run`` returns,
and the streamed events, grouped per turn, reassemble each turn's receipt."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runport.application import RunError, RunResult, Tool, run, run_stream
from runport.contracts import StreamEvent
from runport.core import StreamAssembler, parse_scenario
from runport.mock import ScriptedRuntime

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"


def get_weather(city: str) -> dict[str, Any]:
    return {"city": city, "celsius": len(city)}


TOOLS = [Tool.from_function(get_weather)]


@st.composite
def split(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=6)))
    bounds = [0, *[c for c in cuts if c < len(text)], len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if text[a:b]]


@st.composite
def tool_turn(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 3))
    calls = []
    for index in range(count):
        city = draw(st.sampled_from(["Delft", "Ede", "Zwolle"]))
        args = draw(st.sampled_from([json.dumps({"city": city}), '{"town": "x"}', "[1]"]))
        name = draw(st.sampled_from(["get_weather", "get_weather", "teleport"]))
        pieces = draw(split(args))
        calls.append(
            [
                {
                    "kind": "tool_call_delta",
                    "index": index,
                    "call_id": f"c{index}",
                    "name": name,
                    "arguments_fragment": piece,
                }
                for piece in pieces
            ]
        )
    order = draw(st.permutations(range(count)))
    events: list[dict[str, Any]] = []
    # interleave: take the first fragment of each call in a random order, then the rest
    for index in order:
        events.append(calls[index][0])
    for index in order:
        events.extend(calls[index][1:])
    return [*events, {"kind": "finish", "finish_reason": "tool_calls"}]


@st.composite
def answer_turn(draw: st.DrawFn, valid: bool) -> list[dict[str, Any]]:
    text = (
        json.dumps({"city": draw(st.text(max_size=8)), "celsius": draw(st.integers(-30, 40))})
        if valid
        else draw(st.sampled_from(['{"city": 1}', "not json", '{"celsius": 3}']))
    )
    usage = {"kind": "usage", "input_tokens": draw(st.integers(0, 9)), "output_tokens": 1}
    return [
        *({"kind": "delta", "text": p} for p in draw(split(text))),
        usage,
        {"kind": "finish", "finish_reason": "stop"},
    ]


@st.composite
def scripts(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    middle = draw(st.lists(st.one_of(tool_turn(), answer_turn(valid=False)), max_size=4))
    return [*middle, draw(answer_turn(valid=True))]


def _runtime(turns: list[list[dict[str, Any]]]) -> ScriptedRuntime:
    return ScriptedRuntime(
        parse_scenario(
            {"api_version": "runport.mock/v1", "id": "p", "turns": [{"events": t} for t in turns]}
        )
    )


def _outcome(call: Callable[[], RunResult]) -> RunResult | RunError:
    try:
        return call()
    except RunError as error:
        return error


@settings(deadline=None)
@given(scripts())
def test_run_stream_equals_run_and_events_reassemble_each_turn(
    turns: list[list[dict[str, Any]]],
) -> None:
    options: dict[str, Any] = {
        "inputs": {"city": "Delft"},
        "tools": TOOLS,
        "max_corrections": 5,
        "max_turns": 6,
    }
    plain = _outcome(lambda: run(CONTRACT, _runtime(turns), **options))
    events: list[StreamEvent] = []
    streamed = _outcome(
        lambda: run_stream(CONTRACT, _runtime(turns), on_event=events.append, **options)
    )
    if isinstance(plain, RunError) or isinstance(streamed, RunError):
        assert isinstance(plain, RunError)
        assert isinstance(streamed, RunError)
        assert (streamed.stage, streamed.code) == (plain.stage, plain.code)
        assert streamed.partial.receipts == plain.partial.receipts
        assert streamed.partial.messages == plain.partial.messages
        return
    assert streamed == plain
    # What the run adds between turns comes only right after a turn's Complete.
    added = ("ToolResult", "AnswerRejected")
    for before, event in itertools.pairwise(events):
        if event.kind in added:
            assert before.kind in (*added, "Complete")
    assemblers = [StreamAssembler()]
    for event in events:
        if event.kind in added:
            continue
        assemblers[-1].feed(event)
        if assemblers[-1].done:
            assemblers.append(StreamAssembler())
    assert not assemblers.pop().events
    assert len(assemblers) == len(plain.receipts)
    for assembler, receipt in zip(assemblers, plain.receipts, strict=True):
        assert assembler.assembly_problems(receipt) == []
        assert assembler.terminal is not None
        assert assembler.terminal.kind == "Complete"
