"""JSON read as it streams: fed text in pieces of any size, split anywhere, never re-reading what
came before (ADR 0034).

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

import math
import re
from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]  # typeshed omits it
from typing import Any, Final

from runport.contracts import MAX_INT_DIGITS, MAX_JSON_DEPTH, ErrorCode

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

    __slots__ = ("index", "is_object", "key", "members", "node", "parent", "parent_key", "pointer")

    def __init__(
        self,
        is_object: bool,
        parent: _Frame | None,
        pointer: str,
        node: object,
    ) -> None:
        self.is_object = is_object
        self.members: list[Any] = []
        self.key = ""  # an object's current key
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


Checker = Callable[[Any, str, Any], None]
"""Told of each subtree as it closes: its schema node, its pointer and its value."""
Descend = Callable[[Any, str | int], Any]
"""The schema node of a member, from its container's node and its key or index."""


class Parser:
    """The incremental JSON reader under :class:`PartialJSON` and ``PartialOutput``.

    ``feed`` takes the next piece of text and says whether the value changed or a subtree
    closed; ``closed`` then holds the JSON pointers of the subtrees that closed, in order.
    ``descend`` and ``check`` (both or neither) let an owner follow a schema alongside:
    each open container and member gets ``descend(container's node, key or index)`` as its
    node, and every closed subtree is handed to ``check``.
    """

    __slots__ = (
        "_base",
        "_check",
        "_descend",
        "_escape",
        "_in_key",
        "_key",
        "_result",
        "_scalar",
        "_state",
        "_text",
        "_top",
        "_word_at",
        "changed",
        "closed",
        "depth",
        "error",
        "offset",
        "root_node",
    )

    def __init__(
        self,
        root_node: object = None,
        descend: Descend | None = None,
        check: Checker | None = None,
    ) -> None:
        self._state = _VALUE
        self._top: _Frame | None = None
        self._text: _Text | None = None  # the open value string
        self._in_key = False
        self._key: list[str] = []
        self._scalar: list[str] = []
        self._escape = ""  # a cut escape, held back until it is whole
        self._word_at = 0  # where the true, false or null being read began
        self._result: Any = None
        self._descend = descend
        self._check = check
        self.root_node = root_node
        self.depth = 0
        self.offset = 0  # characters fed so far
        self._base = 0  # the offset of the piece being read (its held escape included)
        self.changed = False
        self.closed: list[str] = []
        self.error: PartialJSONError | None = None

    # ---- reading ------------------------------------------------------------------------

    def feed(self, text: str) -> bool:
        """Read the next piece; true when the value changed or a subtree closed (then
        ``closed`` lists the closed subtrees' pointers)."""
        self.changed = False
        self.closed = []
        if self._state == _FAILED:
            return False
        held = self._escape
        self._base = self.offset - len(held)
        self.offset += len(text)
        if held:
            text = held + text
            self._escape = ""
        try:
            self._read(text, 0)
        except _Stop:
            return False
        return self.changed or bool(self.closed)

    def close(self) -> bool:
        """The text ended: a number or word at the top level is complete. True when that
        changed the value; if the text stopped short of a whole JSON value, ``error`` says so."""
        self.changed = False
        self.closed = []
        state = self._state
        self._base = self.offset
        try:
            if state in (_NUMBER, _LITERAL) and self._top is None:
                word = "".join(self._scalar)
                if state == _LITERAL and word not in _WORDS:
                    self._fail(f"the text ended inside {word!r}", 0)
                self._end_scalar(state, 0)
            elif state < _DONE:
                self._fail("the text ended before its JSON value did", 0)
        except _Stop:
            return False
        return self.changed or bool(self.closed)

    @property
    def done(self) -> bool:
        return self._state == _DONE

    def view(self) -> View:
        """The value now, as a view :func:`build` turns into JSON data at any later time."""
        if self._state == _DONE:
            return (True, self._result)
        top = self._top
        text = None if self._in_key else self._text
        return (
            False,
            top,
            len(top.members) if top is not None else 0,
            top.key if top is not None else "",
            text,
            len(text.text) if text is not None else 0,
        )

    def _read(self, text: str, position: int) -> None:
        end = len(text)
        state = self._state
        while position < end:
            if state == _STRING:
                stop = _RUN.match(text, position).end()  # type: ignore[union-attr]
                if stop > position:
                    run = text[position:stop]
                    self._add(scanstring(run + '"', 0)[0] if "\\" in run else run)
                    position = stop
                    if position == end:
                        break
                char = text[position]
                if char == '"':
                    position += 1
                    state = self._end_string(position)
                elif char == "\\":
                    position = self._unescape(text, position)
                    if position < 0:
                        return
                else:
                    self._fail(
                        "a control character inside a string"
                        if char < " "
                        else "a lone surrogate inside a string (not Unicode text)",
                        position,
                    )
            elif state == _AFTER:
                char = text[position]
                top = self._top
                assert top is not None
                if char == ",":
                    state = self._state = _KEY if top.is_object else _VALUE
                    position += 1
                elif char == ("}" if top.is_object else "]"):
                    position += 1
                    state = self._end_container(position)
                elif char in _WHITESPACE:
                    position = _SPACES.match(text, position).end()  # type: ignore[union-attr]
                else:
                    self._fail(
                        f"{char!r} where ',' or {'}' if top.is_object else ']'!r} belongs",
                        position,
                    )
            elif state <= _VALUE_OR_END:
                char = text[position]
                if char == '"':
                    self._text = _Text()
                    self._in_key = False
                    state = self._state = _STRING
                    self.changed = True
                    position += 1
                elif char == "{" or char == "[":
                    state = self._open(char == "{", position)
                    position += 1
                elif char in _NUMBER_START or char in _WORD_START:
                    number = char in _NUMBER_START
                    chars = _NUMBER_CHARS if number else _WORD_CHARS
                    stop = chars.match(text, position).end()  # type: ignore[union-attr]
                    state = self._state = _NUMBER if number else _LITERAL
                    self._scalar = [text[position:stop]]
                    if state == _LITERAL:
                        self._word_at = self._base + position
                        self._check_word()
                    position = stop
                    if position < end:
                        state = self._end_scalar(state, position)
                elif char == "]" and state == _VALUE_OR_END:
                    position += 1
                    state = self._end_container(position)
                elif char in _WHITESPACE:
                    position = _SPACES.match(text, position).end()  # type: ignore[union-attr]
                else:
                    self._fail(f"{char!r} where a JSON value belongs", position)
            elif state in (_NUMBER, _LITERAL):
                chars = _NUMBER_CHARS if state == _NUMBER else _WORD_CHARS
                stop = chars.match(text, position).end()  # type: ignore[union-attr]
                if stop > position:
                    self._scalar.append(text[position:stop])
                    if state == _LITERAL:
                        self._check_word()
                    position = stop
                if position < end:
                    state = self._end_scalar(state, position)
            elif state == _COLON:
                char = text[position]
                if char == ":":
                    state = self._state = _VALUE
                    position += 1
                elif char in _WHITESPACE:
                    position = _SPACES.match(text, position).end()  # type: ignore[union-attr]
                else:
                    self._fail(f"{char!r} where ':' belongs", position)
            elif state in (_KEY, _KEY_OR_END):
                char = text[position]
                if char == '"':
                    self._in_key = True
                    self._key = []
                    state = self._state = _STRING
                    position += 1
                elif char == "}" and state == _KEY_OR_END:
                    position += 1
                    state = self._end_container(position)
                elif char in _WHITESPACE:
                    position = _SPACES.match(text, position).end()  # type: ignore[union-attr]
                else:
                    self._fail(f"{char!r} where a key belongs", position)
            else:  # _DONE
                stop = _SPACES.match(text, position).end()  # type: ignore[union-attr]
                if stop < end:
                    self._fail("more text after the JSON value", stop)
                position = stop

    def _add(self, piece: str) -> None:
        if self._in_key:
            self._key.append(piece)
            return
        holder = self._text
        assert holder is not None
        grown = holder.text
        holder.text = ""  # the local is then the string's one reference: it grows in place
        grown += piece
        holder.text = grown
        self.changed = True

    def _unescape(self, text: str, position: int) -> int:
        """Decode the escape at ``position``; the position after it, or -1 when it is cut (it
        is held back for the next piece)."""
        end = len(text)
        if position + 1 >= end:
            return self._hold(text, position)
        kind = text[position + 1]
        if kind != "u":
            decoded = _ESCAPED.get(kind)
            if decoded is None:
                self._fail(f"the escape '\\{kind}'", position)
            self._add(decoded)  # type: ignore[arg-type]
            return position + 2
        if position + 6 > end:
            if not _HEX4.match(text[position + 2 : end] + "0000"):
                self._fail(f"the escape {text[position:end]!r}", position)
            return self._hold(text, position)
        digits = text[position + 2 : position + 6]
        if not _HEX4.fullmatch(digits):
            self._fail(f"the escape '\\u{digits}'", position)
        unit = int(digits, 16)
        if 0xD800 <= unit < 0xDC00:
            if position + 12 > end:
                if not _LOW_START.fullmatch(text, position + 6):
                    self._fail("a high surrogate not followed by a low one", position)
                return self._hold(text, position)
            low_digits = text[position + 8 : position + 12]
            if (
                text[position + 6 : position + 8] != "\\u"
                or not _HEX4.fullmatch(low_digits)
                or not 0xDC00 <= int(low_digits, 16) < 0xE000
            ):
                self._fail("a high surrogate not followed by a low one", position)
            low = int(low_digits, 16)
            self._add(chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)))
            return position + 12
        if 0xDC00 <= unit < 0xE000:
            self._fail("a low surrogate with no high one before it", position)
        self._add(chr(unit))
        return position + 6

    def _hold(self, text: str, position: int) -> int:
        self._escape = text[position:]
        return -1

    def _check_word(self) -> None:
        word = "".join(self._scalar)
        if not any(each.startswith(word) for each in _WORDS):
            # stopped at the first character no word continues with, however the text was cut
            fits = max(_common(word, each) for each in _WORDS)
            self._base = self._word_at
            self._fail(f"{word[: fits + 1]!r} where a JSON value belongs", fits)

    # ---- closing ------------------------------------------------------------------------

    def _end_string(self, position: int) -> int:
        if self._in_key:
            self._in_key = False
            top = self._top
            assert top is not None
            top.key = "".join(self._key)
            self._key = []
            self._state = _COLON
            return _COLON
        holder = self._text
        assert holder is not None
        self._text = None
        return self._end_value(holder.text, position)

    def _end_scalar(self, state: int, position: int) -> int:
        word = "".join(self._scalar)
        self._scalar = []
        if state == _LITERAL:
            if word not in _WORDS:
                self._fail(f"{word!r} where a JSON value belongs", position)
            value = _WORDS[word]
        else:
            value = self._number(word, position)
        self.changed = True
        return self._end_value(value, position)

    def _number(self, word: str, position: int) -> int | float:
        found = _NUMBER_TEXT.fullmatch(word)
        if found is None:
            self._fail(f"{word[:40]!r} is not a JSON number", position)
        if found.group(1) is None and found.group(2) is None:  # type: ignore[union-attr]
            if len(word) - word.startswith("-") > MAX_INT_DIGITS:
                self._limit(f"holding an integer with more than {MAX_INT_DIGITS} digits", position)
            return int(word)
        number = float(word)
        if not math.isfinite(number):
            self._limit(f"holding the number {word[:40]!r}, too large for a float", position)
        return number

    def _end_value(self, value: Any, position: int) -> int:
        top = self._top
        if top is None:
            pointer = ""
            node = self.root_node
            self._result = value
            state = _DONE
        else:
            if top.is_object:
                key = top.key
                pointer = top.pointer + "/" + _escape_key(key)
                node = None if top.node is None else self._descend(top.node, key)  # type: ignore[misc]
                top.members.append((key, value))
            else:
                index = len(top.members)
                pointer = f"{top.pointer}/{index}"
                node = None if top.node is None else self._descend(top.node, index)  # type: ignore[misc]
                top.members.append(value)
            state = _AFTER
        self._state = state
        self.closed.append(pointer)
        if node is not None:
            self._check(node, pointer, value)  # type: ignore[misc]
        return state

    def _open(self, is_object: bool, position: int) -> int:
        if self.depth >= MAX_JSON_DEPTH:
            self._limit(f"nested more than {MAX_JSON_DEPTH} levels deep", position)
        top = self._top
        if top is None:
            pointer = ""
            node = self.root_node
        elif top.is_object:
            pointer = top.pointer + "/" + _escape_key(top.key)
            node = None if top.node is None else self._descend(top.node, top.key)  # type: ignore[misc]
        else:
            index = len(top.members)
            pointer = f"{top.pointer}/{index}"
            node = None if top.node is None else self._descend(top.node, index)  # type: ignore[misc]
        self._top = _Frame(is_object, top, pointer, node)
        self.depth += 1
        self.changed = True
        state = self._state = _KEY_OR_END if is_object else _VALUE_OR_END
        return state

    def _end_container(self, position: int) -> int:
        frame = self._top
        assert frame is not None
        self._top = frame.parent
        self.depth -= 1
        value = dict(frame.members) if frame.is_object else frame.members
        top = self._top
        if top is None:
            self._result = value
            self._state = _DONE
        else:
            self._state = _AFTER
            if top.is_object:
                top.members.append((top.key, value))
            else:
                top.members.append(value)
        self.closed.append(frame.pointer)
        if frame.node is not None:
            self._check(frame.node, frame.pointer, value)  # type: ignore[misc]
        return self._state

    # ---- failing ------------------------------------------------------------------------

    def _fail(self, why: str, position: int) -> None:
        self._stop(ErrorCode.OUTPUT_SCHEMA.value, f"the answer stopped being JSON: {why}", position)

    def _limit(self, why: str, position: int) -> None:
        self._stop(ErrorCode.RUNTIME_INVALID_RESPONSE.value, f"the JSON is {why}", position)

    def _stop(self, code: str, message: str, position: int) -> None:
        self._state = _FAILED
        self.changed = False
        self.closed = []
        self.error = PartialJSONError(code, message, self._base + position)
        raise _Stop


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
