from __future__ import annotations

import json
import sys
from typing import TextIO

from runport.contracts import (
    Complete,
    Delta,
    Diagnostic,
    OperationEnvelope,
    StreamEvent,
    ToolCallDelta,
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
        self._calls: dict[int, list[str]] = {}
        self._names: dict[int, tuple[str, str]] = {}

    def __call__(self, event: StreamEvent) -> None:
        if isinstance(event, Delta):
            self.out.write(event.text)
            self.out.flush()
            self._ends_with_newline = event.text.endswith("\n")
        elif isinstance(event, ToolCallDelta):
            self._names.setdefault(event.index, (event.name, event.call_id))
            self._calls.setdefault(event.index, []).append(event.arguments_fragment)

    def finish(self, envelope: OperationEnvelope) -> None:
        if not self._ends_with_newline:
            self.out.write("\n")
        for index in sorted(self._calls):
            name, call_id = self._names[index]
            arguments = "".join(self._calls[index])
            self.out.write(f"tool call {index}: {name} ({call_id}) {arguments}\n")
        events = envelope.stream_events or []
        if events and isinstance(events[-1], Complete):
            self.out.write(json.dumps(events[-1].receipt.model_dump(mode="json"), indent=2))
            self.out.write("\n")
        self.out.flush()
