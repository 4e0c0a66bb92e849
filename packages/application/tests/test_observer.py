"""The run observer port (docs/observability.md): ``run``, ``run_stream``, ``arun`` and
``arun_stream`` tell ``observer=`` what happens, in order, the same way; retries and
corrections are logged at WARNING on ``runport.application``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from runport.application import (
    AsyncFallback,
    Fallback,
    RunError,
    arun,
    arun_stream,
    run,
    run_stream,
    to_async,
)
from runport.contracts import AdapterDescriptor, ExecutionRequest, StreamEvent, Usage
from runport.mock import AsyncEmitter, AsyncFunctionRuntime, Emitter, FunctionRuntime
from runport.ports import CorrectionStage, PortError, RunObserver, RunScope, error_type

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"
INPUTS = {"city": "Delft"}

Record = tuple[Any, ...]


class Recorder(RunObserver):
    """Writes down every call, so a test compares the whole sequence at once."""

    def __init__(self) -> None:
        self.calls: list[Record] = []

    def run_started(
        self,
        contract_id: str,
        contract_version: str,
        descriptor: AdapterDescriptor,
        *,
        streamed: bool,
    ) -> RunScope:
        self.calls.append(("run_started", contract_id, contract_version, streamed))
        return RecordingScope(self.calls)


class RecordingScope(RunScope):
    def __init__(self, calls: list[Record]) -> None:
        self.calls = calls

    def retry(self, attempt: int, code: str, wait: float) -> None:
        self.calls.append(("retry", attempt, code, wait))

    def correction(self, round: int, stage: CorrectionStage, details: Sequence[str]) -> None:
        self.calls.append(("correction", round, stage, tuple(details)))

    def tool_started(self, name: str, call_id: str) -> None:
        self.calls.append(("tool_started", name, call_id))

    def tool_finished(self, name: str, call_id: str, error: str | None) -> None:
        self.calls.append(("tool_finished", name, call_id, error))

    def succeeded(self, usage: Usage, turns: int) -> None:
        self.calls.append(("succeeded", usage.input_tokens, usage.output_tokens, turns))

    def failed(self, code: str) -> None:
        self.calls.append(("failed", code))


def weather_model(
    answers: Sequence[str], *, fail_first: bool = True
) -> Callable[[ExecutionRequest, Emitter], None]:
    """Turn 1 fails once (retryable), then calls ``get_weather``; later turns answer in order."""
    failures = [PortError("TQX_RUNTIME_UNAVAILABLE", "reset")] if fail_first else []
    remaining = list(answers)

    def model(request: ExecutionRequest, emit: Emitter) -> None:
        if failures:
            raise failures.pop()
        emit.usage(10, 2)
        if not any(m.role == "tool" for m in request.interaction.messages):
            emit.tool_call("get_weather", {"city": "Delft"}, call_id="c1")
            return
        emit.text(remaining.pop(0))

    return model


def get_weather(city: str) -> dict[str, Any]:
    return {"city": city, "celsius": 12.5}


EXPECTED = [
    ("run_started", "runs.weather", "1.0.0"),
    ("retry", 1, "TQX_RUNTIME_UNAVAILABLE", 0.125),
    ("tool_started", "get_weather", "c1"),
    ("tool_finished", "get_weather", "c1", None),
    ("correction", 1, "output", ("TQX_OUTPUT_SCHEMA",)),
    ("succeeded", 30, 6, 3),
]

ANSWERS = ['{"city": "Delft"}', '{"city": "Delft", "celsius": 12.5}']


def play(way: str, model: Callable[[ExecutionRequest, Emitter], None], **options: Any) -> Any:
    """Run the weather contract one of the four ways with ``options``."""
    runtime = FunctionRuntime(model)
    common: dict[str, Any] = {"inputs": INPUTS, "tools": [get_weather], **options}
    if way == "run":
        return run(CONTRACT, runtime, **common)
    if way == "run_stream":
        return run_stream(CONTRACT, runtime, on_event=lambda event: None, **common)

    async def nothing(seconds: float) -> None:
        return None

    common.setdefault("sleep", nothing)
    if way == "arun":
        return asyncio.run(arun(CONTRACT, to_async(runtime), **common))
    return asyncio.run(
        arun_stream(CONTRACT, to_async(runtime), on_event=lambda event: None, **common)
    )


WAYS = ["run", "run_stream", "arun", "arun_stream"]


@pytest.mark.parametrize("way", WAYS)
def test_each_way_of_running_reports_the_run_in_order(way: str) -> None:
    recorder = Recorder()
    result = play(
        way,
        weather_model(ANSWERS),
        observer=recorder,
        sleep=lambda seconds: None,
        random=lambda: 0.25,
    )
    assert result.output == {"city": "Delft", "celsius": 12.5}
    streamed = way.endswith("_stream")
    started, *rest = recorder.calls
    assert started == (*EXPECTED[0], streamed)
    assert rest == EXPECTED[1:]


@pytest.mark.parametrize("way", WAYS)
def test_a_tool_that_raises_is_reported_then_the_run_fails_with_tool_failed(way: str) -> None:
    def get_weather(city: str) -> str:
        raise LookupError(city)

    recorder = Recorder()
    with pytest.raises(RunError) as raised:
        play(
            way,
            weather_model(ANSWERS, fail_first=False),
            observer=recorder,
            tools=[get_weather],
        )
    assert raised.value.code == "TQX_TOOL_FAILED"
    assert recorder.calls[1:] == [
        ("tool_started", "get_weather", "c1"),
        ("tool_finished", "get_weather", "c1", "LookupError"),
        ("failed", "TQX_TOOL_FAILED"),
    ]


def test_rejected_tool_calls_are_a_tool_correction_naming_the_tools() -> None:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        if not any(m.role == "tool" for m in request.interaction.messages):
            emit.tool_call("get_weather", {"town": "Delft"}, call_id="bad")
            return
        emit.text(ANSWERS[1])

    recorder = Recorder()
    run(CONTRACT, FunctionRuntime(model), inputs=INPUTS, tools=[get_weather], observer=recorder)
    assert recorder.calls[1:] == [
        ("correction", 1, "tool", ("get_weather",)),
        ("succeeded", 0, 0, 2),
    ]


def test_spent_budgets_end_the_run_as_failed_with_the_run_error_code() -> None:
    recorder = Recorder()
    with pytest.raises(RunError):
        play("run", weather_model(["{}"] * 4, fail_first=False), observer=recorder)
    assert recorder.calls[-1] == ("failed", "TQX_RUN_CORRECTIONS_EXHAUSTED")
    assert [call[0] for call in recorder.calls].count("correction") == 2


def test_a_sink_that_raises_is_a_caller_stop() -> None:
    def stop(event: StreamEvent) -> None:
        raise ValueError("enough")

    recorder = Recorder()
    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT,
            FunctionRuntime(weather_model(ANSWERS, fail_first=False)),
            inputs=INPUTS,
            on_event=stop,
            tools=[get_weather],
            observer=recorder,
        )
    assert raised.value.code == "TQX_CALLER_STOPPED"
    assert recorder.calls[-1] == ("failed", "TQX_CALLER_STOPPED")


def test_cancelling_arun_is_reported_as_a_caller_stop() -> None:
    recorder = Recorder()

    async def hang(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        await emit.text("{")
        await asyncio.Event().wait()

    async def main() -> None:
        started = asyncio.Event()

        def seen(event: StreamEvent) -> None:
            started.set()

        task = asyncio.ensure_future(
            arun_stream(
                CONTRACT,
                AsyncFunctionRuntime(hang),
                inputs=INPUTS,
                on_event=seen,
                observer=recorder,
            )
        )
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert recorder.calls[1:] == [("failed", "TQX_CALLER_STOPPED")]


def test_a_run_that_cannot_start_is_not_observed_and_a_wrong_observer_is_refused() -> None:
    recorder = Recorder()
    with pytest.raises(RunError):
        run(CONTRACT, FunctionRuntime(weather_model(ANSWERS)), inputs={}, observer=recorder)
    assert recorder.calls == []
    with pytest.raises(TypeError, match=r"observer must be a runport\.ports\.RunObserver"):
        run(CONTRACT, FunctionRuntime(weather_model(ANSWERS)), inputs=INPUTS, observer=object())  # type: ignore[typeddict-item]


def test_the_default_observer_changes_nothing() -> None:
    observed = play("run", weather_model(ANSWERS), observer=Recorder(), random=lambda: 0.0)
    plain = play("run", weather_model(ANSWERS), random=lambda: 0.0, sleep=lambda s: None)
    assert observed == plain


@pytest.mark.parametrize(
    ("error", "name"),
    [
        (PortError("TQX_RUNTIME_TIMEOUT", "slow"), "TQX_RUNTIME_TIMEOUT"),
        (ValueError("x"), "ValueError"),
        (asyncio.CancelledError(), "asyncio.exceptions.CancelledError"),
    ],
)
def test_error_type_names_failures_the_way_error_type_asks(error: BaseException, name: str) -> None:
    assert error_type(error) == name


def test_retries_and_corrections_are_warnings_on_runport_application(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="runport"):
        play("run", weather_model(ANSWERS), sleep=lambda s: None, random=lambda: 0.25)
    records = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert records == [
        (
            "runport.application",
            logging.WARNING,
            "attempt 1 of a turn of runs.weather failed with TQX_RUNTIME_UNAVAILABLE; "
            "retrying in 0.125 s",
        ),
        (
            "runport.application",
            logging.WARNING,
            "correction round 1 of runs.weather, output rejected: TQX_OUTPUT_SCHEMA",
        ),
    ]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_fallback_moving_on_is_a_warning(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    def down(request: ExecutionRequest, emit: Emitter) -> None:
        raise PortError("TQX_RUNTIME_RATE_LIMITED", "busy")

    def up(request: ExecutionRequest, emit: Emitter) -> None:
        emit.text(ANSWERS[1])

    members = [FunctionRuntime(down), FunctionRuntime(up)]
    with caplog.at_level(logging.DEBUG, logger="runport.application"):
        if kind == "sync":
            run(CONTRACT, Fallback(members), inputs=INPUTS)
        else:
            asyncio.run(
                arun(CONTRACT, AsyncFallback([to_async(m) for m in members]), inputs=INPUTS)
            )
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            logging.WARNING,
            "fallback member 1 of 2 failed with TQX_RUNTIME_RATE_LIMITED; moving to the next",
        )
    ]
