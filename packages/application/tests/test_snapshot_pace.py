"""``SnapshotPace``: a run's snapshots thinned for a surface that sends each one whole — every
other event passed on in order, the snapshots sent a subsequence of those made, the last one
always sent (so it still equals the output), every completed pointer and problem carried on,
and what is sent linear in the answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.application import (
    DEFAULT_SNAPSHOT_EVERY_BELOW,
    DEFAULT_SNAPSHOT_RATIO,
    SnapshotPace,
)
from runport.contracts import (
    Delta,
    Diagnostic,
    ErrorCode,
    Failed,
    OutputSnapshot,
    ReasoningDelta,
    RunEvent,
    ToolResult,
)
from runport.core import PartialOutput

scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=40,
)
SCHEMA: dict[str, Any] = {"type": ["object", "array", "string", "number", "boolean", "null"]}


def turn(value: Any, cuts: list[int]) -> tuple[list[RunEvent], str]:
    """One turn's events as a run makes them: each Delta, and the snapshot after it when it
    changed something; a reasoning fragment now and then; a Failed to end the turn."""
    text = json.dumps(value, ensure_ascii=False)
    partial = PartialOutput(SCHEMA)
    events: list[RunEvent] = []
    start = 0
    for number, size in enumerate(cuts):
        if start >= len(text):
            break
        piece = text[start : start + size]
        start += size
        events.append(Delta(text=piece))
        snapshot = partial.feed(piece)
        if snapshot is not None:
            events.append(snapshot)
        if number % 7 == 3:
            events.append(ReasoningDelta(text="hm"))
    if start < len(text):
        events.append(Delta(text=text[start:]))
        snapshot = partial.feed(text[start:])
        if snapshot is not None:
            events.append(snapshot)
    last = partial.close()
    if last is not None:
        events.append(last)
    events.append(Failed(code=ErrorCode.RUNTIME_UNAVAILABLE, message="the turn ends"))
    return events, text


def paced(events: list[RunEvent], pace: SnapshotPace) -> list[RunEvent]:
    return [shown for event in events for shown in pace(event)]


@settings(max_examples=settings.default.max_examples // 2)
@given(
    value=values,
    cuts=st.lists(st.integers(1, 6), min_size=1, max_size=400),
    below=st.sampled_from([0, 16, 64, DEFAULT_SNAPSHOT_EVERY_BELOW]),
    ratio=st.sampled_from([1, 4, DEFAULT_SNAPSHOT_RATIO]),
)
def test_thinned_snapshots_keep_what_a_reader_relies_on(
    value: Any, cuts: list[int], below: int, ratio: int
) -> None:
    events, text = turn(value, cuts)
    made = [event for event in events if isinstance(event, OutputSnapshot)]
    sent_events = paced(events, SnapshotPace(every_below=below, ratio=ratio))
    sent = [event for event in sent_events if isinstance(event, OutputSnapshot)]
    # every other event, in order, unchanged
    assert [e for e in sent_events if not isinstance(e, OutputSnapshot)] == [
        e for e in events if not isinstance(e, OutputSnapshot)
    ]
    # the sent values are made values, in order; the last one made is always sent, before
    # the turn's end
    values_made = [snapshot.value for snapshot in made]
    position = 0
    for snapshot in sent:
        position = values_made.index(snapshot.value, position) + 1
    if made:
        assert sent[-1].value == made[-1].value == json.loads(text)
        assert isinstance(sent_events[-1], Failed)
    # nothing a snapshot said is lost: every pointer and problem, in order
    assert [p for s in sent for p in s.completed] == [p for s in made for p in s.completed]
    assert [p for s in sent for p in s.problems] == [p for s in made for p in s.problems]
    # below `below` characters every snapshot goes out; past it, each snapshot sent costs
    # about the answer so far, and their sum is the answer's length times a constant
    chars = 0
    weight = 0
    for event in sent_events:
        if isinstance(event, Delta):
            chars += len(event.text)
        elif isinstance(event, OutputSnapshot) and chars >= below:
            weight += chars
    assert weight <= (ratio + 2) * len(text) + below
    short = [s for s in made if s not in sent]
    if len(text) < below:
        assert short == []  # a short answer: every snapshot made is sent


def test_a_snapshot_held_back_goes_out_before_a_tool_result_and_counting_starts_afresh() -> None:
    pace = SnapshotPace(every_below=0, ratio=1)
    assert pace(Delta(text="x" * 100)) == (Delta(text="x" * 100),)
    assert pace(OutputSnapshot(value="x" * 99)) == (OutputSnapshot(value="x" * 99),)
    first = OutputSnapshot(value={"a": 1}, completed=["/a"])
    second = OutputSnapshot(value={"a": 1, "b": 2}, completed=["/b"], problems=[])
    result = ToolResult(call_id="c1", name="weather", output={"sky": "dry"})
    assert pace(Delta(text='{"a": 1,')) == (Delta(text='{"a": 1,'),)
    assert pace(first) == ()
    assert pace(Delta(text=' "b": 2}')) == (Delta(text=' "b": 2}'),)
    assert pace(second) == ()
    flushed = pace(result)
    assert flushed == (
        OutputSnapshot(value={"a": 1, "b": 2}, completed=["/a", "/b"]),
        result,
    )
    # the next turn's answer is counted from nothing: its first snapshot goes out at once
    assert pace(Delta(text="x" * 99)) == (Delta(text="x" * 99),)
    assert pace(OutputSnapshot(value="x" * 98)) == (OutputSnapshot(value="x" * 98),)


def test_a_problem_of_a_held_snapshot_reaches_the_next_one_sent() -> None:
    pace = SnapshotPace(every_below=0, ratio=1)
    pace(Delta(text="[" + " " * 9))
    pace(OutputSnapshot(value=[]))  # sent: the answer at 10 characters
    problem = Diagnostic(code=ErrorCode.VALUE_SCHEMA, message="too long", json_pointer="/a")
    pace(Delta(text='{"a": "lo'))
    assert pace(OutputSnapshot(value={"a": "lo"}, problems=[problem])) == ()
    pace(Delta(text='ng"}'))
    (sent,) = pace(OutputSnapshot(value={"a": "long"}, completed=["/a", ""]))
    assert isinstance(sent, OutputSnapshot)
    assert sent.problems == [problem]
    assert sent.completed == ["/a", ""]


@pytest.mark.parametrize(("below", "ratio"), [(0, 0), (1, 0), (-1, 5)])
def test_a_pace_that_would_hold_forever_is_refused(below: int, ratio: int) -> None:
    with pytest.raises(ValueError, match="at least"):
        SnapshotPace(every_below=below, ratio=ratio)
