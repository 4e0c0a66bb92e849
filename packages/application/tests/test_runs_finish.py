"""How a turn ended decides what a run does with it (docs/runs.md, "per finish"): a turn cut
by the token limit is never acted on — no tool run, no correction round — and ends the run with
``TQX_OUTPUT_TRUNCATED``; a withheld answer is ``TQX_OUTPUT_REFUSED``; a paused turn is sent
back and the model asked again, within ``max_turns``. The same in every driver and in
``execute_contract``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runport.application import (
    RunError,
    RunResult,
    aexecute_contract,
    arun,
    arun_stream,
    astream_run,
    execute_contract,
    run,
    run_stream,
)
from runport.contracts import Complete, ErrorCode, RunEvent
from runport.core import load_contract, parse_scenario
from runport.mock import AsyncScriptedRuntime, ScriptedRuntime

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"
INPUTS = {"city": "Delft"}
ANSWER = '{"city": "Delft", "celsius": 12.5}'


def turn(reason: str, text: str | None = None, call: str | None = None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    if text is not None:
        events.append({"kind": "delta", "text": text})
    if call is not None:
        events.append(
            {"kind": "tool_call_delta", "index": 0, "call_id": "c1", "name": "get_weather",
             "arguments_fragment": call}
        )  # fmt: skip
    return [*events, {"kind": "finish", "finish_reason": reason}]


def scenario(*turns: list[dict[str, Any]]) -> Any:
    return parse_scenario(
        {"api_version": "runport.mock/v1", "id": "finish", "turns": [{"events": t} for t in turns]}
    )


CALLED: list[str] = []
"""The cities ``get_weather`` was called for: a cut turn's call must never reach it."""


def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    CALLED.append(city)
    return {"city": city, "celsius": 12.5}


async def _astream(script: Any, **options: Any) -> RunResult:
    events: list[RunEvent] = []
    async with astream_run(CONTRACT, AsyncScriptedRuntime(script), inputs=INPUTS, **options) as ev:
        async for event in ev:
            events.append(event)
    assert any(isinstance(event, Complete) for event in events)
    return ev.result


def every_driver(script: Any, **options: Any) -> list[RunResult | RunError]:
    """The run's outcome by ``run``, ``run_stream``, ``arun``, ``arun_stream`` and
    ``astream_run``, each on a fresh double of ``script``."""
    outcomes: list[RunResult | RunError] = []
    calls: list[Any] = [
        lambda: run(CONTRACT, ScriptedRuntime(script), inputs=INPUTS, **options),
        lambda: run_stream(
            CONTRACT, ScriptedRuntime(script), inputs=INPUTS, on_event=lambda e: None, **options
        ),
        lambda: asyncio.run(arun(CONTRACT, AsyncScriptedRuntime(script), inputs=INPUTS, **options)),
        lambda: asyncio.run(
            arun_stream(
                CONTRACT,
                AsyncScriptedRuntime(script),
                inputs=INPUTS,
                on_event=lambda e: None,
                **options,
            )
        ),
        lambda: asyncio.run(_astream(script, **options)),
    ]
    for call in calls:
        try:
            outcomes.append(call())
        except RunError as error:
            outcomes.append(error)
    return outcomes


def failures(script: Any, **options: Any) -> list[RunError]:
    outcomes = every_driver(script, **options)
    assert all(isinstance(outcome, RunError) for outcome in outcomes), outcomes
    return [outcome for outcome in outcomes if isinstance(outcome, RunError)]


def test_a_cut_structured_answer_is_truncated_not_a_correction_round() -> None:
    # The second turn would be a valid answer: a correction round would reach it.
    script = scenario(turn("length", '{"city": "Del'), turn("stop", ANSWER))
    for error in failures(script):
        assert (error.code, error.stage) == (ErrorCode.OUTPUT_TRUNCATED, "model")
        assert "'length'" in error.message
        [cut] = error.partial.receipts
        assert (cut.finish, cut.finish_reason, cut.text) == ("length", "length", '{"city": "Del')


def test_a_cut_turn_s_tool_call_is_never_run_even_when_its_arguments_parse() -> None:
    script = scenario(turn("length", call='{"city": "Delft"}'), turn("stop", ANSWER))
    CALLED.clear()
    for error in failures(script, tools=[get_weather]):
        assert error.code == ErrorCode.OUTPUT_TRUNCATED
        [cut] = error.partial.receipts
        assert cut.tool_calls is not None
        assert cut.tool_calls[0].arguments == {"city": "Delft"}
        assert [m.role for m in error.partial.messages] == ["system", "user"]
    assert CALLED == []
    # the same script with an ordinary end does run the tool: the check above can fail
    run(CONTRACT, ScriptedRuntime(scenario(turn("tool_calls", call='{"city": "Delft"}'),
        turn("stop", ANSWER))), inputs=INPUTS, tools=[get_weather])  # fmt: skip
    assert CALLED == ["Delft"]


def test_a_withheld_answer_is_refused_never_an_ok_answer() -> None:
    # An empty answer that the contract's fixture would make valid: still refused.
    script = scenario(turn("content_filter"))
    for error in failures(script):
        assert (error.code, error.stage) == (ErrorCode.OUTPUT_REFUSED, "model")
        assert error.partial.receipts[0].finish == "content_filter"


def test_a_paused_turn_is_sent_back_and_the_model_asked_again() -> None:
    script = scenario(turn("pause", "Searching… "), turn("stop", ANSWER))
    for result in every_driver(script):
        assert isinstance(result, RunResult)
        assert result.output == {"city": "Delft", "celsius": 12.5}
        assert [r.finish for r in result.receipts] == ["pause", "stop"]
        assert [m.role for m in result.messages] == ["system", "user", "assistant", "assistant"]
        assert result.messages[2].content == "Searching… "


def test_an_answer_continued_across_paused_turns_is_the_whole_answer() -> None:
    # a structured answer split by two pauses: no turn's text is an answer on its own
    script = scenario(
        turn("pause", '{"city": "Del'), turn("pause", 'ft", "celsius"'), turn("stop", ": 12.5}")
    )
    for result in every_driver(script):
        assert isinstance(result, RunResult)
        assert result.output == {"city": "Delft", "celsius": 12.5}
        assert [r.text for r in result.receipts] == ['{"city": "Del', 'ft", "celsius"', ": 12.5}"]
        assert result.output_schema_valid
    # a text answer is the text of every turn, not the last turn's alone
    text = scenario(turn("pause", "The Rhine "), turn("stop", "is 1,233 km long."))
    prose = load_contract(CONTRACT).model_copy(update={"output_schema": {"type": "string"}})
    outcome = run(prose, ScriptedRuntime(text), inputs=INPUTS)
    assert outcome.output == "The Rhine is 1,233 km long."


def test_a_turn_paused_forever_ends_with_max_turns() -> None:
    script = scenario(*[turn("pause", f"part {n} ") for n in range(3)], turn("stop", ANSWER))
    for error in failures(script, max_turns=3):
        assert error.code == ErrorCode.RUN_TURNS_EXHAUSTED
        assert [r.finish for r in error.partial.receipts] == ["pause"] * 3


def test_a_finish_no_table_knows_is_other_and_judged_by_its_answer() -> None:
    script = scenario(turn("eos_token_reached", ANSWER))
    for result in every_driver(script):
        assert isinstance(result, RunResult)
        [receipt] = result.receipts
        assert (receipt.finish, receipt.finish_reason) == ("other", "eos_token_reached")


def _envelopes(script: Any) -> list[Any]:
    streamed: list[Any] = []
    return [
        execute_contract(CONTRACT, ScriptedRuntime(script), inputs=INPUTS),
        execute_contract(
            CONTRACT, ScriptedRuntime(script), inputs=INPUTS, on_event=streamed.append
        ),
        asyncio.run(aexecute_contract(CONTRACT, AsyncScriptedRuntime(script), inputs=INPUTS)),
    ]


@pytest.mark.parametrize(
    ("events", "code"),
    [
        (turn("length", '{"city": "Del'), ErrorCode.OUTPUT_TRUNCATED),
        (turn("length", call='{"city": "Delft"}'), ErrorCode.OUTPUT_TRUNCATED),
        (turn("length", ANSWER), ErrorCode.OUTPUT_TRUNCATED),
        (turn("pause", "Searching… "), ErrorCode.OUTPUT_TRUNCATED),
        (turn("content_filter"), ErrorCode.OUTPUT_REFUSED),
        (turn("content_filter", ANSWER), ErrorCode.OUTPUT_REFUSED),
    ],
)
def test_execute_contract_names_a_cut_or_withheld_turn(
    events: list[dict[str, Any]], code: ErrorCode
) -> None:
    for envelope in _envelopes(scenario(events)):
        assert not envelope.ok
        assert [d.code for d in envelope.diagnostics] == [code]
        assert envelope.result is not None
        assert envelope.result.finish_reason == events[-1]["finish_reason"]


def test_execute_contract_keeps_an_ordinary_end_as_it_was() -> None:
    for envelope in _envelopes(scenario(turn("stop", ANSWER))):
        assert envelope.ok
        assert envelope.diagnostics == []
        assert envelope.result is not None
        assert envelope.result.finish == "stop"
