"""``check_stream``: an author's own stream, judged by the suite's checks — silent on a stream
that keeps the law, and precise (law, event index, reason) about the first one that does not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance import CASES, ScenarioUpstream, StreamViolation, check_stream
from runport.conformance._cases import CASES_BY_NAME, Case
from runport.conformance._strategies import generated_case
from runport.contracts import Delta, ExecutionReceipt, Failed, StreamEvent
from runport.mock import ScriptedRuntime
from runport.ports import PortError


def _play(case: Case) -> tuple[list[StreamEvent], ExecutionReceipt | None, PortError | None]:
    events: list[StreamEvent] = []
    runtime = ScriptedRuntime(ScenarioUpstream([case]).scenario)
    try:
        return events, runtime.execute_streaming(case.request(), events.append), None
    except PortError as error:
        return events, None, error


@pytest.mark.parametrize("case", [c for c in CASES if not c.prefix_only], ids=lambda c: c.name)
def test_every_catalogue_turn_played_by_the_reference_runtime_keeps_the_law(case: Case) -> None:
    events, receipt, error = _play(case)
    check_stream(events, receipt, error=error)


@settings(deadline=None, derandomize=True, database=None)
@given(case=generated_case(tools=True), data=st.data())
def test_dropping_any_text_fragment_is_a_law_3_violation(case: Case, data: st.DataObject) -> None:
    events, receipt, _ = _play(case)
    check_stream(events, receipt)
    # a text fragment: dropping one always changes the joined text (a tool-call fragment may
    # be whitespace, which leaves the parsed arguments equal)
    progress = [i for i, event in enumerate(events) if isinstance(event, Delta) and event.text]
    if not progress:
        return
    dropped = data.draw(st.sampled_from(progress), label="dropped")
    lossy = events[:dropped] + events[dropped + 1 :]
    with pytest.raises(StreamViolation) as caught:
        check_stream(lossy, receipt)
    assert caught.value.law == 3


def test_a_stream_without_a_terminal_event_names_law_1_and_no_index() -> None:
    with pytest.raises(StreamViolation) as caught:
        check_stream([Delta(text="a")])
    assert (caught.value.law, caught.value.index) == (1, None)
    assert "no terminal event" in str(caught.value)


def test_an_event_after_the_terminal_names_its_index() -> None:
    events, receipt, _ = _play(CASES_BY_NAME["plain_text"])
    with pytest.raises(StreamViolation) as caught:
        check_stream([*events, Delta(text="late")], receipt)
    assert (caught.value.law, caught.value.index) == (1, len(events))


def test_a_complete_receipt_that_differs_from_the_returned_one_is_law_2() -> None:
    events, receipt, _ = _play(CASES_BY_NAME["plain_text"])
    assert receipt is not None
    other = receipt.model_copy(update={"finish_reason": "length"})
    with pytest.raises(StreamViolation) as caught:
        check_stream(events, other)
    assert caught.value.law == 2
    assert "finish_reason" in caught.value.problem


def test_a_failed_code_other_than_the_raised_one_is_law_5() -> None:
    events, _, error = _play(CASES_BY_NAME["failure_before_delta"])
    assert error is not None
    relabelled = [Failed(code="TQX_RUNTIME_PERMANENT", message="x")]
    with pytest.raises(StreamViolation) as caught:
        check_stream(relabelled, error=error)
    assert caught.value.law == 5
    check_stream(events, error=error)


def test_a_receipt_with_a_failed_stream_is_law_1() -> None:
    _, receipt, _ = _play(CASES_BY_NAME["plain_text"])
    with pytest.raises(StreamViolation) as caught:
        check_stream([Failed(code="TQX_RUNTIME_PERMANENT", message="x")], receipt)
    assert caught.value.law == 1


def test_a_receipt_and_an_error_together_are_refused() -> None:
    events, receipt, _ = _play(CASES_BY_NAME["plain_text"])
    with pytest.raises(ValueError, match="not both"):
        check_stream(events, receipt, error=PortError("TQX_RUNTIME_PERMANENT", "x"))
