from __future__ import annotations

import io

from runport.cli._output import JsonLines, PlainStream, ReasoningToStderr
from runport.cli._run_tools import TurnStream
from runport.contracts import Delta, Failed, OperationEnvelope, ReasoningDelta, ToolCallDelta


class RecordingStream(io.StringIO):
    """Records what had been written at each flush, so a test sees what a reader saw when."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[str] = []

    def flush(self) -> None:
        self.flushed.append(self.getvalue())


def test_plain_stream_flushes_each_delta_the_moment_it_arrives() -> None:
    out = RecordingStream()
    sink = PlainStream(out)
    sink(Delta(text="Hel"))
    sink(ToolCallDelta(index=0, call_id="c", name="n", arguments_fragment=""))
    sink(Delta(text="lo"))
    assert out.flushed == ["Hel", "Hello"]


def test_plain_stream_finishes_with_a_newline_and_no_receipt_after_a_failure() -> None:
    out = RecordingStream()
    sink = PlainStream(out)
    sink(Delta(text="part"))
    failed = Failed(code="TQX_RUNTIME_TIMEOUT", message="stalled")
    sink(failed)
    sink.finish(
        OperationEnvelope(
            operation="execute_contract", ok=False, stream_events=[Delta(text="part"), failed]
        )
    )
    assert out.getvalue() == "part\n"


def test_json_lines_writes_and_flushes_one_event_per_line() -> None:
    out = RecordingStream()
    sink = JsonLines(out)
    sink(Delta(text="a"))
    sink(Failed(code="TQX_RUNTIME_TIMEOUT", message="m"))
    assert out.flushed == [
        '{"kind":"Delta","text":"a"}\n',
        '{"kind":"Delta","text":"a"}\n{"kind":"Failed","code":"TQX_RUNTIME_TIMEOUT","message":"m"}\n',
    ]


def test_plain_writers_never_write_reasoning() -> None:
    for writer in (PlainStream, TurnStream):
        out = RecordingStream()
        sink = writer(out)
        sink(ReasoningDelta(text="thinking…"))
        sink(Delta(text="answer"))
        assert out.getvalue() == "answer", writer


def test_reasoning_to_stderr_writes_each_piece_then_hands_every_event_on() -> None:
    err = RecordingStream()
    seen: list[object] = []
    sink = ReasoningToStderr(seen.append, err)
    sink(ReasoningDelta(text="a"))
    sink(ReasoningDelta(text="b"))
    sink(Delta(text="x"))
    failed = Failed(code="TQX_RUNTIME_TIMEOUT", message="m")
    sink(failed)
    assert err.flushed == ["a", "ab", "ab\n"]
    assert seen == [ReasoningDelta(text="a"), ReasoningDelta(text="b"), Delta(text="x"), failed]
