"""``runport run --stream`` for a person at a terminal: progress while it happens.

A spinner holds the place until the first fragment; then the text grows in place, tool-call
fragments gather under their call, and a compact receipt summary closes the run. Reasoning
(``ReasoningDelta``) has its own region above the answer, dimmed, so the model's thinking is
visible while it happens and never read as the answer. A structured answer is drawn from its
``OutputSnapshot``s as a tree that fills in (in place of its JSON text, never both), and a
tool's result appears under its call. Used only
when stdout is a TTY (``runport.cli._sinks`` decides, and imports this module — and rich —
only then).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.rule import Rule
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from runport.cli._output import source_lines
from runport.cli._safe import printable
from runport.contracts import (
    AnswerRejected,
    ClientToolCall,
    Complete,
    Delta,
    ExecutionReceipt,
    Failed,
    OperationEnvelope,
    OutputSnapshot,
    ReasoningDelta,
    RunEvent,
    SubRunEvent,
    ToolCallDelta,
    ToolProgress,
    ToolResult,
)

FINGERPRINT_CHARS = 12
"""Enough hex digits to tell receipts apart at a glance; the full value is in ``--json``."""

WAITING = "waiting for the first fragment…"
REASONING_STYLE = "dim italic"
"""How the reasoning region is drawn: present, and plainly not the answer."""
TREE_NODES = 200
"""The most members of a structured answer drawn; the rest are counted, not drawn."""


@dataclass
class _CallView:
    name: str
    call_id: str
    arguments: list[str] = field(default_factory=list)
    result: ToolResult | None = None


class RichStream:
    """The TTY renderer.

    The sink only records what arrived (it runs on the adapter's thread, between upstream
    reads, so it must stay cheap); the live display draws it at its own rate, 12.5 times a
    second. The first fragment and the terminal event are drawn at once, so the spinner never
    outlives the wait and the last frame is exact.
    """

    partial_output = True
    """Asks the run for ``OutputSnapshot``s: a structured answer is drawn from them."""

    def __init__(self, console: Console, *, structured: bool = False) -> None:
        self.console = console
        self.structured = structured
        """The contract's answer is JSON: its text is drawn as the snapshots' tree, not as is."""
        self._snapshot: OutputSnapshot | None = None
        self._chunks: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _CallView] = {}
        self._failure: Failed | None = None
        self._spinner = Spinner("dots", text=Text(WAITING, style="dim"))
        self._live = Live(
            console=console,
            refresh_per_second=12.5,
            transient=False,
            vertical_overflow="visible",
            get_renderable=self._render,
        )

    @property
    def _waiting(self) -> bool:
        return (
            not self._chunks and not self._reasoning and not self._calls and self._failure is None
        )

    def start(self) -> None:
        self._live.start(refresh=True)

    def stop(self) -> None:
        """Leave the last frame on screen and give the cursor back (also after Ctrl-C)."""
        if not self._live.is_started:
            return
        self._live.stop()  # draws the last frame once more, then shows the cursor

    def __call__(self, event: RunEvent) -> None:
        first = self._waiting
        if isinstance(event, OutputSnapshot):
            shown = self._snapshot is not None
            self._snapshot = event  # kept, not read: the value is built when a frame draws it
            if not shown:
                self._live.refresh()
            return
        if isinstance(event, ToolResult):
            for call in self._calls.values():
                if call.call_id == printable(event.call_id):
                    call.result = event
            return
        if isinstance(event, Delta):
            self._chunks.append(printable(event.text))
        elif isinstance(event, ReasoningDelta):
            self._reasoning.append(printable(event.text))
        elif isinstance(event, ToolCallDelta):
            call = self._calls.setdefault(
                event.index, _CallView(printable(event.name), printable(event.call_id))
            )
            call.arguments.append(printable(event.arguments_fragment))
        elif isinstance(event, Failed):
            self._failure = event
        elif not isinstance(event, Complete):
            return
        if isinstance(event, Complete | Failed) or (first and not self._json_text):
            self._live.refresh()  # a JSON answer's first frame is its first snapshot's

    def finish(self, envelope: OperationEnvelope) -> None:
        self.stop()
        summary = receipt_summary(envelope.result) if envelope.result is not None else None
        if envelope.result is not None:
            print_sources(self.console, envelope.result)
        if summary is not None:
            self.console.print(summary)

    def _render(self) -> RenderableType:
        if self._waiting:
            return self._spinner
        parts: list[RenderableType] = []
        if self._reasoning:
            parts.append(Text("".join(self._reasoning).rstrip("\n"), style=REASONING_STYLE))
            if self._chunks or self._calls:
                parts.append(Rule(style="dim"))
        if self._snapshot is not None:
            parts.append(answer_tree(self._snapshot.value))
        elif self._chunks and not self._json_text:
            parts.append(Text("".join(self._chunks)))
        for index in sorted(self._calls):
            call = self._calls[index]
            parts.append(
                Text.assemble(
                    ("tool call ", "dim"),
                    (f"{index}: ", "dim"),
                    (call.name, "bold cyan"),
                    (f" ({call.call_id})", "dim"),
                )
            )
            parts.append(Text("    " + "".join(call.arguments)))
            if call.result is not None:
                parts.append(result_line(call.result))
        if self._failure is not None:
            # The code and message are the command's one error line on stderr; printed here
            # too, a failure would be read twice.
            parts.append(Text("✗ failed", style="bold red"))
        return Group(*parts) if parts else self._spinner

    @property
    def _json_text(self) -> bool:
        """The text is a JSON answer still waiting for its first snapshot (drawn as a tree
        once it comes, so its raw JSON is never drawn)."""
        if not self.structured or self._snapshot is not None:
            return False
        return "".join(self._chunks[:8]).lstrip().startswith(("{", "["))


def print_sources(console: Console, receipt: ExecutionReceipt) -> None:
    """The sources the answer cites, under it; each line plain ``Text``, so a title or URL
    the model wrote is never read as rich markup."""
    lines = source_lines(receipt)
    if lines:
        console.print(Text("sources:", style="dim"))
        for line in lines:
            console.print(Text("  " + printable(line)))


def _scalar(value: Any) -> str:
    return printable(json.dumps(value, ensure_ascii=False))


def answer_tree(value: Any) -> RenderableType:
    """A structured answer as a tree: one node per member, scalars on their key's line."""
    if not isinstance(value, dict | list):
        return Text(_scalar(value))
    tree = Tree(Text("answer", style="dim"), guide_style="dim")
    budget = [TREE_NODES]
    stack: list[tuple[Tree, Any]] = [(tree, value)]
    while stack:
        node, container = stack.pop()
        members = container.items() if isinstance(container, dict) else enumerate(container)
        for key, item in members:
            if budget[0] == 0:
                node.add(Text("…", style="dim"))
                break
            budget[0] -= 1
            label = Text(printable(str(key)), style="bold" if isinstance(key, str) else "dim")
            if isinstance(item, dict | list):
                stack.append((node.add(label), item))
            else:
                node.add(Text.assemble(label, ": ", _scalar(item)))
    return tree


def result_line(result: ToolResult) -> RenderableType:
    if result.error is not None:
        return Text.assemble(("    ✗ ", "bold red"), printable(result.error))
    return Text.assemble(("    → ", "green"), _scalar(result.output))


def short(fingerprint: str) -> str:
    return fingerprint[:FINGERPRINT_CHARS] + "…"


def receipt_summary(receipt: ExecutionReceipt) -> RenderableType:
    """Adapter, shortened fingerprints, schema validity and usage in three lines."""
    if receipt.output_schema_valid is None:
        schema = Text("not checked", style="dim")
    elif receipt.output_schema_valid:
        schema = Text("✓ valid", style="green")
    else:
        schema = Text("✗ invalid", style="bold red")
    usage = (
        f"{receipt.usage.input_tokens} in · {receipt.usage.output_tokens} out"
        if receipt.usage is not None
        else "not reported"
    )
    grid = Table.grid(padding=(0, 2))
    for _ in range(4):
        grid.add_column()
    label = "dim"
    adapter = receipt.adapter
    grid.add_row(
        Text("adapter", label),
        printable(f"{adapter.id} {adapter.version}"),
        Text("finish", label),
        printable(receipt.finish_reason or "—"),
    )
    grid.add_row(
        Text("request", label),
        short(receipt.request_fingerprint),
        Text("output", label),
        short(receipt.output_fingerprint),
    )
    grid.add_row(Text("schema", label), schema, Text("usage", label), usage)
    return Group(Rule("receipt", style="dim", align="left"), grid)


class RichTurns:
    """``runport run --tools --stream`` on a terminal: one live view per model turn, each
    closed by its receipt summary, so tool turns and the final answer read in order. A turn's
    view stays open after its ``Complete`` until the next turn begins, so the results of the
    tools it called are drawn under their calls."""

    partial_output = True

    def __init__(self, console: Console, *, structured: bool = False) -> None:
        self.console = console
        self.structured = structured
        self._turn: RichStream | None = None
        self._receipt: ExecutionReceipt | None = None

    def __call__(self, event: RunEvent) -> None:
        # between turns: the last one's
        if isinstance(
            event, ToolResult | ToolProgress | SubRunEvent | AnswerRejected | ClientToolCall
        ):
            if self._turn is not None:
                self._turn(event)
            return
        if self._receipt is not None:  # the previous turn is over: this event begins the next
            self._close()
        if self._turn is None:
            self._turn = RichStream(self.console, structured=self.structured)
            self._turn.start()
        self._turn(event)
        if isinstance(event, Complete):
            self._receipt = event.receipt
        elif isinstance(event, Failed):
            self.stop()

    def _close(self) -> None:
        if self._turn is not None:
            self._turn.stop()
            self._turn = None
        if self._receipt is not None:
            print_sources(self.console, self._receipt)
            self.console.print(receipt_summary(self._receipt))
            self._receipt = None

    def stop(self) -> None:
        self._close()
