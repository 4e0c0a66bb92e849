"""Retries (docs/runs.md): ``Retry-After`` up to ``max_retry_wait``, full-jitter backoff, and a
streamed turn retried only while nothing of it reached the caller."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.application import RunError, run, run_stream
from runport.contracts import Complete, Delta, ExecutionRequest, Failed, StreamEvent
from runport.mock import Emitter, FunctionRuntime
from runport.ports import PortError

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"
INPUTS = {"city": "Delft"}
ANSWER = '{"city": "Delft", "celsius": 12.5}'


def flaky(*failures: PortError, shown: str | None = None) -> FunctionRuntime:
    """Fails with ``failures`` in order (after streaming ``shown``, if given), then answers."""
    remaining = list(failures)

    def model(request: ExecutionRequest, emit: Emitter) -> None:
        if remaining:
            if shown is not None:
                emit.text(shown)
            raise remaining.pop(0)
        emit.text(ANSWER[:9])
        emit.text(ANSWER[9:])

    return FunctionRuntime(model)


def unavailable(retry_after_ms: int | None = None) -> PortError:
    return PortError("TQX_RUNTIME_UNAVAILABLE", "reset", retry_after_ms=retry_after_ms)


def recorder() -> tuple[list[float], Callable[[float], None]]:
    slept: list[float] = []
    return slept, slept.append


def test_retry_after_is_honoured_then_backoff_has_full_jitter() -> None:
    slept, sleep = recorder()
    runtime = flaky(unavailable(1500), unavailable())
    result = run(CONTRACT, runtime, inputs=INPUTS, sleep=sleep, random=lambda: 0.25)
    assert slept == [1.5, 0.25 * 1.0]  # the hint, then a quarter of the second ceiling
    assert result.output == {"city": "Delft", "celsius": 12.5}
    assert runtime.stats().attempts == 3


@pytest.mark.parametrize("hint", [60_001, 86_400_000, 10**400])
def test_a_retry_after_past_the_cap_returns_the_failure_at_once(hint: int) -> None:
    slept, sleep = recorder()
    runtime = flaky(unavailable(hint))
    with pytest.raises(RunError) as raised:
        run(CONTRACT, runtime, inputs=INPUTS, sleep=sleep)
    assert (raised.value.stage, raised.value.code) == ("model", "TQX_RUNTIME_UNAVAILABLE")
    assert "max_retry_wait=60 s" in raised.value.message
    assert slept == []
    assert runtime.stats().attempts == 1


def test_the_cap_is_an_option() -> None:
    slept, sleep = recorder()
    run(CONTRACT, flaky(unavailable(90_000)), inputs=INPUTS, sleep=sleep, max_retry_wait=120)
    assert slept == [90.0]
    with pytest.raises(RunError):
        run(CONTRACT, flaky(unavailable(2_000)), inputs=INPUTS, sleep=sleep, max_retry_wait=1)


@settings(deadline=None)
@given(
    draws=st.lists(st.floats(0, 1, exclude_max=True), min_size=6, max_size=6),
    cap=st.floats(0, 20),
)
def test_every_backoff_is_a_jittered_fraction_of_its_ceiling(
    draws: list[float], cap: float
) -> None:
    slept, sleep = recorder()
    source = iter(draws)
    runtime = flaky(*[unavailable() for _ in range(6)])
    run(
        CONTRACT,
        runtime,
        inputs=INPUTS,
        sleep=sleep,
        random=lambda: next(source),
        max_attempts=7,
        max_retry_wait=cap,
    )
    ceilings = [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert slept == [min(r * c, cap) for r, c in zip(draws, ceilings, strict=True)]


def test_retries_exhausted_names_the_last_failure() -> None:
    slept, sleep = recorder()
    with pytest.raises(RunError) as raised:
        run(CONTRACT, flaky(*[unavailable()] * 3), inputs=INPUTS, sleep=sleep, random=lambda: 1)
    assert raised.value.code == "TQX_HOST_RETRY_EXHAUSTED"
    assert "3 attempt(s) failed; the last with TQX_RUNTIME_UNAVAILABLE" in raised.value.message
    assert slept == [0.5, 1.0]


def test_a_streamed_turn_that_failed_before_any_event_is_retried_unseen() -> None:
    slept, sleep = recorder()
    runtime = flaky(unavailable(), PortError("TQX_RUNTIME_RATE_LIMITED", "slow", retry_after_ms=5))
    events: list[StreamEvent] = []
    result = run_stream(
        CONTRACT, runtime, inputs=INPUTS, on_event=events.append, sleep=sleep, random=lambda: 0
    )
    assert slept == [0.0, 0.005]
    assert runtime.stats().attempts == 3
    assert events == [
        Delta(text=ANSWER[:9]),
        Delta(text=ANSWER[9:]),
        Complete(receipt=result.receipts[0]),
    ]
    assert result == run(CONTRACT, flaky(unavailable(), unavailable()), inputs=INPUTS, sleep=sleep)


def test_a_streamed_turn_that_showed_a_delta_is_never_replayed() -> None:
    slept, sleep = recorder()
    runtime = flaky(unavailable(), shown='{"ci')
    events: list[StreamEvent] = []
    with pytest.raises(RunError) as raised:
        run_stream(CONTRACT, runtime, inputs=INPUTS, on_event=events.append, sleep=sleep)
    assert raised.value.code == "TQX_RUNTIME_UNAVAILABLE"
    assert raised.value.partial.text == '{"ci'
    assert events == [Delta(text='{"ci'), Failed(code="TQX_RUNTIME_UNAVAILABLE", message="reset")]
    assert slept == []
    assert runtime.stats().attempts == 1


def test_a_streamed_run_out_of_attempts_shows_exactly_one_failed() -> None:
    events: list[StreamEvent] = []
    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT,
            flaky(unavailable(), unavailable()),
            inputs=INPUTS,
            on_event=events.append,
            sleep=lambda s: None,
            max_attempts=2,
        )
    assert raised.value.code == "TQX_HOST_RETRY_EXHAUSTED"
    assert events == [Failed(code="TQX_RUNTIME_UNAVAILABLE", message="reset")]


def test_a_handler_that_stops_on_the_final_failed_is_a_caller_stop() -> None:
    mine = LookupError("enough")

    def on_event(event: StreamEvent) -> None:
        raise mine

    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT,
            flaky(PortError("TQX_RUNTIME_PERMANENT", "no")),
            inputs=INPUTS,
            on_event=on_event,
        )
    assert raised.value.code == "TQX_CALLER_STOPPED"
    assert raised.value.__cause__ is mine


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_turns": 0}, ValueError, "max_turns must be an integer of at least 1"),
        ({"max_attempts": True}, ValueError, "max_attempts must be an integer"),
        ({"max_corrections": -1}, ValueError, "max_corrections must be an integer of at least 0"),
        ({"max_retry_wait": float("nan")}, ValueError, "max_retry_wait must be a number"),
        ({"max_retry_wait": -1}, ValueError, "max_retry_wait must be a number"),
        ({"retries": 3}, TypeError, "unexpected run option\\(s\\): retries"),
    ],
)
def test_bad_options_are_refused_before_any_call(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    runtime = flaky()
    with pytest.raises(error, match=message):
        run(CONTRACT, runtime, inputs=INPUTS, **options)
    assert runtime.stats().attempts == 0
