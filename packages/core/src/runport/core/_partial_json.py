"""JSON read as it streams: fed text in pieces of any size, split anywhere, never re-reading what
came before (ADR 0034). The parts of the reader; the reader itself, whose hot steps are written
out in one method, is ``PartialOutput`` (``_partial_output``).

The parser keeps a stack of the containers still open. Each container's members are held in an
append-only list — values for an array, ``(key, value)`` pairs for an object — and the string
being read grows in place. Nothing once appended is changed again, so a *view* of the value at
one moment is a handful of numbers: the innermost open container, how many members it had, and
how long the open string was. Views cost O(1) to take, and any number of them can be built into
JSON data later, each exactly as it was (:func:`build`), costing one copy of the member
references of each open container and of the cut string; every closed subtree is shared.

What a view shows is what the text so far determines, and it agrees with ``json.loads`` of
the whole text (runport's bounded reading of it, ``parse_json_text``): open strings appear cut,
with a cut escape or surrogate pair held back; numbers and ``true``/``false``/``null`` appear
once the character after them shows they ended; containers appear as soon as they open,
holding the members that arrived. A key written twice in one object ends with the later value,
in the first one's place, as the receipt's output does. Past the JSON bounds (``MAX_JSON_DEPTH``
levels, ``MAX_INT_DIGITS`` digits, a number too large for a float) and at the first character
that cannot continue a JSON text the parser stops for good, saying why.
"""

from __future__ import annotations

import re
from typing import Any, Final

# States: what the next character may be.
_VALUE: Final = 0  # a value (at the start, after ':', after ',' in an array)
_VALUE_OR_END: Final = 1  # a value or ']' (after '[')
_KEY_OR_END: Final = 2  # a key or '}' (after '{')
_KEY: Final = 3  # a key (after ',' in an object)
_COLON: Final = 4
_AFTER: Final = 5  # ',' or the closing bracket (after a member)
_STRING: Final = 6
_NUMBER: Final = 7
_LITERAL: Final = 8
_DONE: Final = 9  # the root value ended: only whitespace may follow
_FAILED: Final = 10

_WHITESPACE: Final = frozenset(" \t\n\r")
_SPACES: Final = re.compile(r"[ \t\n\r]*")
# A run of a string that decodes on its own: characters that stand for themselves (not a
# quote, a backslash, a control character or a surrogate) and whole escapes, a surrogate pair's
# two escapes together. A cut escape, a lone surrogate or a bad escape ends it.
_RUN: Final = re.compile(
    r'(?:[^"\\\x00-\x1f\ud800-\udfff]+'
    r'|\\["\\/bfnrt]'
    r"|\\u(?![dD][89a-fA-F])[0-9a-fA-F]{4}"
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})*"
)
_NUMBER_CHARS: Final = re.compile(r"[0-9eE.+\-]*")
NUMBER_SET: Final = "0123456789eE.+-"
# What a run of string text may not hold unescaped: a control character or a surrogate.
BAD_CHAR: Final = re.compile(r"[\x00-\x1f\ud800-\udfff]")
_NUMBER_TEXT: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_WORD_CHARS: Final = re.compile(r"[a-z]*")
_WORDS: Final[dict[str, Any]] = {"true": True, "false": False, "null": None}
_NUMBER_START: Final = frozenset("-0123456789")
_WORD_START: Final = frozenset("tfn")
_ESCAPED: Final = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_HEX4: Final = re.compile(r"[0-9a-fA-F]{4}")
# A low-surrogate escape cut short: what may follow a high surrogate's escape and still pair.
_LOW_START: Final = re.compile(r"(?:\\(?:u(?:[dD](?:[c-fC-F][0-9a-fA-F]{0,2})?)?)?)?")


class PartialJSONError:
    """Why reading stopped: ``code`` is ``TQX_RUNTIME_INVALID_RESPONSE`` past the JSON bounds
    (the call itself fails with it), ``TQX_OUTPUT_SCHEMA`` for text that is not JSON (the
    receipt's output is then the text, which no structured schema accepts)."""

    __slots__ = ("code", "message", "offset")

    def __init__(self, code: str, message: str, offset: int) -> None:
        self.code = code
        self.message = message
        self.offset = offset
        """How many characters of the text came before the one that stopped it."""

    def __repr__(self) -> str:
        return f"PartialJSONError({self.code!r}, {self.message!r}, offset={self.offset})"


class _Frame:
    """An open array or object."""

    __slots__ = (
        "index",
        "is_object",
        "key",
        "key_pointer",
        "members",
        "node",
        "parent",
        "parent_key",
        "pointer",
    )

    def __init__(self, is_object: bool, parent: _Frame | None, pointer: str, node: Any) -> None:
        self.is_object = is_object
        self.members: list[Any] = []
        self.key = ""  # an object's current key
        self.key_pointer = ""  # and the pointer of its member
        self.parent = parent
        # Where this container sits in its parent, which cannot change while it is open.
        self.index = len(parent.members) if parent is not None else 0
        self.parent_key = parent.key if parent is not None else ""
        self.pointer = pointer
        self.node = node


class _Text:
    """An open string's decoded text so far, grown in place."""

    __slots__ = ("text",)

    def __init__(self) -> None:
        self.text = ""


View = tuple[Any, ...]
"""The value at one moment: ``(True, value)`` once the root is complete, else ``(False,
innermost frame, its member count, its key, open string or None, that string's length)``."""

_NOTHING: Final[Any] = object()


def build(view: View) -> Any:
    """The JSON data ``view`` stands for: a new list or dict for each container open at that
    moment, the closed members in them shared."""
    if view[0]:
        return view[1]
    _, frame, count, key, text, length = view
    value = _NOTHING if text is None else text.text[:length]
    while frame is not None:
        members = frame.members
        if frame.is_object:
            container: Any = dict(members[:count]) if count else {}
            if value is not _NOTHING:
                container[key] = value
        else:
            container = members[:count]
            if value is not _NOTHING:
                container.append(value)
        value = container
        count = frame.index
        key = frame.parent_key
        frame = frame.parent
    return None if value is _NOTHING else value


class _Stop(Exception):
    """Unwinds a piece's reading once the parser has failed."""


def _common(word: str, other: str) -> int:
    """How many characters ``word`` and ``other`` begin with alike."""
    count = 0
    for mine, theirs in zip(word, other, strict=False):
        if mine != theirs:
            break
        count += 1
    return count


def _escape_key(key: str) -> str:
    if "~" in key or "/" in key:
        return key.replace("~", "~0").replace("/", "~1")
    return key
