from __future__ import annotations

import json
import sys
from typing import Any, Protocol, TextIO

from runport.contracts import (
    Complete,
    Delta,
    Diagnostic,
    ExecutionReceipt,
    Failed,
    OperationEnvelope,
    ReasoningDelta,
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
    """``--stream`` piped: text as it arrives, then the sources it cites, the tool calls and
    the receipt.

    Only the answer: a ``ReasoningDelta`` is never written here, and the receipt is written
    without its ``reasoning`` (``--reasoning`` sends reasoning to stderr; ``--json`` and the
    envelope of a run without ``--stream`` keep it), so a pipe reading the answer never gets
    the model's thinking mixed in.
    """

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
            write_sources(self.out, receipt)
            write_tool_calls(self.out, receipt)
            self.out.write(json.dumps(answer_receipt(receipt), indent=2, ensure_ascii=False))
            self.out.write("\n")
        self.out.flush()


def write_tool_calls(out: TextIO, receipt: ExecutionReceipt) -> None:
    """One line per tool call of a finished turn, as assembled in its receipt."""
    for index, call in enumerate(receipt.tool_calls or []):
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        out.write(f"tool call {index}: {call.name} ({call.call_id}) {arguments}\n")


def source_lines(receipt: ExecutionReceipt) -> list[str]:
    """The sources a turn's answer cites, one line each, as text: a web source's title and
    URL (a link to follow, never fetched by runport), a document's index, name and the
    passage quoted. Repeated sources are listed once."""
    lines: list[str] = []
    seen: set[str] = set()
    for citation in receipt.citations or []:
        source = citation.source
        if source.type == "url":
            shown = " — ".join(part for part in (source.title, source.url) if part)
        else:
            named = source.filename or source.file_id
            index = source.document_index
            shown = "document" + (f" {index}" if index is not None else "")
            shown += f" ({named})" if named else ""
            if citation.cited_text:
                shown += f': "{citation.cited_text}"'
        if shown and shown not in seen:
            seen.add(shown)
            lines.append(f"[{len(lines) + 1}] {shown}")
    return lines


def write_sources(out: TextIO, receipt: ExecutionReceipt) -> None:
    """``sources:`` and the cited sources under the answer, if it cites any."""
    lines = source_lines(receipt)
    if lines:
        out.write("sources:\n" + "".join(f"  {line}\n" for line in lines))


def answer_receipt(receipt: ExecutionReceipt) -> dict[str, Any]:
    """The receipt as ``--stream`` prints it after the answer: everything but ``reasoning``
    (none of its fingerprints covers reasoning, so they read the same)."""
    return receipt.model_dump(mode="json", exclude={"reasoning"})


class _Sink(Protocol):
    def __call__(self, event: StreamEvent) -> None: ...


class ReasoningToStderr:
    """``--reasoning``: each ``ReasoningDelta``'s text written to ``err`` as it arrives (a line
    feed closes it when the turn ends), every event then handed on to ``inner`` unchanged.

    ``err`` is looked up when written, so it is the stream the command set up (terminal-safe,
    or rich's redirection while a live view runs).
    """

    def __init__(self, inner: _Sink, err: TextIO | None = None) -> None:
        self.inner = inner
        self._err = err
        self._open = False

    @property
    def err(self) -> TextIO:
        return sys.stderr if self._err is None else self._err

    @property
    def partial_output(self) -> bool:
        """Whether the sink it hands events on to draws a run's own events (snapshots)."""
        return bool(getattr(self.inner, "partial_output", False))

    def __call__(self, event: StreamEvent) -> None:
        if isinstance(event, ReasoningDelta):
            self.err.write(event.text)
            self.err.flush()
            self._open = not event.text.endswith("\n")
        elif isinstance(event, Complete | Failed):
            self.close()
        self.inner(event)

    def close(self) -> None:
        """End the reasoning written so far with a line feed, if it did not end with one."""
        if self._open:
            self.err.write("\n")
            self.err.flush()
            self._open = False

    def finish(self, envelope: OperationEnvelope) -> None:
        self.close()
        finish = getattr(self.inner, "finish", None)
        if finish is not None:
            finish(envelope)


def write_reasoning(err: TextIO, receipts: list[ExecutionReceipt]) -> None:
    """``--reasoning`` without ``--stream``: each turn's reasoning text once the run is done."""
    for receipt in receipts:
        text = "".join(part.text for part in receipt.reasoning or ())
        if text:
            err.write(text if text.endswith("\n") else text + "\n")
    err.flush()
