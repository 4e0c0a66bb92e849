"""A function call's arguments streamed as ``partialArgs`` (Gemini 3 with
``streamFunctionCallArguments``), written out as JSON text in fragments as they arrive.

Each ``PartialArg`` names one value by a JSON path (``$.location``, ``$.stops[0].city``) and
carries it as ``stringValue`` (a string's next piece: pieces of one path join), ``numberValue``,
``boolValue`` or ``nullValue``. The writer opens and closes objects and arrays as the paths
walk the document, so the joined fragments are the arguments' JSON text and each fragment goes
out as soon as its piece arrives (a string stays open until another path or the call's end
closes it). Paths must arrive in document order — a member is not revisited once the writer
has moved past it, and array items come in index order — since a fragment sent cannot be
taken back; a path that breaks the order is an invalid response.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from runport.contracts import ErrorCode
from runport.ports import PortError

Segment = str | int
_STEP: Final = re.compile(
    r"\.([^.\[\]]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]"
)
_ESCAPE: Final = re.compile(r"\\(.)")


def invalid(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)


def parse_path(path: Any) -> tuple[Segment, ...]:
    """``$.a.b[0]`` as ``("a", "b", 0)``; a path that names no member is invalid."""
    if type(path) is not str or not path.startswith("$") or len(path) > 4096:
        raise invalid("a partialArg has no JSON path")
    segments: list[Segment] = []
    position = 1
    while position < len(path):
        found = _STEP.match(path, position)
        if found is None:
            raise invalid("a partialArg's JSON path is not one runport reads")
        name, index, single, double = found.groups()
        if index is not None:
            segments.append(int(index))
        elif name is not None:
            segments.append(name)
        else:
            segments.append(_ESCAPE.sub(r"\1", single if single is not None else double))
        position = found.end()
    if not segments:
        raise invalid("a partialArg's JSON path names no argument")
    return tuple(segments)


def _string(piece: str) -> str:
    return json.dumps(piece, ensure_ascii=False)[1:-1]


class StreamedArguments:
    """The JSON text of one call's arguments, written as its ``partialArgs`` arrive."""

    __slots__ = ("_arrays", "_counts", "_done", "_path", "_started", "_string")

    def __init__(self) -> None:
        self._started = False
        self._path: list[Segment] = []  # the open containers below the root object
        self._arrays: list[bool] = [False]  # per open container (the root first): an array?
        self._counts: list[int] = [0]  # members written into each open container
        self._string: tuple[Segment, ...] | None = None  # the path of a string left open
        self._done: set[tuple[Segment, ...]] = set()  # closed containers, written values

    def piece(self, partial: Any) -> str:
        """One ``PartialArg``'s fragment of the text ("" when it adds nothing)."""
        if type(partial) is not dict:
            raise invalid("a partialArg is not an object")
        path = parse_path(partial.get("jsonPath"))
        if "stringValue" in partial:
            value = partial["stringValue"]
            if type(value) is not str:
                raise invalid("a partialArg's stringValue is not a string")
            if path == self._string:
                return _string(value)
            return self._value(path, '"' + _string(value), open_string=True)
        if "numberValue" in partial:
            value = partial["numberValue"]
            if type(value) not in (int, float):
                raise invalid("a partialArg's numberValue is not a number")
            return self._value(path, json.dumps(value))
        if "boolValue" in partial:
            value = partial["boolValue"]
            if type(value) is not bool:
                raise invalid("a partialArg's boolValue is not a boolean")
            return self._value(path, "true" if value else "false")
        if "nullValue" in partial:
            return self._value(path, "null")
        return ""  # a piece without a value (a marker) adds nothing

    def whole(self, name: str, value: Any) -> str:
        """A top-level argument given whole (``args`` beside streamed pieces)."""
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return self._value((name,), text)

    def end(self) -> str:
        """What closes the text: the open string, containers and the root ("" when nothing
        was written, so the call's arguments are ``{}``)."""
        if not self._started:
            return ""
        out = ['"'] if self._string is not None else []
        self._string = None
        out.extend("]" if array else "}" for array in reversed(self._arrays))
        self._path, self._arrays, self._counts = [], [], []
        return "".join(out)

    def _value(self, path: tuple[Segment, ...], text: str, *, open_string: bool = False) -> str:
        if not self._arrays:
            raise invalid("a partialArg arrived after its call ended")
        out: list[str] = []
        if not self._started:
            self._started = True
            out.append("{")
        if self._string is not None:
            out.append('"')
            self._done.add(self._string)
            self._string = None
        parent = path[:-1]
        shared = 0
        while (
            shared < len(self._path)
            and shared < len(parent)
            and self._path[shared] == parent[shared]
        ):
            shared += 1
        while len(self._path) > shared:  # leave the containers this path is not in
            self._done.add(tuple(self._path))
            self._path.pop()
            self._counts.pop()
            out.append("]" if self._arrays.pop() else "}")
        for depth in range(shared, len(path)):  # enter the ones it is in, then the value
            segment = path[depth]
            here = path[: depth + 1]
            if here in self._done:
                raise invalid(f"partialArgs revisit {_shown(here)} after it was written")
            if self._arrays[-1] != (type(segment) is int):
                raise invalid(f"partialArgs use {_shown(here)} as the wrong kind of container")
            count = self._counts[-1]
            if count:
                out.append(",")
            if type(segment) is int:
                if segment != count:
                    raise invalid(f"partialArgs skip to {_shown(here)} out of order")
            else:
                out.append(json.dumps(segment, ensure_ascii=False) + ":")
            self._counts[-1] = count + 1
            if depth < len(path) - 1:
                array = type(path[depth + 1]) is int
                out.append("[" if array else "{")
                self._path.append(segment)
                self._arrays.append(array)
                self._counts.append(0)
        out.append(text)
        if open_string:
            self._string = path
        else:
            self._done.add(path)
        return "".join(out)


def _shown(path: tuple[Segment, ...]) -> str:
    return "$" + "".join(f"[{s}]" if type(s) is int else f".{s}" for s in path)[:200]
