"""One Messages API answer — its content blocks, stop reason and usage — assembled into a
``TurnBuilder``, block by block, whether the blocks arrive as stream events or whole in one
JSON body (docs/streaming-law.md, law 2)."""

from __future__ import annotations

import json
from typing import Any, Final

from pydantic import JsonValue

from runport.anthropic._answer import SpaceStripper
from runport.anthropic._errors import invalid
from runport.anthropic._request import ANSWER_TOOL, PROVIDER
from runport.contracts import Finish, StreamEvent
from runport.core import TurnBuilder
from runport.http import cache_counts

FINISHES: Final[dict[str, Finish]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "pause_turn": "pause",
    "refusal": "content_filter",
}
"""Messages ``stop_reason`` words normalised (``ExecutionReceipt.finish``); any other is
``other``."""

_TEXT = -1
_ANSWER = -2
_IGNORED = -3
_THINKING = -4
_SERVER = -5

_SERVER_CALLS: Final = frozenset({"server_tool_use", "mcp_tool_use"})
"""Blocks that announce a tool the provider runs itself (its web search, code execution, URL
fetch, an MCP server it calls)."""
_CALL_FIELDS: Final = frozenset({"type", "id", "name", "input"})
_RESULT_FIELDS: Final = frozenset({"type", "tool_use_id", "content"})
_DOCUMENT_CITATIONS: Final = frozenset({"char_location", "page_location", "content_block_location"})


class _Block:
    __slots__ = ("fragments", "initial", "kind", "pieces", "stripper")

    def __init__(self, kind: int, initial: Any = None) -> None:
        self.kind = kind  # a call's index in the turn, or one of the negative kinds
        self.initial = initial  # a tool's input; a thinking block's place among the turn's;
        # a server tool's block; a text block's offset in the turn's text
        self.fragments = 0
        self.stripper = SpaceStripper() if kind == _ANSWER else None
        self.pieces: list[str] = []  # a server tool's input, as it streams


class MessageAssembly:
    """Content blocks by their index. Only ``tool_use`` blocks are tool calls; a server-side
    tool (``server_tool_use``, ``mcp_tool_use``) ran at the provider and is not. With a
    structured contract the forced answer tool's input *is* the answer: its fragments are text,
    without the whitespace outside strings, so a streamed and a whole answer read the same
    (ADR 0025).

    Thinking is reasoning, never the answer: a ``thinking`` block is one reasoning block
    (``thinking_delta`` pieces are its ``ReasoningDelta``s, ``signature_delta`` its signature,
    kept as ``{"anthropic": {"type": "thinking", "signature": …}}``), a ``redacted_thinking``
    block one with empty text whose ``data`` is kept (``{"anthropic": {"type":
    "redacted_thinking", "data": …}}``) — what the API wants back, unmodified, in a later turn.

    Usage: ``message_delta``'s counts are cumulative and override ``message_start``'s;
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` (sent in ``message_start``,
    kept when ``message_delta`` leaves them out) are ``Usage.cache_read_tokens`` and
    ``cache_write_tokens`` and are added to ``input_tokens``, which then counts every input
    token as OpenAI's and Gemini's do (ADR 0051). The API reports no
    separate count of thinking tokens (they are in ``output_tokens``).
    """

    __slots__ = (
        "_answer_tool",
        "_blocks",
        "_cache_read",
        "_cache_write",
        "_input",
        "_output",
        "_thoughts",
        "turn",
    )

    def __init__(self, turn: TurnBuilder, *, answer_tool: bool) -> None:
        self.turn = turn
        self._answer_tool = answer_tool
        self._blocks: dict[int, _Block] = {}
        self._input: int | None = None
        self._output: int | None = None
        self._cache_read: int | None = None
        self._cache_write: int | None = None
        self._thoughts = 0  # reasoning blocks opened so far

    def start(self, index: Any, block: Any) -> None:
        if type(index) is not int or type(block) is not dict:
            raise invalid("a content block has no index or is not an object")
        if index in self._blocks:
            raise invalid(f"content block {index} started twice")
        kind = block.get("type")
        if kind == "text":
            offset = self.turn.text_length()
            self._blocks[index] = _Block(_TEXT, offset)
            citations = block.get("citations")
            if citations is not None:
                if type(citations) is not list:
                    raise invalid(f"content block {index}: its citations are not a list")
                for citation in citations:
                    self._citation(citation, offset)
            self.turn.text(_text(block.get("text")))
        elif kind in _SERVER_CALLS:
            if type(block.get("id")) is not str or type(block.get("name")) is not str:
                raise invalid(f"content block {index}: a {kind} block without an id or a name")
            self._blocks[index] = _Block(_SERVER, block)
        elif type(kind) is str and kind.endswith("_tool_result") and kind != "tool_result":
            self._blocks[index] = _Block(_IGNORED)
            self._server_result(index, block)
        elif kind == "tool_use":
            name = block.get("name")
            call_id = block.get("id")
            if type(name) is not str or (call_id is not None and type(call_id) is not str):
                raise invalid(f"content block {index}: a tool_use block without a name")
            initial = block.get("input")
            if self._answer_tool and name == ANSWER_TOOL:
                self._blocks[index] = _Block(_ANSWER, initial)
            else:
                self._blocks[index] = _Block(self.turn.open_call(name, call_id), initial)
        elif kind == "thinking":
            self._blocks[index] = _Block(_THINKING, self._thoughts)
            self._thoughts += 1
            self.turn.open_reasoning({PROVIDER: {"type": "thinking"}})
            thinking = block.get("thinking")
            if thinking is not None:
                if type(thinking) is not str:
                    raise invalid(f"content block {index}: a thinking block's text is no string")
                self.turn.reasoning(thinking)
            self._signature(index, block.get("signature"))
        elif kind == "redacted_thinking":
            data = block.get("data")
            if type(data) is not str or not data:
                raise invalid(f"content block {index}: a redacted_thinking block has no data")
            self._blocks[index] = _Block(_IGNORED)
            self._thoughts += 1
            redacted: dict[str, JsonValue] = {"type": "redacted_thinking", "data": data}
            self.turn.whole_reasoning("", {PROVIDER: redacted})
        else:
            # A kind this codec does not know is kept, as it started (ADR 0054).
            self._blocks[index] = _Block(_IGNORED)
            self.turn.unknown(PROVIDER, block)

    def _server_result(self, index: int, block: dict[str, Any]) -> None:
        """A ``*_tool_result`` block: what a server tool announced before it returned, kept
        whole (``content`` as it is, ``encrypted_content`` intact) to go back in history."""
        call_id = block.get("tool_use_id")
        if type(call_id) is not str:
            raise invalid(f"content block {index}: a {block.get('type')} block without a call id")
        content = block.get("content")
        error: str | None = None
        if type(content) is dict and str(content.get("type", "")).endswith("_error"):
            code = content.get("error_code")
            error = code if type(code) is str and code else str(content.get("type"))
        elif block.get("is_error") is True:
            error = "is_error"
        metadata = {key: value for key, value in block.items() if key not in _RESULT_FIELDS}
        metadata["type"] = block["type"]
        # the block's own decoded values: kept without walking them again
        self.turn.server_result(
            call_id, content, error=error, metadata={PROVIDER: metadata}, decoded=True
        )

    def _server_call(self, index: int, block: _Block) -> None:
        """A server tool block is whole: its input is what streamed, else what it started
        with; it is announced now, with what goes back with it."""
        start: dict[str, Any] = block.initial
        value: Any = start.get("input")
        if block.pieces:
            try:
                value = json.loads("".join(block.pieces))
            except ValueError:
                raise invalid(f"content block {index}: a server tool's input is not JSON") from None
        metadata = {key: item for key, item in start.items() if key not in _CALL_FIELDS}
        metadata["type"] = start["type"]
        self.turn.server_call(
            start["id"],
            start["name"],
            {} if value is None else value,
            {PROVIDER: metadata},
            decoded=True,  # decoded from the stream or the body, as the metadata is
        )

    def _citation(self, citation: Any, offset: int) -> None:
        """A citation on a text block: the block's text, from ``offset`` in the turn's, cites
        it. Web results are ``url`` sources; char, page and content-block locations in the
        request's documents are ``document`` sources; a kind not known is kept (ADR 0054)."""
        if type(citation) is not dict:
            raise invalid("a citation is not an object")
        kind = citation.get("type")
        quoted = citation.get("cited_text")
        if quoted is not None and type(quoted) is not str:
            raise invalid("a citation's cited_text is not a string")
        source: dict[str, Any]
        if kind == "web_search_result_location":
            source = {"type": "url"}
            url, title = citation.get("url"), citation.get("title")
        elif kind in _DOCUMENT_CITATIONS:
            source = {"type": "document"}
            at = citation.get("document_index")
            if at is not None:
                source["document_index"] = at
            url, title = None, citation.get("document_title")
        elif kind == "search_result_location":
            found = citation.get("source")
            is_url = type(found) is str and found.startswith(("https://", "http://"))
            source = {"type": "url" if is_url else "document"}
            url, title = found if is_url else None, citation.get("title")
        else:
            self.turn.unknown(PROVIDER, {"citation": citation})
            return
        if url is not None:
            source["url"] = url
        if title is not None:
            source["title"] = title
        self.turn.citation(source, cited_text=quoted, start=offset)

    def _signature(self, index: int, signature: Any) -> None:
        """A thinking block's signature (the last one given stands, as in the SDK)."""
        if signature is None or signature == "":
            return
        if type(signature) is not str:
            raise invalid(f"content block {index}: a thinking block's signature is no string")
        self.turn.reasoning_metadata({PROVIDER: {"type": "thinking", "signature": signature}})

    def _current_thought(self, index: int, block: _Block) -> None:
        """Reasoning pieces go to the turn's latest block: a thinking block's deltas must come
        before the next reasoning block opens (the API streams one block at a time)."""
        if block.initial != self._thoughts - 1:
            raise invalid(f"content block {index}: thinking arrived after a later block began")

    def single(self, index: Any, delta: Any) -> StreamEvent | None:
        """The one event a delta of the usual shape makes — a non-empty piece of a text
        block's text, of a tool call's arguments or of the open thinking block's text —
        assembled and returned; ``None``, with nothing assembled, for any other delta
        (``delta`` then reads it, with its checks)."""
        block = self._blocks.get(index) if type(index) is int else None
        if block is None or type(delta) is not dict:
            return None
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if block.kind == _TEXT and type(text) is str and text:
                return self.turn.text_event(text)
        elif kind == "input_json_delta":
            fragment = delta.get("partial_json")
            if block.kind >= 0 and type(fragment) is str and fragment:
                made = self.turn.arguments_event(block.kind, fragment)
                if made is not None:
                    block.fragments += 1
                return made
        elif kind == "thinking_delta":
            piece = delta.get("thinking")
            thinking = block.kind == _THINKING and block.initial == self._thoughts - 1
            if thinking and type(piece) is str and piece:
                return self.turn.reasoning_event(piece)
        elif kind == "citations_delta":
            # A citation of the usual shape — a web search result's ``url`` (and ``title``),
            # a document location's ``document_index`` (and ``document_title``), a string or
            # no ``cited_text`` — as ``_citation`` reads it, its fields checked here once
            # (``citation_event`` is told so); any other is ``_citation``'s, with its checks.
            citation = delta.get("citation")
            if block.kind != _TEXT or type(citation) is not dict:
                return None
            quoted = citation.get("cited_text")
            if quoted is not None and type(quoted) is not str:
                return None
            kind = citation.get("type")
            source: dict[str, JsonValue]
            if kind == "web_search_result_location":
                url, title = citation.get("url"), citation.get("title")
                if type(url) is not str:
                    return None
                source = {"type": "url", "url": url}
            elif kind in _DOCUMENT_CITATIONS:
                at, title = citation.get("document_index"), citation.get("document_title")
                if type(at) is not int or at < 0:
                    return None
                source = {"type": "document", "document_index": at}
            else:
                return None
            if title is not None:
                if type(title) is not str:
                    return None
                source["title"] = title
            return self.turn.citation_event(source, quoted, block.initial, checked=True)
        return None

    def delta(self, index: Any, delta: Any) -> None:
        # The hot path: one call per streamed fragment, so the checks are inlined.
        block = self._blocks.get(index) if type(index) is int else None
        if block is None:
            raise invalid("a delta for a content block that never started")
        if type(delta) is not dict:
            raise invalid("a content block delta is not an object")
        kind = delta.get("type")
        if kind == "text_delta":
            if block.kind == _TEXT:
                text = delta.get("text")
                if type(text) is str:
                    if text:
                        self.turn.text(text)
                elif text is not None:
                    raise invalid("a text_delta's text is not a string")
        elif kind == "citations_delta" and block.kind == _TEXT:  # after its text, as often
            self._citation(delta.get("citation"), block.initial)
        elif kind == "input_json_delta" and (block.kind >= 0 or block.kind == _ANSWER):
            fragment = delta.get("partial_json")
            if type(fragment) is str:
                if fragment:
                    block.fragments += 1
                    if block.stripper is not None:
                        self.turn.text(block.stripper.strip(fragment))
                    else:
                        self.turn.call_arguments(block.kind, fragment)
            elif fragment is not None:
                raise invalid("an input_json_delta's partial_json is not a string")
        elif kind == "thinking_delta":
            if block.kind == _THINKING:
                piece = delta.get("thinking")
                if type(piece) is str:
                    if piece:
                        self._current_thought(index, block)
                        self.turn.reasoning(piece)
                elif piece is not None:
                    raise invalid("a thinking_delta's thinking is not a string")
        elif kind == "signature_delta" and block.kind == _THINKING:
            self._current_thought(index, block)
            self._signature(index, delta.get("signature"))
        elif kind == "input_json_delta" and block.kind == _SERVER:
            fragment = delta.get("partial_json")
            if type(fragment) is not str:
                raise invalid("an input_json_delta's partial_json is not a string")
            block.pieces.append(fragment)

    def stop(self, index: Any) -> None:
        block = self._blocks.get(index) if type(index) is int else None
        if block is None:
            raise invalid("a content block stopped that never started")
        if block.kind == _SERVER:
            if block.fragments == 0:
                block.fragments = 1
                self._server_call(index, block)
            return
        if block.kind < _ANSWER or block.kind == _TEXT or block.fragments:
            if block.kind >= 0:
                self.turn.close_call(block.kind)
            return
        initial = block.initial
        whole = "{}"
        if type(initial) is dict and initial:
            whole = json.dumps(initial, ensure_ascii=False, separators=(",", ":"))
        block.fragments += 1
        self._arguments(block, whole)
        if block.kind >= 0:
            self.turn.close_call(block.kind)

    def _arguments(self, block: _Block, fragment: str) -> None:
        if block.kind == _ANSWER:
            self.turn.text(fragment)
        else:
            self.turn.call_arguments(block.kind, fragment)

    def answers(self, index: int) -> bool:
        """Whether block ``index`` is the forced answer tool's."""
        block = self._blocks.get(index)
        return block is not None and block.kind == _ANSWER

    def stop_reason(self, reason: Any) -> None:
        if reason is not None:
            if type(reason) is not str:
                raise invalid("a stop_reason is not a string")
            self.turn.finished(reason, FINISHES)

    def usage(self, usage: Any) -> None:
        if usage is None:
            return
        if type(usage) is not dict:
            raise invalid("usage is not an object")
        for key in ("input_tokens", "output_tokens"):
            count = usage.get(key)
            if count is None:
                continue
            if type(count) is not int or count < 0:
                raise invalid("usage does not hold token counts")
            if key == "input_tokens":
                self._input = count
            else:
                self._output = count
        read, write = cache_counts(
            usage.get("cache_read_input_tokens"),
            usage.get("cache_creation_input_tokens"),
            input_tokens=None,
        )
        if read is not None:
            self._cache_read = read
        if write is not None:
            self._cache_write = write
        if self._input is not None or self._output is not None:
            cached = (self._cache_read or 0) + (self._cache_write or 0)
            self.turn.usage = ((self._input or 0) + cached, self._output or 0)
            self.turn.cache_read_tokens = self._cache_read
            self.turn.cache_write_tokens = self._cache_write

    def close(self) -> None:
        """``message_stop``: every block that never said ``content_block_stop`` ends here."""
        for index in list(self._blocks):
            self.stop(index)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if type(value) is not str:
        raise invalid("a text field is not a string")
    return value
