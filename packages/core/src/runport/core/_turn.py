"""``TurnBuilder``: one turn's text, reasoning, tool calls, finish reason and usage, assembled
as a codec decodes them, emitting each progress event as the piece that completes it arrives.

Provider-neutral: a codec says *what* arrived (a text piece, a call announced, a fragment of
its arguments, a call's end), the builder keeps the streaming law's assembly rules — joined
``Delta`` text is the receipt's text, per index the joined fragments are the arguments' text
(docs/streaming-law.md, law 3) — and builds the receipt with ``build_receipt``. A whole JSON
response fed through the same calls gives the same receipt (law 2). Codecs (``runport.http``,
which re-exports it) and the test doubles (``runport.mock``) both assemble their turns here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from runport.contracts import (
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    PART_TOO_LARGE,
    AdapterDescriptor,
    Citation,
    CitationSource,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    FileDelta,
    FilePart,
    Finish,
    PortError,
    ProgressEvent,
    ReasoningDelta,
    ReasoningPart,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.core._document import JsonLimitError
from runport.core._receipt import _UNSET, build_receipt, normal_finish, parse_json_text

__all__ = ["TextPieces", "TurnBuilder", "parsed_tool_call", "turn_receipt"]


class TextPieces:
    """Text that arrives in many pieces, held compactly.

    Every ``BLOCK`` pieces are joined and appended to one growing string, so a turn of tiny
    deltas costs about its own size in memory rather than a string header (~50 bytes) per
    piece, and taking the text copies nothing: the string is grown in place (CPython resizes
    a string nothing else refers to), so the pieces and the joined text are never held side
    by side — the turn's peak stays near one copy of its text, not two.
    """

    __slots__ = ("_joined", "_pending", "count")

    BLOCK = 256

    def __init__(self) -> None:
        self._joined = ""
        self._pending: list[str] = []
        self.count = 0

    def add(self, piece: str) -> None:
        self.count += 1
        pending = self._pending
        pending.append(piece)
        if len(pending) == self.BLOCK:
            self._grow()

    def _grow(self) -> None:
        joined = self._joined
        self._joined = ""  # the local is then the string's one reference: it grows in place
        joined += "".join(self._pending)
        self._joined = joined
        self._pending.clear()

    def held(self) -> str:
        """What has arrived so far (for a call announced after its first arguments)."""
        return self._joined + "".join(self._pending)

    def length(self) -> int:
        """How many characters have arrived, counted without joining them (a codec that
        marks where each item's text begins asks once per item: joining the turn's text
        each time made a turn of many items quadratic)."""
        return len(self._joined) + sum(map(len, self._pending))

    def since(self, start: int) -> str:
        """What has arrived from character ``start`` on, copying only that (``held()[start:]``
        without the turn's text before it)."""
        joined = self._joined
        if start >= len(joined):
            return "".join(self._pending)[start - len(joined) :]
        return joined[start:] + "".join(self._pending)

    def take(self) -> str:
        """Everything, joined; the pieces are dropped, so the text is not held twice."""
        self._grow()
        text = self._joined
        self._joined = ""
        return text


_Event = TypeVar("_Event", bound=BaseModel)
_new = object.__new__
# The setters of a model's instance slots, called straight (``object.__setattr__`` finds the
# same descriptor by name each time): four per event built without validating.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
# The fields each event built by ``_unvalidated`` was given, one set per shape, shared by
# every event of that shape: the events are frozen models, so pydantic never adds to the set
# of one of them in place (``model_copy`` copies it first). A set per event was an allocation
# per frame and, for the events a turn keeps (citations, server tools), two more objects per
# event for the cyclic garbage collector to walk again and again.
_FRAGMENT_FIELDS = {"index", "call_id", "name", "arguments_fragment"}
_TEXT_FIELDS = {"text"}
_CITATION_FIELDS = {"source", "cited_text", "start", "end"}
_CALL_FIELDS = {"call_id", "name", "arguments", "provider_metadata"}
_SERVER_CALL_FIELDS = {"call_id", "name", "input", "provider_metadata"}
_SERVER_RESULT_FIELDS = {"call_id", "name", "output", "error", "provider_metadata"}
_SOURCE_FIELDS: dict[tuple[str, ...], set[str]] = {}
"""A citation source's set fields by their keys in order (bounded: the known fields only,
``_plain_citation`` admits no other)."""
_JSON_DEPTH = 64


def _json_object(value: object) -> bool:
    """``None``, or a ``dict`` that is plainly a ``JsonValue`` (``provider_metadata``)."""
    return value is None or (type(value) is dict and _json(value))


def _json(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is plainly a ``JsonValue`` (what a decoded body holds: ``dict`` with
    ``str`` keys, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``), no deeper than
    ``_JSON_DEPTH``: then a server tool's event keeps it without pydantic walking it again,
    which cost a server tool twice a tool-call fragment per frame. Anything else takes the
    validating path."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is float or kind is bool:
        return True
    if depth >= _JSON_DEPTH:
        return False
    if kind is dict:
        return all(
            type(key) is str and _json(item, depth + 1)
            for key, item in value.items()  # type: ignore[attr-defined]
        )
    if kind is list:
        return all(_json(item, depth + 1) for item in value)  # type: ignore[attr-defined]
    return False


_NO_SOURCE: dict[str, object] = dict.fromkeys(CitationSource.model_fields)
_SOURCE_TEXT = frozenset(("url", "title", "file_id", "filename"))


def _plain_citation(
    source: Mapping[str, object], cited_text: str | None, start: int | None, end: int | None
) -> bool:
    """Whether ``Citation(source=CitationSource(**source), …)`` would take these as they are:
    a source of known fields (a ``url``/``document`` type, text fields ``str``, a document
    index an ``int`` ≥ 0) and a span of ``int`` ≥ 0 that does not run backwards. Then the
    event is built without validating again (a citation is one frame's work, as a tool-call
    fragment is); anything else takes the validating path and its coded refusal."""
    if type(source) is not dict or source.get("type") not in ("url", "document"):
        return False
    for key, value in source.items():
        if key in _SOURCE_TEXT:
            if type(value) is not str:
                return False
        elif key == "document_index":
            if type(value) is not int or value < 0:
                return False
        elif key != "type":
            return False
    if cited_text is not None and type(cited_text) is not str:
        return False
    if start is not None and (type(start) is not int or start < 0):
        return False
    if end is not None and (type(end) is not int or end < 0):
        return False
    return start is None or end is None or end >= start


class _Reasoning:
    """One reasoning block: its text as it arrives, and what the provider wants back with it."""

    __slots__ = ("metadata", "text")

    def __init__(self, metadata: dict[str, JsonValue] | None) -> None:
        self.text = TextPieces()
        self.metadata = metadata

    def part(self) -> ReasoningPart:
        return ReasoningPart(text=self.text.take(), provider_metadata=self.metadata or None)


def _unvalidated(model: type[_Event], state: dict[str, object], fields: set[str]) -> _Event:
    """``model(**state)`` without validating again what the caller knows is valid (a
    non-empty ``str`` piece; an announced call's fields): this runs once per streamed piece,
    and validating the event's fields was its largest cost beside the parse. ``fields`` is
    one of the shared sets above, never changed (pydantic's serializer wants a ``set``)."""
    event = _new(model)
    _set_dict(event, state)
    _set_fields(event, fields)
    _set_extra(event, None)
    _set_private(event, None)
    return event


def _fragment_event(call: _Call, fragment: str) -> ToolCallDelta:
    """A fragment's event: the call's announcement with the fragment in place."""
    call.arguments.add(fragment)
    state = call.announcement.__dict__.copy()
    state["arguments_fragment"] = fragment
    return _unvalidated(ToolCallDelta, state, _FRAGMENT_FIELDS)


class _Call:
    """One call's state; ``announcement`` is its validated first event, whose fields every
    later fragment's event repeats.

    A fragment's event is the announcement's state with the fragment in place, built without
    re-validating what the announcement's validation proved (the fragment, a ``str``, is the
    one field that differs): on a stream of tiny fragments, validating four fields per
    fragment was the largest cost beside the parse. It is the model ``ToolCallDelta(...)``
    would make, state for state.
    """

    __slots__ = ("announcement", "arguments", "closed", "metadata", "parsed")

    def __init__(self, announcement: ToolCallDelta) -> None:
        self.announcement = announcement
        self.arguments = TextPieces()
        self.closed = False
        self.metadata: dict[str, JsonValue] | None = None
        self.parsed: JsonValue = _UNSET

    @property
    def call_id(self) -> str:
        return self.announcement.call_id

    @property
    def name(self) -> str:
        return self.announcement.name


class TurnBuilder:
    """Assembles one turn; the events each call completes are appended to ``events``, a list
    the decoder swaps in per read (so they are delivered before the next read).

    Calls are numbered in announcement order from 0, unless the protocol numbers them itself
    (chat completions' ``index``: ``open_call(..., index=n)``, in any order; a codec numbers
    all its calls or none); the receipt lists them by number. A call without an upstream id
    gets ``call_<n>``, counting calls (not content blocks). A call whose arguments never
    arrive is closed with ``empty_arguments`` — ``"{}"`` by default, sent as a fragment too,
    so events and receipt agree; chat completions passes ``""``, keeping the empty text the
    server sent (no fragment is owed for it).

    The finish reason is what the codec last set: a finish reason is not a completion marker
    (servers put one on every chunk, or send content after it), so content after it is kept
    and the last one stands. What ends a turn is the protocol's completion marker, which the
    decoder tracks (``complete``); ``TurnBuilder`` takes whatever arrives before it.

    The hot-path variants ``text_event``, ``reasoning_event`` and ``arguments_event`` assemble
    a piece like ``text``, ``reasoning`` and ``call_arguments`` but return its event instead
    of appending it to ``events``, for a decoder that yields each frame's one event itself.

    A JSON-bounds failure met while the receipt is built names where it was met ("tool call
    0's arguments: …", "the answer: …"); with ``name_bounds=False`` it is the bound's own
    message, as the test doubles of ``runport.mock`` have always reported it.
    """

    __slots__ = (
        "_calls",
        "_citations",
        "_empty_arguments",
        "_files",
        "_name_bounds",
        "_reasoning",
        "_server",
        "_server_calls",
        "_text",
        "_unknown",
        "cache_read_tokens",
        "cache_write_tokens",
        "events",
        "finish",
        "finish_reason",
        "reasoning_tokens",
        "usage",
    )

    def __init__(self, *, empty_arguments: str = "{}", name_bounds: bool = True) -> None:
        self.events: list[StreamEvent] = []
        self._text = TextPieces()
        self._reasoning: list[_Reasoning] = []
        self._calls: dict[int, _Call] = {}
        self._server: list[ServerToolCall | ServerToolResult] = []
        self._server_calls: dict[str, str | None] = {}
        """Server tool calls announced: their name, ``None`` once answered."""
        self._citations: list[Citation] = []
        self._files: list[FilePart] = []
        self._unknown: dict[str, list[JsonValue]] = {}
        self._empty_arguments = empty_arguments
        self._name_bounds = name_bounds
        self.finish_reason: str | None = None
        self.finish: Finish | None = None
        self.usage: tuple[int, int] | None = None
        """``(input tokens, output tokens)`` as last reported (made a ``Usage`` only for the
        receipt: providers that repeat usage in every chunk cost a tuple per chunk)."""
        self.reasoning_tokens: int | None = None
        """Of the output tokens, those spent reasoning, where the provider reports them."""
        self.cache_read_tokens: int | None = None
        self.cache_write_tokens: int | None = None
        """Of the input tokens, those read from and written to the prompt cache, where the
        provider reports them (checked by ``cache_counts``; ADR 0051)."""

    def finished(self, reason: str, table: Mapping[str, Finish]) -> None:
        """The provider's finish reason, kept as sent and normalised by its protocol's
        ``table`` (``runport.core.normal_finish``); the last one stands."""
        self.finish_reason = reason
        self.finish = normal_finish(reason, table)

    def text(self, piece: str) -> None:
        if piece:
            self.events.append(self.text_event(piece))

    def text_event(self, piece: str) -> Delta:
        """``text`` for a non-empty piece, its event returned rather than appended."""
        self._text.add(piece)
        return _unvalidated(Delta, {"kind": "Delta", "text": piece}, _TEXT_FIELDS)

    def text_so_far(self) -> str:
        """The turn's text so far (a codec checks a finished item against what streamed)."""
        return self._text.held()

    def text_length(self) -> int:
        """``len(text_so_far())``, without joining the text."""
        return self._text.length()

    def text_since(self, start: int) -> str:
        """``text_so_far()[start:]``, copying only that."""
        return self._text.since(start)

    def reasoning_so_far(self) -> str:
        """The current reasoning block's text so far (``""`` when no block is open)."""
        return self._reasoning[-1].text.held() if self._reasoning else ""

    def open_reasoning(self, metadata: dict[str, JsonValue] | None = None) -> None:
        """A new reasoning block begins (an Anthropic ``thinking`` block, a Responses
        ``reasoning`` item); ``metadata`` is what the provider wants back with it."""
        self._reasoning.append(_Reasoning(dict(metadata) if metadata else None))

    def reasoning(self, piece: str) -> None:
        """A piece of the current reasoning block's text (a block is opened if none is): its
        ``ReasoningDelta`` is owed at once; an empty piece is no event."""
        if piece:
            self.events.append(self.reasoning_event(piece))

    def reasoning_event(self, piece: str) -> ReasoningDelta:
        """``reasoning`` for a non-empty piece, its event returned rather than appended."""
        blocks = self._reasoning
        if not blocks:
            self.open_reasoning()
        blocks[-1].text.add(piece)
        return _unvalidated(ReasoningDelta, {"kind": "ReasoningDelta", "text": piece}, _TEXT_FIELDS)

    def reasoning_metadata(self, metadata: dict[str, JsonValue]) -> None:
        """Merge what the provider wants back into the current block (a signature that
        arrives after the text); a block is opened if none is (a signature with no text)."""
        if not self._reasoning:
            self.open_reasoning()
        block = self._reasoning[-1]
        block.metadata = {**(block.metadata or {}), **metadata}

    def whole_reasoning(self, text: str, metadata: dict[str, JsonValue] | None = None) -> None:
        """A reasoning block that arrives in one piece (an unstreamed response, a redacted
        block whose ``metadata`` holds its data and whose text is empty)."""
        self.open_reasoning(metadata)
        self.reasoning(text)

    def open_call(
        self,
        name: str,
        call_id: str | None = None,
        *,
        index: int | None = None,
        arguments: str = "",
    ) -> int:
        """Announce a call (a ``ToolCallDelta`` whose fragment is ``arguments``, the text that
        came before the name — empty, in most protocols); returns its index. ``index`` is the
        protocol's own number for the call, else the next in announcement order."""
        if not name:
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "a tool call has no name")
        if index is None:
            index = len(self._calls)
        elif index in self._calls:
            raise PortError(
                ErrorCode.RUNTIME_INVALID_RESPONSE, f"tool call {index} was announced twice"
            )
        call_id = call_id or f"call_{index}"
        if (
            type(name) is str
            and type(call_id) is str
            and type(arguments) is str
            and type(index) is int
            and index >= 0
        ):
            # what validation would check is checked (non-empty strings, a number from 0)
            state = {
                "kind": "ToolCallDelta",
                "index": index,
                "call_id": call_id,
                "name": name,
                "arguments_fragment": arguments,
            }
            announcement = _unvalidated(ToolCallDelta, state, _FRAGMENT_FIELDS)
        else:
            announcement = ToolCallDelta(
                index=index, call_id=call_id, name=name, arguments_fragment=arguments
            )
        call = _Call(announcement)
        if arguments:
            call.arguments.add(arguments)
        self._calls[index] = call
        self.events.append(announcement)
        return index

    def call_arguments(self, index: int, fragment: str) -> None:
        call = self._calls[index]
        if fragment and not call.closed:
            self.events.append(_fragment_event(call, fragment))

    def call_metadata(self, index: int, metadata: dict[str, JsonValue]) -> None:
        """What the provider wants back with call ``index`` (``ToolCall.provider_metadata``),
        for a call announced before its arguments (a Gemini signature on a streamed call)."""
        self._calls[index].metadata = metadata

    def arguments_event(self, index: int, fragment: str) -> ToolCallDelta | None:
        """``call_arguments`` for a non-empty fragment, its event returned rather than
        appended; ``None`` (nothing assembled) when no open call has that index."""
        call = self._calls.get(index)
        if call is None or call.closed:
            return None
        return _fragment_event(call, fragment)

    def _assemble_provided(
        self, event: ServerToolCall | ServerToolResult | Citation | FileDelta
    ) -> None:
        """``assemble`` for what the provider did itself, with the checks its makers make."""
        if isinstance(event, ServerToolCall):
            if event.call_id in self._server_calls:
                raise PortError(
                    ErrorCode.RUNTIME_INVALID_RESPONSE,
                    f"server tool call {event.call_id!r} was announced twice",
                )
            self._server_calls[event.call_id] = event.name
            self._server.append(event)
        elif isinstance(event, ServerToolResult):
            if self._server_calls.get(event.call_id) is None:
                raise PortError(
                    ErrorCode.RUNTIME_INVALID_RESPONSE,
                    f"a server tool result for call {event.call_id!r}, never announced or "
                    "already answered",
                )
            self._server_calls[event.call_id] = None
            self._server.append(event)
        elif isinstance(event, Citation):
            self._citations.append(event)
        else:
            part = _file_part(event.media_type, event.data)  # a preview is checked too
            if not event.partial:
                self._files.append(part)

    def assemble(self, event: ProgressEvent) -> None:
        """An event made elsewhere, assembled as the piece it carries; no event is made or
        appended (a test double plays events it made and checked itself). A
        ``ReasoningDelta`` joins the current block (a block is opened if none is); a
        ``ToolCallDelta`` with a new index announces that call, with its own fields."""
        kind = type(event)
        if kind is Delta:
            self._text.add(event.text)  # type: ignore[union-attr]
        elif isinstance(event, ServerToolCall | ServerToolResult | Citation | FileDelta):
            self._assemble_provided(event)
        elif kind is ReasoningDelta:
            if not self._reasoning:
                self.open_reasoning()
            self._reasoning[-1].text.add(event.text)  # type: ignore[union-attr]
        else:
            assert isinstance(event, ToolCallDelta)
            call = self._calls.get(event.index)
            if call is None:
                call = self._calls[event.index] = _Call(event)
            elif call.closed:
                return
            if event.arguments_fragment:
                call.arguments.add(event.arguments_fragment)

    def server_call(
        self,
        call_id: str,
        name: str,
        input: JsonValue = None,
        metadata: dict[str, JsonValue] | None = None,
        *,
        decoded: bool = False,
    ) -> None:
        """A tool the provider runs itself is announced: its ``ServerToolCall`` is owed at
        once, and it is kept in the receipt's ``server_tools``; never a call the run makes.
        ``metadata`` is what the provider wants back with it in a later turn. ``decoded``
        says ``input`` and ``metadata`` are plain JSON values (parsed from a body, or made
        of ``str``/``dict`` by the codec): they are kept without walking them again."""
        if not call_id or not name:
            raise PortError(
                ErrorCode.RUNTIME_INVALID_RESPONSE, "a server tool call has no id or no name"
            )
        if call_id in self._server_calls:
            raise PortError(
                ErrorCode.RUNTIME_INVALID_RESPONSE,
                f"server tool call {call_id!r} was announced twice",
            )
        metadata = metadata or None
        if (
            type(call_id) is str
            and type(name) is str
            and (decoded or (_json(input) and _json_object(metadata)))
        ):
            event = _unvalidated(
                ServerToolCall,
                {
                    "kind": "ServerToolCall",
                    "call_id": call_id,
                    "name": name,
                    "input": input,
                    "provider_metadata": metadata,
                },
                _SERVER_CALL_FIELDS,
            )
        else:
            event = ServerToolCall(
                call_id=call_id, name=name, input=input, provider_metadata=metadata
            )
        self._server_calls[call_id] = name
        self._server.append(event)
        self.events.append(event)

    def server_result(
        self,
        call_id: str,
        output: JsonValue = None,
        *,
        error: str | None = None,
        metadata: dict[str, JsonValue] | None = None,
        decoded: bool = False,
    ) -> None:
        """What a server tool announced by ``server_call`` returned (or its ``error``): a
        result for a call never announced, or answered twice, is ``INVALID_RESPONSE``.
        ``decoded``: as ``server_call``'s, for ``output`` and ``metadata``."""
        name = self._server_calls.get(call_id)
        if name is None:
            said = "already answered" if call_id in self._server_calls else "never announced"
            raise PortError(
                ErrorCode.RUNTIME_INVALID_RESPONSE,
                f"a server tool result for call {call_id!r}, {said}",
            )
        self._server_calls[call_id] = None
        error, metadata = error or None, metadata or None
        if (error is None or type(error) is str) and (
            decoded or (_json(output) and _json_object(metadata))
        ):
            event = _unvalidated(
                ServerToolResult,
                {
                    "kind": "ServerToolResult",
                    "call_id": call_id,
                    "name": name,
                    "output": output,
                    "error": error,
                    "provider_metadata": metadata,
                },
                _SERVER_RESULT_FIELDS,
            )
        else:
            event = ServerToolResult(
                call_id=call_id, name=name, output=output, error=error, provider_metadata=metadata
            )
        self._server.append(event)
        self.events.append(event)

    def server_call_name(self, call_id: str) -> str | None:
        """The name of server tool call ``call_id`` while it is unanswered, else ``None``."""
        return self._server_calls.get(call_id)

    def citation(
        self,
        source: dict[str, JsonValue],
        *,
        cited_text: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> None:
        """A source the answer cites (``source`` is a ``CitationSource``'s fields); its
        ``Citation`` is owed at once. A span past the turn's text is refused when the receipt
        is built (the text it points into may still be arriving)."""
        self.events.append(self.citation_event(source, cited_text, start, end))

    def citation_event(
        self,
        source: dict[str, JsonValue],
        cited_text: str | None = None,
        start: int | None = None,
        end: int | None = None,
        *,
        checked: bool = False,
    ) -> Citation:
        """``citation``, its event returned rather than appended (for a decoder that yields
        each frame's one event itself, as ``arguments_event`` is). ``checked`` says the
        caller made ``source`` itself of known fields whose values it checked as the event
        wants them (a ``url``/``document`` type, ``str`` texts, a document index an ``int``
        ≥ 0) and gives a ``str`` or no ``cited_text`` and a span of ``int`` ≥ 0 in order:
        they are not checked again. A span past the text is still refused by ``receipt``."""
        cited_text = cited_text or None
        if checked or _plain_citation(source, cited_text, start, end):
            keys = tuple(source)
            fields = _SOURCE_FIELDS.get(keys)
            if fields is None:
                fields = _SOURCE_FIELDS[keys] = set(keys)
            event: Citation = _unvalidated(
                Citation,
                {
                    "kind": "Citation",
                    "source": _unvalidated(CitationSource, {**_NO_SOURCE, **source}, fields),
                    "cited_text": cited_text,
                    "start": start,
                    "end": end,
                },
                _CITATION_FIELDS,
            )
        else:
            try:
                event = Citation(
                    source=CitationSource.model_validate(source),
                    cited_text=cited_text,
                    start=start,
                    end=end,
                )
            except ValidationError as error:
                raise PortError(
                    ErrorCode.RUNTIME_INVALID_RESPONSE,
                    f"a citation is malformed: {_first_problem(error)}",
                ) from None
        self._citations.append(event)
        return event

    def file(self, media_type: str, data: str, *, partial: bool = False) -> None:
        """A file the model generated (``data``: base64): its ``FileDelta`` is owed at once;
        a whole one (not ``partial``) is kept as a ``FilePart`` in the receipt's ``files``.
        Each, a preview too, is checked as any part is (base64, the bytes its media type
        promises, the size bound) before its event is owed: every surface shows it as a
        ``data:`` URL of that type (adr/0064)."""
        if not media_type or not data:
            raise PortError(
                ErrorCode.RUNTIME_INVALID_RESPONSE, "a generated file has no media type or data"
            )
        part = _file_part(media_type, data)
        if not partial:
            self._files.append(part)
        self.events.append(FileDelta(media_type=media_type, data=data, partial=partial))

    def unknown(self, provider: str, item: JsonValue) -> None:
        """Something the provider sent that runport has no type for (a content block, an
        output item), kept verbatim in the receipt's ``provider_metadata[provider]
        ["unknown"]``, in arrival order (adr/0054-nothing-a-provider-sends-is-dropped.md)."""
        self._unknown.setdefault(provider, []).append(item)

    def has_call(self, index: int) -> bool:
        return index in self._calls

    @property
    def empty(self) -> bool:
        """Whether nothing has arrived but reasoning (no text, no tool call, no server tool,
        citation or file, nothing kept unknown), as reasoning is not an answer."""
        return not (self._text.count or self._calls or self._server or self._files or self._unknown)

    def has_arguments(self, index: int) -> bool:
        """Whether any of call ``index``'s arguments arrived (a protocol that repeats them
        whole at the call's end sends them only when none did)."""
        return self._calls[index].arguments.count > 0

    def arguments_so_far(self, index: int) -> str:
        """Call ``index``'s argument text so far."""
        return self._calls[index].arguments.held()

    def call_identity(self, index: int) -> tuple[str, str]:
        """``(call_id, name)`` of an announced call."""
        announcement = self._calls[index].announcement
        return announcement.call_id, announcement.name

    def close_call(self, index: int) -> None:
        """The call is whole: if no arguments arrived, they are ``empty_arguments``."""
        call = self._calls[index]
        if not call.closed:
            if not call.arguments.count:
                self.call_arguments(index, self._empty_arguments)
            call.closed = True

    def close_calls(self) -> None:
        """Every call is whole (the protocol's completion marker)."""
        for index in self._calls:
            self.close_call(index)

    def whole_call(
        self,
        name: str,
        call_id: str | None,
        arguments: str,
        metadata: dict[str, JsonValue] | None = None,
        *,
        parsed: JsonValue = _UNSET,
    ) -> None:
        """A call that arrives in one piece: announced, its arguments sent as one fragment;
        ``metadata`` is what the provider wants back with it (``ToolCall.provider_metadata``).
        ``parsed`` is the value ``arguments`` is the JSON text of, when the codec has it (a
        protocol that sends arguments as an object, encoded for the fragment): the receipt
        takes it rather than parsing the text again, the text still held to the JSON bounds."""
        call = self._calls[self.open_call(name, call_id)]
        call.metadata = metadata
        call.parsed = parsed
        fragment = arguments or self._empty_arguments  # close_call's rule, the call closed here
        if fragment:
            self.events.append(_fragment_event(call, fragment))
        call.closed = True

    def receipt(
        self, request: ExecutionRequest, adapter: AdapterDescriptor, *, output: JsonValue = _UNSET
    ) -> ExecutionReceipt:
        """The turn's receipt. The joined text replaces the pieces, so the turn's text is
        held once, not twice, while the receipt is built. ``output``, when given, is the
        answer instead of the one derived from the text (``build_receipt``: deterministic
        runtimes only)."""
        self.close_calls()
        named = self._name_bounds
        calls = [
            _parsed_tool_call(
                call.call_id,
                call.name,
                call.arguments.take(),
                call.metadata,
                index if named else None,
                call.parsed,
            )
            for index, call in sorted(self._calls.items())
        ]
        text = self._text.take()
        _check_spans(self._citations, len(text))
        return _turn_receipt(
            "the answer" if named else None,
            request,
            adapter,
            text=text,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            finish=self.finish,
            usage=None
            if self.usage is None
            else Usage(
                input_tokens=self.usage[0],
                output_tokens=self.usage[1],
                reasoning_tokens=self.reasoning_tokens,
                cache_read_tokens=self.cache_read_tokens,
                cache_write_tokens=self.cache_write_tokens,
            ),
            reasoning=[block.part() for block in self._reasoning],
            output=output,
            server_tools=self._server,
            citations=self._citations,
            files=self._files,
            provider_metadata={
                provider: {"unknown": items} for provider, items in self._unknown.items()
            },
        )


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    return f"{where}: {problem['msg']}" if where else problem["msg"]


def _file_part(media_type: str, data: str) -> FilePart:
    """A generated file as a receipt's ``FilePart``: bytes that are not base64, not what the
    media type promises, or past ``MAX_PART_BYTES`` are refused, coded."""
    try:
        return FilePart(media_type=media_type, data=data)
    except ValidationError as error:
        if any(problem["type"] == PART_TOO_LARGE for problem in error.errors()):
            code = ErrorCode.RUNTIME_RESPONSE_TOO_LARGE
        else:
            code = ErrorCode.RUNTIME_INVALID_RESPONSE
        raise PortError(code, f"a generated file is refused: {_first_problem(error)}") from None


def _check_spans(citations: list[Citation], length: int) -> None:
    """A citation whose span points past the turn's text (``length`` characters) is
    ``INVALID_RESPONSE``: it cites an answer that was never given."""
    for citation in citations:
        for at in (citation.start, citation.end):
            if at is not None and at > length:
                raise PortError(
                    ErrorCode.RUNTIME_INVALID_RESPONSE,
                    f"a citation points at character {at}, past the answer's {length}",
                )


def _bounds_error(error: JsonLimitError, what: str | None) -> PortError:
    """``JsonLimitError`` met in an upstream's ``what`` (unnamed: ``None``) as the coded
    failure of the call."""
    message = error.message if what is None else f"{what}: {error.message}"
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)


def parsed_tool_call(
    index: int,
    call_id: str,
    name: str,
    arguments: str,
    metadata: dict[str, JsonValue] | None = None,
) -> ToolCall:
    """A call whose arguments' text is checked against the JSON bounds, then parsed (or kept
    as a string when it is not JSON, docs/wire-types.md)."""
    return _parsed_tool_call(call_id, name, arguments, metadata, index)


def _parsed_tool_call(
    call_id: str,
    name: str,
    arguments: str,
    metadata: dict[str, JsonValue] | None,
    index: int | None,
    parsed: JsonValue = _UNSET,
) -> ToolCall:
    """``parsed_tool_call``; a bounds failure names call ``index`` unless it is ``None``.
    ``parsed``, when given, is the value ``arguments`` encodes (``whole_call``): taken as it is
    when the text could not be past a bound (few brackets, no long run of digits, no escape),
    else the text is parsed, as any."""
    try:
        if parsed is _UNSET or not _within_bounds(arguments):
            value = parse_json_text(arguments)[1]
        else:
            value = parsed
    except JsonLimitError as error:
        where = None if index is None else f"tool call {index}'s arguments"
        raise _bounds_error(error, where) from None
    # The parsed value (or the text itself) is JSON by construction: validating it again as a
    # ``JsonValue`` would walk every element in Python, so only the call's identity is
    # validated and the value is put in unvalidated; an identity of two non-empty strings
    # with no metadata (every call a TurnBuilder announced without any) needs no validating.
    if metadata is None and type(call_id) is str and type(name) is str and call_id and name:
        state: dict[str, object] = {
            "call_id": call_id,
            "name": name,
            "arguments": value,
            "provider_metadata": None,
        }
        return _unvalidated(ToolCall, state, _CALL_FIELDS)
    call = ToolCall(call_id=call_id, name=name, arguments=None, provider_metadata=metadata)
    return call.model_copy(update={"arguments": value})


def _within_bounds(text: str) -> bool:
    """Whether JSON ``text`` is surely within the bounds ``parse_json_text`` checks: too few
    brackets to nest past the depth, no run of digits long enough for an integer past its
    digits, no ``\\u`` escape (a lone surrogate). ``False`` asks for the full parse."""
    return (
        text.count("[") + text.count("{") <= MAX_JSON_DEPTH
        and "\\u" not in text
        and _LONG_DIGITS.search(text) is None
    )


_LONG_DIGITS: Final = re.compile(rf"\d{{{MAX_INT_DIGITS + 1}}}")


def turn_receipt(
    request: ExecutionRequest,
    adapter: AdapterDescriptor,
    *,
    text: str,
    tool_calls: list[ToolCall],
    finish_reason: str | None,
    usage: Usage | None,
    reasoning: list[ReasoningPart] | None = None,
    finish: Finish | None = None,
) -> ExecutionReceipt:
    """A decoded turn's receipt through ``build_receipt``: a structured answer
    past the JSON bounds (met while it is parsed, once) and text that is not valid Unicode (a
    lone surrogate escape), which cannot be fingerprinted, are ``INVALID_RESPONSE``."""
    return _turn_receipt(
        "the answer",
        request,
        adapter,
        text=text,
        tool_calls=tool_calls,
        finish_reason=finish_reason,
        usage=usage,
        reasoning=reasoning,
        finish=finish,
    )


def _turn_receipt(
    where: str | None,
    request: ExecutionRequest,
    adapter: AdapterDescriptor,
    *,
    text: str,
    tool_calls: list[ToolCall],
    finish_reason: str | None,
    usage: Usage | None,
    reasoning: list[ReasoningPart] | None,
    output: JsonValue = _UNSET,
    finish: Finish | None = None,
    server_tools: list[ServerToolCall | ServerToolResult] | None = None,
    citations: list[Citation] | None = None,
    files: list[FilePart] | None = None,
    provider_metadata: dict[str, JsonValue] | None = None,
) -> ExecutionReceipt:
    explicit = {} if output is _UNSET else {"output": output}
    try:
        return build_receipt(
            request,
            adapter=adapter,
            text=text,
            tool_calls=tool_calls,
            finish_reason=finish_reason,
            usage=usage,
            reasoning=reasoning or (),
            finish=finish,
            server_tools=server_tools or (),
            citations=citations or (),
            files=files or (),
            provider_metadata=provider_metadata,
            **explicit,
        )
    except JsonLimitError as error:
        raise _bounds_error(error, where) from None
    except UnicodeEncodeError:
        raise PortError(
            ErrorCode.RUNTIME_INVALID_RESPONSE, "the response's text is not valid Unicode"
        ) from None
