from __future__ import annotations

import io

from runport.cli._output import JsonLines, PlainStream
from runport.contracts import Delta, Failed, OperationEnvelope, ToolCallDelta


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
