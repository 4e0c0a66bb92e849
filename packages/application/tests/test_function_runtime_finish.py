"""A model written as a function ends a turn every way a provider does (``emit.finish``), and
the run rules apply to it as to that provider's turn (docs/runs.md, "per finish"; adr/0050):
a cut turn's call is never run and the run ends ``TQX_OUTPUT_TRUNCATED``, a refusal is
``TQX_OUTPUT_REFUSED``, a paused turn is sent back and the function asked again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runport.application import RunError, RunResult, arun, execute_contract, run
from runport.contracts import ErrorCode, ExecutionRequest
from runport.mock import AsyncEmitter, AsyncFunctionRuntime, Emitter, FunctionRuntime

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"
INPUTS = {"city": "Delft"}
ANSWER = '{"city": "Delft", "celsius": 12.5}'

Step = tuple[str, tuple[Any, ...], dict[str, Any]]
Turn = list[Step]
"""What the function does in one call: emitter methods with their arguments, in order."""

cut_call: Turn = [
    # arguments that happen to parse: the turn is still cut
    ("tool_call", ("get_weather", {"city": "Delft"}), {}),
    ("finish", ("max_tokens",), {"finish": "length"}),
]
refused: Turn = [("finish", ("refusal",), {"finish": "content_filter"})]
paused: Turn = [
    ("text", ("Searching… ",), {}),
    ("finish", ("pause_turn",), {"finish": "pause"}),
]
answer: Turn = [("text", (ANSWER,), {}), ("finish", ("end_turn",), {"finish": "stop"})]


def scripted(*turns: Turn) -> tuple[FunctionRuntime, AsyncFunctionRuntime]:
    """A sync and an async runtime that play ``turns`` in order, one per call."""

    def now(request: ExecutionRequest) -> Turn:
        return turns[sum(m.role == "assistant" for m in request.interaction.messages)]

    def model(request: ExecutionRequest, emit: Emitter) -> None:
        for name, args, kwargs in now(request):
            getattr(emit, name)(*args, **kwargs)

    async def amodel(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        for name, args, kwargs in now(request):
            await getattr(emit, name)(*args, **kwargs)

    return FunctionRuntime(model), AsyncFunctionRuntime(amodel)


def outcomes(*turns: Turn, **options: Any) -> list[RunResult | RunError]:
    runtime, aruntime = scripted(*turns)
    found: list[RunResult | RunError] = []
    for call in (
        lambda: run(CONTRACT, runtime, inputs=INPUTS, **options),
        lambda: asyncio.run(arun(CONTRACT, aruntime, inputs=INPUTS, **options)),
    ):
        try:
            found.append(call())
        except RunError as error:
            found.append(error)
    return found


CALLED: list[str] = []


def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    CALLED.append(city)
    return {"city": city, "celsius": 12.5}


def test_a_turn_the_function_cut_is_truncated_and_its_call_never_run() -> None:
    CALLED.clear()
    for outcome in outcomes(cut_call, answer, tools=[get_weather]):
        assert isinstance(outcome, RunError)
        assert (outcome.code, outcome.stage) == (ErrorCode.OUTPUT_TRUNCATED, "model")
        [cut] = outcome.partial.receipts
        assert (cut.finish, cut.finish_reason) == ("length", "max_tokens")
    assert CALLED == []


def test_a_turn_the_function_refused_is_refused() -> None:
    for outcome in outcomes(refused, answer):
        assert isinstance(outcome, RunError)
        assert (outcome.code, outcome.stage) == (ErrorCode.OUTPUT_REFUSED, "model")
        assert outcome.partial.receipts[0].finish_reason == "refusal"


def test_a_turn_the_function_paused_is_continued() -> None:
    for outcome in outcomes(paused, answer):
        assert isinstance(outcome, RunResult)
        assert outcome.output == {"city": "Delft", "celsius": 12.5}
        assert [r.finish for r in outcome.receipts] == ["pause", "stop"]
        assert outcome.messages[2].content == "Searching… "


def test_a_function_that_pauses_forever_ends_with_max_turns() -> None:
    for outcome in outcomes(paused, paused, paused, answer, max_turns=3):
        assert isinstance(outcome, RunError)
        assert outcome.code == ErrorCode.RUN_TURNS_EXHAUSTED
        assert [r.finish for r in outcome.partial.receipts] == ["pause"] * 3


@pytest.mark.parametrize(
    ("turn", "code"),
    [(cut_call, ErrorCode.OUTPUT_TRUNCATED), (refused, ErrorCode.OUTPUT_REFUSED)],
)
def test_execute_contract_names_the_functions_cut_or_refused_turn(
    turn: Turn, code: ErrorCode
) -> None:
    runtime, _ = scripted(turn)
    envelope = execute_contract(CONTRACT, runtime, inputs=INPUTS)
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == [code]
