"""A structured answer given as the forced tool's input, as one text in both modes (ADR 0025).

Streamed, the input arrives as ``input_json_delta`` fragments written with the model's
spacing; unstreamed, as an object inside the message body, spaced however the server writes
it. Whitespace outside strings is the one thing that differs, so both modes drop exactly that
and keep every other character as the server sent it — numbers and string escapes are never
re-formatted, which no stream could do without holding fragments back.
"""

from __future__ import annotations

import json
import re
from typing import Final

_SPACE: Final = str.maketrans("", "", " \t\n\r")
_PLAIN: Final = frozenset(' "\\\t\n\r')
_OUTSIDE: Final = re.compile(r'[ \t\n\r]+|"(?:[^"\\]|\\.)*(?:(")|(\\)?\Z)', re.S)
_INSIDE: Final = re.compile(r'(?:[^"\\]|\\.)*(?:(")|(\\)?\Z)', re.S)
_SKIP: Final = re.compile(r"[ \t\n\r]*")
_DECODER: Final = json.JSONDecoder()


class SpaceStripper:
    """Drops JSON whitespace outside strings from a text that arrives in fragments.

    It keeps two flags across fragments (inside a string; after a backslash there) and never
    holds a character back, so each fragment's event goes out as soon as it arrives.
    """

    __slots__ = ("_escaped", "_in_string")

    def __init__(self) -> None:
        self._in_string = False
        self._escaped = False

    def strip(self, fragment: str) -> str:
        if not self._in_string and _PLAIN.isdisjoint(fragment):
            return fragment
        start = 0
        if self._in_string:
            if self._escaped:
                if not fragment:
                    return fragment
                self._escaped = False
                start = 1
            found = _INSIDE.match(fragment, start)
            assert found is not None  # the pattern matches the empty string
            if found.group(1) is None:
                self._escaped = found.group(2) is not None
                return fragment
            self._in_string = False
            start = found.end()
        kept = [fragment[:start]]
        last = start
        for found in _OUTSIDE.finditer(fragment, start):
            if fragment[found.start()] != '"':
                kept.append(fragment[last : found.start()])
                last = found.end()
            elif found.group(1) is None:
                self._in_string = True
                self._escaped = found.group(2) is not None
        kept.append(fragment[last:])
        return "".join(kept)


def compact(text: str) -> str:
    """A whole JSON text without whitespace outside its strings."""
    if '"' not in text:
        return text.translate(_SPACE)
    return SpaceStripper().strip(text)


def raw_member(body: str, block: int, key: str) -> str | None:
    """The text of ``content[block][key]`` in a message body, exactly as written, or
    ``None`` when the body does not hold it there (linear: every other value is skipped by
    the C scanner). The body must already have decoded as JSON."""
    try:
        content = _member(body, _SKIP.match(body, 0).end(), "content")  # type: ignore[union-attr]
        if content is None or body[content] != "[":
            return None
        position = content + 1
        for _ in range(block):
            position = _DECODER.raw_decode(body, _at(body, position))[1]
            position = _at(body, position)
            if body[position] != ",":
                return None
            position += 1
        value = _member(body, _at(body, position), key)
        if value is None:
            return None
        return body[value : _DECODER.raw_decode(body, value)[1]]
    except (ValueError, IndexError):
        return None


def _at(body: str, position: int) -> int:
    return _SKIP.match(body, position).end()  # type: ignore[union-attr]


def _member(body: str, position: int, key: str) -> int | None:
    """Where the value of ``key`` starts in the object at ``position`` (the last one, as a
    decoder keeps the last of repeated keys)."""
    if body[position] != "{":
        return None
    found: int | None = None
    position = _at(body, position + 1)
    if body[position] == "}":
        return None
    while True:
        name, position = _DECODER.raw_decode(body, position)
        position = _at(body, position)
        if body[position] != ":":
            return None
        start = _at(body, position + 1)
        if name == key:
            found = start
        position = _at(body, _DECODER.raw_decode(body, start)[1])
        if body[position] == "}":
            return found
        if body[position] != ",":
            return None
        position = _at(body, position + 1)
        if body[position] != '"':
            return None
