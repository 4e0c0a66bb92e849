from __future__ import annotations

import json
import sys
from typing import TextIO

from runport.contracts import (
    Delta,
    Diagnostic,
    ExecutionReceipt,
    OperationEnvelope,
    StreamEvent,
)


def diagnostic_line(diagnostic: Diagnostic) -> str:
    where = f" (at {diagnostic.json_pointer})" if diagnostic.json_pointer else ""
    return f"{diagnostic.code}: {diagnostic.message}{where}"


def report(envelope: OperationEnvelope, err: TextIO) -> int:
    """Write every diagnostic to ``err``, errors first; return the exit status."""
    for diagnostic in sorted(envelope.diagnostics, key=lambda d: d.severity != "error"):
        err.write(f"runport: {diagnostic.severity}: {diagnostic_line(diagnostic)}\n")
    err.flush()
    return 0 if envelope.ok else 2


class JsonLines:
    """``--json``: one ``StreamEvent`` JSON object per line, flushed as it arrives."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out

    def __call__(self, event: StreamEvent) -> None:
        self.out.write(event.model_dump_json())
        self.out.write("\n")
        self.out.flush()

    def finish(self, envelope: OperationEnvelope) -> None:
        """Nothing but events goes to stdout in this mode."""


class PlainStream:
    """``--stream`` piped: text as it arrives, then the tool calls and the receipt."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out
        self._ends_with_newline = True

    def __call__(self, event: StreamEvent) -> None:
        if isinstance(event, Delta):
            self.out.write(event.text)
            self.out.flush()
            self._ends_with_newline = event.text.endswith("\n")

    def finish(self, envelope: OperationEnvelope) -> None:
        if not self._ends_with_newline:
            self.out.write("\n")
        receipt = envelope.result
        if receipt is not None and envelope.stream_events:
            write_tool_calls(self.out, receipt)
            self.out.write(
                json.dumps(receipt.model_dump(mode="json"), indent=2, ensure_ascii=False)
            )
            self.out.write("\n")
        self.out.flush()


def write_tool_calls(out: TextIO, receipt: ExecutionReceipt) -> None:
    """One line per tool call of a finished turn, as assembled in its receipt."""
    for index, call in enumerate(receipt.tool_calls or []):
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        out.write(f"tool call {index}: {call.name} ({call.call_id}) {arguments}\n")
