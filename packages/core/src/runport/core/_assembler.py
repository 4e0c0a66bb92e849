from __future__ import annotations

from dataclasses import dataclass, field

from runport.contracts import (
    Citation,
    Complete,
    Delta,
    ExecutionReceipt,
    Failed,
    FileDelta,
    ReasoningDelta,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
)
from runport.core._receipt import parse_json_text


class StreamGrammarError(ValueError):
    """An event sequence that breaks the streaming law's grammar (docs/streaming-law.md, law 1)."""


@dataclass
class _Call:
    call_id: str
    name: str
    fragments: list[str] = field(default_factory=list)


class StreamAssembler:
    """Feeds on the events of one streamed turn, checks their grammar and assembles them.

    Progress events (``Delta``, ``ReasoningDelta``, ``ToolCallDelta``, and what the provider did
    itself: ``ServerToolCall``, ``ServerToolResult``, ``Citation``, ``FileDelta``) may come in
    any number, then exactly one terminal (``Complete`` or ``Failed``), then nothing. Text and
    reasoning are each joined in arrival order; tool calls are joined per ``index`` and
    reported in index order; server tools, citations and whole files are kept in arrival order
    (a ``ServerToolResult`` answers a ``ServerToolCall`` announced before it, once). A
    violation raises ``StreamGrammarError`` and leaves the assembler as it was.

    With ``grammar_only=True`` it checks the grammar and keeps nothing else: no pieces, no
    ``events`` (a turn assembled elsewhere, in a ``TurnBuilder``, checked here as it plays).
    """

    def __init__(self, *, grammar_only: bool = False) -> None:
        self._keep = not grammar_only
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _Call] = {}
        self._server: list[ServerToolCall | ServerToolResult] = []
        self._server_calls: dict[str, bool] = {}  # announced server calls: answered yet?
        self._citations: list[Citation] = []
        self._files: list[FileDelta] = []
        self._terminal: Complete | Failed | None = None
        self.events: list[StreamEvent] = []

    def feed(self, event: StreamEvent) -> None:
        if self._terminal is not None:
            raise StreamGrammarError(
                f"{event.kind} after the terminal {self._terminal.kind}: "
                "nothing may follow a terminal event"
            )
        if isinstance(event, Delta):
            if not event.text:
                raise StreamGrammarError("a Delta must carry non-empty text")
            if self._keep:
                self._text.append(event.text)
        elif isinstance(event, ReasoningDelta):
            if not event.text:
                raise StreamGrammarError("a ReasoningDelta must carry non-empty text")
            if self._keep:
                self._reasoning.append(event.text)
        elif isinstance(event, ToolCallDelta):
            self._feed_call(event)
        elif isinstance(event, ServerToolCall | ServerToolResult):
            self._feed_server_tool(event)
        elif isinstance(event, Citation):
            if self._keep:
                self._citations.append(event)
        elif isinstance(event, FileDelta):
            if self._keep and not event.partial:
                self._files.append(event)
        else:
            self._terminal = event
        if self._keep:
            self.events.append(event)

    def _feed_server_tool(self, event: ServerToolCall | ServerToolResult) -> None:
        answered = self._server_calls.get(event.call_id)
        if isinstance(event, ServerToolCall):
            if answered is not None:
                raise StreamGrammarError(f"server tool call {event.call_id} was announced twice")
            self._server_calls[event.call_id] = False
        else:
            if answered is None:
                raise StreamGrammarError(
                    f"a ServerToolResult for call {event.call_id}, which was never announced"
                )
            if answered:
                raise StreamGrammarError(f"server tool call {event.call_id} was answered twice")
            self._server_calls[event.call_id] = True
        if self._keep:
            self._server.append(event)

    def _feed_call(self, event: ToolCallDelta) -> None:
        call = self._calls.get(event.index)
        if call is None:
            first = [event.arguments_fragment] if self._keep else []
            self._calls[event.index] = _Call(event.call_id, event.name, first)
            return
        if (event.call_id, event.name) != (call.call_id, call.name):
            raise StreamGrammarError(
                f"tool call {event.index} changed identity: "
                f"{call.call_id}/{call.name} became {event.call_id}/{event.name}"
            )
        if not event.arguments_fragment:
            raise StreamGrammarError(
                f"tool call {event.index}: only a call's first ToolCallDelta may have an "
                "empty fragment"
            )
        if self._keep:
            call.fragments.append(event.arguments_fragment)

    @property
    def done(self) -> bool:
        return self._terminal is not None

    @property
    def terminal(self) -> Complete | Failed | None:
        return self._terminal

    @property
    def text(self) -> str | None:
        """The joined text, or ``None`` when no ``Delta`` arrived."""
        return "".join(self._text) if self._text else None

    @property
    def reasoning(self) -> str | None:
        """The joined reasoning text, or ``None`` when no ``ReasoningDelta`` arrived."""
        return "".join(self._reasoning) if self._reasoning else None

    def arguments_text(self, index: int) -> str:
        return "".join(self._calls[index].fragments)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(
                call_id=call.call_id,
                name=call.name,
                arguments=parse_json_text("".join(call.fragments))[1],
            )
            for _, call in sorted(self._calls.items())
        ]

    def assembly_problems(self, receipt: ExecutionReceipt) -> list[str]:
        """How ``receipt`` disagrees with what was streamed (docs/streaming-law.md, law 3)."""
        problems: list[str] = []
        if self.text != receipt.text:
            problems.append(f"joined Delta text {self.text!r} != receipt.text {receipt.text!r}")
        parts = "".join(part.text for part in receipt.reasoning or []) or None
        if self.reasoning != parts:
            problems.append(
                f"joined ReasoningDelta text {self.reasoning!r} != the receipt's reasoning "
                f"texts joined {parts!r}"
            )
        streamed = self.tool_calls
        # What the provider asks back (``provider_metadata``) is not streamed: law 3 is about
        # what a call means.
        received = [
            call.model_copy(update={"provider_metadata": None}) for call in receipt.tool_calls or []
        ]
        if streamed != received:
            problems.append(
                "tool calls assembled from ToolCallDelta "
                f"{[c.model_dump(mode='json') for c in streamed]} != receipt.tool_calls "
                f"{[c.model_dump(mode='json') for c in received]}"
            )
        provided = [
            (
                "server tools",
                [tool.model_dump(mode="json") for tool in self._server],
                [tool.model_dump(mode="json") for tool in receipt.server_tools or []],
            ),
            (
                "citations",
                [citation.model_dump(mode="json") for citation in self._citations],
                [citation.model_dump(mode="json") for citation in receipt.citations or []],
            ),
            (
                "files",
                [(file.media_type, file.data) for file in self._files],
                [(part.media_type, part.data) for part in receipt.files or []],
            ),
        ]
        for what, streamed_items, kept in provided:
            if streamed_items != kept:
                problems.append(f"streamed {what} {streamed_items!r} != the receipt's {kept!r}")
        return problems
