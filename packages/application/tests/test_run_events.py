"""The run stream a UI renders: what a run adds between turns (``ToolResult``,
``AnswerRejected``) and the answer parsed while it streams (``OutputSnapshot``)."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.application import (
    RunError,
    aexecute_contract,
    arun,
    arun_stream,
    execute_contract,
    run,
    run_stream,
)
from runport.contracts import (
    AnswerRejected,
    Complete,
    Delta,
    ExecutionRequest,
    OutputSnapshot,
    RunEvent,
    ToolResult,
)
from runport.core import parse_contract
from runport.mock import AsyncFunctionRuntime, Emitter, FunctionRuntime

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"
INPUTS = {"city": "Delft"}
ANSWER = '{"city": "Delft", "celsius": 12.5}'
OUTPUT = {"city": "Delft", "celsius": 12.5}


def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    return {"city": city, "celsius": 12.5}


def get_wind(city: str) -> str:
    """Wind for a city."""
    return f"calm in {city}"


def broken(city: str) -> str:
    """A tool that fails."""
    raise ValueError("the station is down")


def pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class answering:
    """A model that first asks for ``calls`` (if any), then gives ``answers`` one per turn,
    in small pieces; call it as a ``FunctionRuntime`` handler, or use ``.on_the_loop`` for an
    ``AsyncFunctionRuntime``."""

    def __init__(self, *answers: str, calls: list[tuple[str, dict[str, Any]]] | None = None):
        self.turns: list[Any] = ([calls] if calls else []) + list(answers)

    def _planned(self, request: ExecutionRequest) -> Any:
        turn = sum(1 for m in request.interaction.messages if m.role == "assistant")
        return self.turns[min(turn, len(self.turns) - 1)]

    def __call__(self, request: ExecutionRequest, emit: Emitter) -> None:
        planned = self._planned(request)
        if isinstance(planned, list):
            for index, (name, arguments) in enumerate(planned):
                emit.tool_call(name, arguments, call_id=f"c{index + 1}")
            return
        for piece in pieces(planned):
            emit.text(piece)

    async def on_the_loop(self, request: ExecutionRequest, emit: Any) -> None:
        planned = self._planned(request)
        if isinstance(planned, list):
            for index, (name, arguments) in enumerate(planned):
                await emit.tool_call(name, arguments, call_id=f"c{index + 1}")
            return
        for piece in pieces(planned):
            await emit.text(piece)


def kinds(events: list[RunEvent]) -> list[str]:
    return [event.kind for event in events]


# ---- tool results ------------------------------------------------------------------------


def test_a_tool_run_streams_each_result_after_its_turn_and_before_the_next() -> None:
    model = answering(ANSWER, calls=[("get_weather", {"city": "Delft"}), ("get_wind", INPUTS)])
    events: list[RunEvent] = []
    result = run_stream(
        CONTRACT,
        FunctionRuntime(model),
        inputs=INPUTS,
        tools=[get_weather, get_wind],
        on_event=events.append,
    )
    first_complete = kinds(events).index("Complete")
    assert kinds(events)[first_complete + 1 : first_complete + 3] == ["ToolResult", "ToolResult"]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert results == [
        ToolResult(call_id="c1", name="get_weather", output={"city": "Delft", "celsius": 12.5}),
        ToolResult(call_id="c2", name="get_wind", output="calm in Delft"),
    ]
    assert kinds(events)[first_complete + 3] == "Delta"  # then the next turn
    assert events[-1] == Complete(receipt=result.receipts[-1])
    assert result == run(
        CONTRACT, FunctionRuntime(model), inputs=INPUTS, tools=[get_weather, get_wind]
    )
    # what the caller is shown is what the model was sent
    sent = [m.content for m in result.messages if m.role == "tool"]
    assert [json.loads(sent[0]), sent[1]] == [results[0].output, results[1].output]


def test_arun_stream_shows_the_same_events_as_run_stream() -> None:
    model = answering(ANSWER, calls=[("get_weather", INPUTS)])
    plain: list[RunEvent] = []
    run_stream(CONTRACT, FunctionRuntime(model), inputs=INPUTS, tools=[get_weather],
               on_event=plain.append)  # fmt: skip
    seen: list[RunEvent] = []

    async def sink(event: RunEvent) -> None:
        await asyncio.sleep(0)
        seen.append(event)

    async def go() -> Any:
        return await arun_stream(
            CONTRACT, AsyncFunctionRuntime(model.on_the_loop), inputs=INPUTS, tools=[get_weather],
            on_event=sink,
        )  # fmt: skip

    asyncio.run(go())
    assert kinds(seen) == kinds(plain)
    assert [e for e in seen if isinstance(e, ToolResult)] == [
        e for e in plain if isinstance(e, ToolResult)
    ]


def test_a_refused_call_is_a_tool_result_with_its_error_and_the_run_goes_on() -> None:
    model = answering(ANSWER, calls=[("get_weather", {"town": "Delft"}), ("nowhere", {})])
    events: list[RunEvent] = []
    result = run_stream(
        CONTRACT, FunctionRuntime(model), inputs=INPUTS, tools=[get_weather],
        on_event=events.append,
    )  # fmt: skip
    refused = [e for e in events if isinstance(e, ToolResult)]
    assert [(e.call_id, e.name, e.output) for e in refused] == [
        ("c1", "get_weather", None),
        ("c2", "nowhere", None),
    ]
    assert refused[0].error is not None
    assert "invalid arguments" in refused[0].error
    assert refused[1].error == "no such tool was offered"
    assert result.output == OUTPUT


def test_a_tool_that_raises_is_shown_then_the_run_fails_with_tool_failed() -> None:
    model = answering(ANSWER, calls=[("get_weather", INPUTS), ("broken", INPUTS)])
    events: list[RunEvent] = []
    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT, FunctionRuntime(model), inputs=INPUTS, tools=[get_weather, broken],
            on_event=events.append,
        )  # fmt: skip
    assert (raised.value.stage, raised.value.code) == ("tool", "TQX_TOOL_FAILED")
    assert isinstance(raised.value.__cause__, ValueError)
    assert kinds(events)[-3:] == ["Complete", "ToolResult", "ToolResult"]
    last = events[-1]
    assert isinstance(last, ToolResult)
    assert last.name == "broken"
    assert last.error == "tool 'broken' raised ValueError"
    assert last.output is None
    assert last.model_dump(mode="json")["error"] == last.error


def test_a_caller_stop_on_a_tool_result_ends_the_run_before_the_next_turn() -> None:
    model = answering(ANSWER, calls=[("get_weather", INPUTS)])
    runtime = FunctionRuntime(model)
    stop = KeyError("enough")

    def on_event(event: RunEvent) -> None:
        if isinstance(event, ToolResult):
            raise stop

    with pytest.raises(RunError) as raised:
        run_stream(CONTRACT, runtime, inputs=INPUTS, tools=[get_weather], on_event=on_event)
    assert (raised.value.stage, raised.value.code) == ("model", "TQX_CALLER_STOPPED")
    assert raised.value.__cause__ is stop
    assert runtime.stats().attempts == 1
    assert len(raised.value.partial.receipts) == 1


# ---- rejected answers ----------------------------------------------------------------------


def test_a_correction_round_is_marked_after_the_rejected_answers_complete() -> None:
    model = answering('{"city": "Delft"}', ANSWER)
    events: list[RunEvent] = []
    result = run_stream(CONTRACT, FunctionRuntime(model), inputs=INPUTS, on_event=events.append)
    rejected_at = kinds(events).index("AnswerRejected")
    assert kinds(events)[rejected_at - 1] == "Complete"
    rejected = events[rejected_at]
    assert isinstance(rejected, AnswerRejected)
    assert rejected.correcting
    assert [d.code for d in rejected.diagnostics] == ["TQX_OUTPUT_SCHEMA"]
    assert kinds(events)[rejected_at + 1] == "Delta"  # the correction round's answer
    assert kinds(events).count("AnswerRejected") == 1
    # a UI tells the accepted answer from the rejected one by what follows each Complete
    assert events[-1] == Complete(receipt=result.receipts[-1])
    assert result == run(CONTRACT, FunctionRuntime(model), inputs=INPUTS)


def test_a_text_that_is_no_json_is_rejected_with_the_not_json_diagnostic() -> None:
    events: list[RunEvent] = []
    run_stream(CONTRACT, FunctionRuntime(answering("sunny", ANSWER)), inputs=INPUTS,
               on_event=events.append)  # fmt: skip
    (rejected,) = [e for e in events if isinstance(e, AnswerRejected)]
    assert [(d.code, d.json_pointer) for d in rejected.diagnostics] == [("TQX_OUTPUT_SCHEMA", "")]


def test_the_last_rejection_says_no_correction_follows_and_the_run_fails() -> None:
    events: list[RunEvent] = []
    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT, FunctionRuntime(answering('{"city": "Delft"}')), inputs=INPUTS,
            on_event=events.append, max_corrections=1,
        )  # fmt: skip
    assert raised.value.code == "TQX_RUN_CORRECTIONS_EXHAUSTED"
    rejections = [e for e in events if isinstance(e, AnswerRejected)]
    assert [r.correcting for r in rejections] == [True, False]
    assert events[-1] is rejections[-1]


def test_no_correction_budget_means_the_first_rejection_is_final() -> None:
    events: list[RunEvent] = []
    with pytest.raises(RunError):
        run_stream(
            CONTRACT, FunctionRuntime(answering('{"city": 1}')), inputs=INPUTS,
            on_event=events.append, max_corrections=0,
        )  # fmt: skip
    assert kinds(events)[-2:] == ["Complete", "AnswerRejected"]
    last = events[-1]
    assert isinstance(last, AnswerRejected)
    assert not last.correcting


# ---- partial output -------------------------------------------------------------------------


def snapshots(events: list[RunEvent]) -> list[OutputSnapshot]:
    return [e for e in events if isinstance(e, OutputSnapshot)]


def test_snapshots_follow_deltas_and_end_at_the_answer_with_receipts_unchanged() -> None:
    model = answering('{"city": "Delft"}', ANSWER, calls=[("get_weather", INPUTS)])
    with_snapshots: list[RunEvent] = []
    without: list[RunEvent] = []
    result = run_stream(
        CONTRACT, FunctionRuntime(model), inputs=INPUTS, tools=[get_weather],
        on_event=with_snapshots.append, partial_output=True,
    )  # fmt: skip
    plain = run_stream(
        CONTRACT, FunctionRuntime(model), inputs=INPUTS, tools=[get_weather],
        on_event=without.append,
    )  # fmt: skip
    assert result == plain  # receipts, messages, usage: identical
    assert [e for e in with_snapshots if not isinstance(e, OutputSnapshot)] == without
    assert snapshots(with_snapshots)
    for before, event in itertools.pairwise(with_snapshots):
        if isinstance(event, OutputSnapshot):
            assert isinstance(before, Delta)  # at most one, right after its Delta
    # each answer has its own parser: the rejected answer ends at its value, the next at its own
    rejected_at = kinds(with_snapshots).index("AnswerRejected")
    assert snapshots(with_snapshots[:rejected_at])[-1].value == {"city": "Delft"}
    assert snapshots(with_snapshots)[-1].value == result.output == OUTPUT


def test_async_runs_and_single_executions_make_the_same_snapshots() -> None:
    model = answering(ANSWER)
    sync_events: list[RunEvent] = []
    run_stream(CONTRACT, FunctionRuntime(model), inputs=INPUTS, on_event=sync_events.append,
               partial_output=True)  # fmt: skip
    one: list[RunEvent] = []
    envelope = execute_contract(
        CONTRACT, FunctionRuntime(model), inputs=INPUTS, on_event=one.append, partial_output=True
    )
    assert envelope == execute_contract(
        CONTRACT, FunctionRuntime(model), inputs=INPUTS, on_event=lambda event: None
    )  # stream_events are the adapter's events: no snapshot is kept in the envelope
    assert one == sync_events
    seen: list[RunEvent] = []
    single: list[RunEvent] = []

    async def go() -> None:
        await arun_stream(CONTRACT, AsyncFunctionRuntime(model.on_the_loop), inputs=INPUTS,
                          on_event=seen.append, partial_output=True)  # fmt: skip
        await aexecute_contract(CONTRACT, AsyncFunctionRuntime(model.on_the_loop), inputs=INPUTS,
                                on_event=single.append, partial_output=True)  # fmt: skip

    asyncio.run(go())
    assert seen == single == sync_events
    assert snapshots(seen)[-1].value == OUTPUT


def test_a_text_answer_and_an_unasked_stream_get_no_snapshots() -> None:
    story = parse_contract(
        {
            "api_version": "runport/v1alpha1",
            "id": "docs.story",
            "version": "1.0.0",
            "messages": [{"role": "user", "content": [{"kind": "text", "value": "A story."}]}],
            "output_schema": {"type": "string"},
        }
    )
    events: list[RunEvent] = []
    run_stream(story, FunctionRuntime(answering('"quoted"')), on_event=events.append,
               partial_output=True)  # fmt: skip
    assert not snapshots(events)
    events.clear()
    run_stream(CONTRACT, FunctionRuntime(answering(ANSWER)), inputs=INPUTS, on_event=events.append)
    assert not snapshots(events)


def test_an_unstreamed_run_is_untouched_by_the_run_events() -> None:
    model = answering('{"city": "Delft"}', ANSWER, calls=[("get_weather", INPUTS)])

    async def go() -> Any:
        return await arun(
            CONTRACT, AsyncFunctionRuntime(model.on_the_loop), inputs=INPUTS, tools=[get_weather]
        )

    assert asyncio.run(go()) == run(
        CONTRACT, FunctionRuntime(model), inputs=INPUTS, tools=[get_weather]
    )


SCALAR_CONTRACT = parse_contract(
    {
        "api_version": "runport/v1alpha1",
        "id": "docs.reading",
        "version": "1.0.0",
        "messages": [{"role": "user", "content": [{"kind": "text", "value": "A reading."}]}],
        "output_schema": {"type": ["number", "boolean", "null", "object", "array"]},
    }
)
_LEAVES = st.one_of(
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
_ANSWERS = st.one_of(
    _LEAVES,
    st.lists(_LEAVES, max_size=4),
    st.dictionaries(st.text(max_size=3), _LEAVES, max_size=3),
)


def _cut(text: str, cuts: list[int]) -> list[str]:
    marks = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(marks) if b > a]


@given(answer=_ANSWERS, cuts=st.lists(st.integers(0, 10**6), max_size=6), spaced=st.booleans())
@settings(deadline=None, max_examples=settings.default.max_examples // 2)
def test_the_last_snapshot_is_the_output_for_top_level_scalars_too(
    answer: Any, cuts: list[int], spaced: bool
) -> None:
    text = json.dumps(answer, indent=1 if spaced else None)
    parts = _cut(text, cuts)

    def model(request: ExecutionRequest, emit: Emitter) -> None:
        for part in parts:
            emit.text(part)

    async def on_the_loop(request: ExecutionRequest, emit: Any) -> None:
        for part in parts:
            await emit.text(part)

    events: list[RunEvent] = []
    result = run_stream(SCALAR_CONTRACT, FunctionRuntime(model), on_event=events.append,
                        partial_output=True)  # fmt: skip
    plain: list[RunEvent] = []
    assert result == run_stream(SCALAR_CONTRACT, FunctionRuntime(model), on_event=plain.append)
    assert [e for e in events if not isinstance(e, OutputSnapshot)] == plain
    shown = snapshots(events)
    assert shown
    assert shown[-1].value == result.output == json.loads(text)
    for index, event in enumerate(events):
        if isinstance(event, OutputSnapshot):
            # right after its Delta, or (the answer's end) right before the Complete
            after_delta = isinstance(events[index - 1], Delta)
            assert after_delta or isinstance(events[index + 1], Complete)
            assert not isinstance(events[index + 1], OutputSnapshot)
    single: list[RunEvent] = []
    envelope = execute_contract(SCALAR_CONTRACT, FunctionRuntime(model), on_event=single.append,
                                partial_output=True)  # fmt: skip
    assert envelope.result is not None
    assert envelope.result.output == result.output
    assert single == events
    seen: list[RunEvent] = []
    asyncio.run(arun_stream(SCALAR_CONTRACT, AsyncFunctionRuntime(on_the_loop),
                            on_event=seen.append, partial_output=True))  # fmt: skip
    assert seen == events
