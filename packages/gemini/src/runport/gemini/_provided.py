"""What Gemini did itself, read from a candidate (adr/0055-what-the-provider-did-itself.md):
code it ran (``executableCode`` then ``codeExecutionResult`` parts), files it generated
(``inlineData`` parts in the answer), the sources it grounded the answer in
(``groundingMetadata``: chunks, and supports naming which chunks back which span of the
text). Shared by the stream and the whole response."""

from __future__ import annotations

from typing import Any, Final

from pydantic import JsonValue

from runport.core import TurnBuilder
from runport.gemini._partial import invalid
from runport.gemini._request import PROVIDER

CODE: Final = "code_execution"
"""The name of Gemini's code execution tool, as its calls are named."""

KNOWN_PARTS: Final = frozenset(
    {
        "text",
        "thought",
        "thoughtSignature",
        "functionCall",
        "executableCode",
        "codeExecutionResult",
        "inlineData",
        "partMetadata",
    }
)
"""Part fields the codec reads; a part with none of them is kept as it came (ADR 0054)."""


class Provided:
    """Code execution, generated files and grounding of one response. Code runs pair in
    order: a ``codeExecutionResult`` answers the latest ``executableCode`` not yet answered
    (or the one its ``id`` names). A further result of a run already answered (Gemini sends one
    run's output and its failure as two results) is given as a run of the same code of its
    own, ``code_N.2`` and on, so no result is dropped and none answers a call twice.
    Grounding is read from every chunk that carries it; a citation already given (a chunk
    repeating the metadata) is not given twice."""

    __slots__ = ("_answered", "_cited", "_code", "_pending", "_ran", "turn")

    def __init__(self, turn: TurnBuilder) -> None:
        self.turn = turn
        self._code = 0
        self._pending: list[str] = []
        self._ran: dict[str, dict[str, Any]] = {}
        self._answered: dict[str, int] = {}
        self._cited: set[tuple[Any, ...]] = set()

    def part(self, part: dict[str, Any]) -> bool:
        """A part of what the provider did itself, read; ``False`` when it is none."""
        if "executableCode" in part:
            self._executable(part["executableCode"], part.get("id"))
        elif "codeExecutionResult" in part:
            self._result(part["codeExecutionResult"], part.get("id"))
        elif "inlineData" in part:
            blob = part["inlineData"]
            if type(blob) is not dict:
                raise invalid("an inlineData part is not an object")
            media_type, data = blob.get("mimeType"), blob.get("data")
            if type(media_type) is not str or type(data) is not str:
                raise invalid("an inlineData part has no mimeType or data")
            self.turn.file(media_type, data)
        elif part and not KNOWN_PARTS.intersection(part):
            self.turn.unknown(PROVIDER, part)
        else:
            return False
        return True

    def _executable(self, code: Any, given: Any) -> None:
        if type(code) is not dict:
            raise invalid("an executableCode part is not an object")
        call_id = given if type(given) is str and given else f"code_{self._code}"
        self._code += 1
        self._pending.append(call_id)
        self._ran[call_id] = code
        self.turn.server_call(call_id, CODE, code, decoded=True)  # the part's decoded value

    def _result(self, result: Any, given: Any) -> None:
        if type(result) is not dict:
            raise invalid("a codeExecutionResult part is not an object")
        if type(given) is str and given:
            call_id = given
        elif self._pending:
            call_id = self._pending[-1]
        elif self._answered:
            call_id = self._again(next(reversed(self._answered)))
        else:
            call_id = "code (none announced)"
        if call_id in self._pending:
            self._pending.remove(call_id)
            self._answered.setdefault(call_id, 1)
        outcome = result.get("outcome")
        error = outcome if type(outcome) is str and outcome != "OUTCOME_OK" else None
        self.turn.server_result(call_id, result, error=error, decoded=True)

    def _again(self, first: str) -> str:
        """A further result of the run ``first``: announced as a run of the same code."""
        count = self._answered[first] + 1
        self._answered[first] = count
        call_id = f"{first}.{count}"
        self.turn.server_call(call_id, CODE, self._ran[first], decoded=True)
        return call_id

    def grounding(self, metadata: Any) -> None:
        """A candidate's ``groundingMetadata``: one citation per chunk a support names (its
        span converted from UTF-8 byte offsets to characters of the turn's text), then one
        per chunk no support names."""
        if metadata is None:
            return
        if type(metadata) is not dict:
            raise invalid("groundingMetadata is not an object")
        chunks = metadata.get("groundingChunks") or []
        supports = metadata.get("groundingSupports") or []
        if type(chunks) is not list or type(supports) is not list:
            raise invalid("groundingMetadata's chunks or supports are not lists")
        sources = [_source(chunk) for chunk in chunks]
        encoded: bytes | None = None
        named: set[int] = set()
        for support in supports:
            if type(support) is not dict:
                raise invalid("a grounding support is not an object")
            segment = support.get("segment") or {}
            indexes = support.get("groundingChunkIndices") or []
            if type(segment) is not dict or type(indexes) is not list:
                raise invalid("a grounding support's segment or chunk indices are malformed")
            if encoded is None:
                encoded = self.turn.text_so_far().encode("utf-8", "surrogatepass")
            start = _character(encoded, segment.get("startIndex", 0))
            end = _character(encoded, segment.get("endIndex", 0))
            for index in indexes:
                if type(index) is not int or not 0 <= index < len(sources):
                    raise invalid(f"a grounding support names chunk {index!r}, which is not given")
                named.add(index)
                self._cite(sources[index], start, end)
        for index, source in enumerate(sources):
            if index not in named:
                self._cite(source, None, None)

    def _cite(
        self, source: dict[str, JsonValue] | None, start: int | None, end: int | None
    ) -> None:
        if source is None:
            return
        key = (tuple(sorted((k, str(v)) for k, v in source.items())), start, end)
        if key in self._cited:
            return
        self._cited.add(key)
        self.turn.citation(source, start=start, end=end)


def _source(chunk: Any) -> dict[str, JsonValue] | None:
    """A grounding chunk as a citation's source: a ``web`` page by its URI, a
    ``retrievedContext`` document; another kind is none (and kept)."""
    if type(chunk) is not dict:
        raise invalid("a grounding chunk is not an object")
    web = chunk.get("web")
    if type(web) is dict:
        found: dict[str, JsonValue] = {
            "type": "url",
            "url": web.get("uri"),
            "title": web.get("title"),
        }
    elif type(chunk.get("retrievedContext")) is dict:
        context = chunk["retrievedContext"]
        found = {"type": "document", "url": context.get("uri"), "title": context.get("title")}
    else:
        return None
    for key in ("url", "title"):
        if found[key] is not None and type(found[key]) is not str:
            raise invalid(f"a grounding chunk's {key} is not a string")
    return {key: value for key, value in found.items() if value is not None}


def _character(encoded: bytes, offset: Any) -> int:
    """A UTF-8 byte offset into the text as a character offset: one past the text, or inside
    a character, is ``INVALID_RESPONSE``."""
    if type(offset) is not int or offset < 0:
        raise invalid("a grounding segment's index is not a byte offset")
    if offset > len(encoded):
        raise invalid(f"a citation points at byte {offset}, past the answer's {len(encoded)} bytes")
    try:
        return len(encoded[:offset].decode("utf-8", "surrogatepass"))
    except UnicodeDecodeError:
        raise invalid(f"a grounding segment's byte offset {offset} splits a character") from None
