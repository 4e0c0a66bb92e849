"""A structured answer shown as it streams: ``OutputSnapshot``\\s from the answer's text deltas,
and the same reader for any JSON that arrives in pieces (ADR 0034, docs/partial-output.md).

The reader is ``PartialOutput`` itself (``_partial_json`` holds its parts): a state machine
whose common steps — a run of string text, a number, a key, a bracket, a member closing — are
written out in ``feed``, one Python call per delta, since at 1–6 characters a delta the calls
and attribute writes around the reading cost more than the reading. The rare ones (escapes,
failures, bounds, the end of the text) are methods.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from json.decoder import scanstring  # type: ignore[attr-defined]  # typeshed omits it
from typing import TYPE_CHECKING, Any, Final

from pydantic import JsonValue

from runport.contracts import MAX_INT_DIGITS, MAX_JSON_DEPTH, Diagnostic, ErrorCode, OutputSnapshot
from runport.core._partial_json import (
    _AFTER,
    _COLON,
    _DONE,
    _ESCAPED,
    _FAILED,
    _HEX4,
    _KEY,
    _KEY_OR_END,
    _LITERAL,
    _LOW_START,
    _NUMBER,
    _NUMBER_CHARS,
    _NUMBER_START,
    _NUMBER_TEXT,
    _RUN,
    _SPACES,
    _STRING,
    _VALUE,
    _VALUE_OR_END,
    _WHITESPACE,
    _WORD_CHARS,
    _WORD_START,
    _WORDS,
    BAD_CHAR,
    NUMBER_SET,
    PartialJSONError,
    View,
    _common,
    _escape_key,
    _Frame,
    _Stop,
    _Text,
    build,
)
from runport.core._schema_places import SchemaPlace, schema_places

_NAMES: Final = ("kind", "value", "completed", "problems")
_CLOSING: Final = frozenset("]}")
_NOTHING: Final[Any] = object()
_refs = getattr(sys, "getrefcount", None)  # CPython's; elsewhere every value is built afresh


# The references a container held by one list has, counted as the builder counts them.
_ALONE: Final = next(map(_refs, [[]])) if _refs is not None else 0
_MADE_AT: Final = 4  # where a snapshot's view starts in what it was made from


class _Snapshot(OutputSnapshot):
    """An ``OutputSnapshot`` made of what it was made from until a field is read (ADR 0058).

    A snapshot is made per delta, so making one is one object and one slot: ``_made`` holds
    the reader that made it, the reader's offset then, the lists for ``completed`` and
    ``problems`` (``None`` for none) and the view of the value — until any field but ``kind``
    (a constant) is read, serialized, compared, copied or pickled; then it holds the fields,
    the value built as it was when the snapshot was made. Pydantic reads a model's fields from
    its ``__dict__``, which is here the fields, built when first asked for; the three
    attributes pydantic documents beside it hold what ``model_construct`` would put there. It
    compares equal to the plain ``OutputSnapshot`` with the same fields, prints as one, and
    copies and pickles into one.
    """

    __slots__ = ("_made",)
    if TYPE_CHECKING:  # not an annotation pydantic sees: it would make a private attribute
        _made: Any

    @property
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        made = _get_made(self)
        return made if type(made) is dict else _fields(self, made)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OutputSnapshot):
            return bool(self.__dict__ == other.__dict__)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr_name__(self) -> str:
        return "OutputSnapshot"

    def _plain(self) -> OutputSnapshot:
        return OutputSnapshot.model_construct(**self.__dict__)

    def __copy__(self) -> OutputSnapshot:  # type: ignore[override]  # a plain one
        return self._plain()

    def __deepcopy__(  # type: ignore[override]  # a plain one
        self, memo: dict[int, Any] | None = None
    ) -> OutputSnapshot:
        return self._plain().__deepcopy__(memo)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_plain, (dict(self.__dict__),))


_get_made = vars(_Snapshot)["_made"].__get__  # the slot itself, under the overridden ``__dict__``
_set_made = vars(_Snapshot)["_made"].__set__


def _fields(snapshot: _Snapshot, made: tuple[Any, ...]) -> dict[str, Any]:
    """The fields of ``snapshot``, made from ``made``: built now, and kept in its place."""
    fields = {
        "kind": "OutputSnapshot",
        "value": made[0]._built(made),
        "completed": [] if made[2] is None else made[2],
        "problems": [] if made[3] is None else made[3],
    }
    _set_made(snapshot, fields)
    return fields


def _field(name: str) -> property:
    # A data descriptor on the class outranks the instance's own dict, which stays empty.
    def read(self: _Snapshot) -> Any:
        made = _get_made(self)
        return (made if type(made) is dict else _fields(self, made))[name]

    return property(read)


# Set after the class is made, where pydantic's class machinery does not take them for fields.
_Snapshot.kind = "OutputSnapshot"  # a constant: reading it builds nothing
for _name in _NAMES[1:]:
    setattr(_Snapshot, _name, _field(_name))
_Snapshot.__pydantic_fields_set__ = property(lambda self: set(_NAMES))  # type: ignore[assignment]
_Snapshot.__pydantic_extra__ = None
_Snapshot.__pydantic_private__ = None
_new = object.__new__


def _plain(fields: dict[str, Any]) -> OutputSnapshot:
    return OutputSnapshot.model_construct(**fields)


class PartialOutput:
    """The ``OutputSnapshot``\\s of a structured answer, made from its text deltas as they
    stream.

    ``feed`` each ``Delta``'s text: it returns a snapshot when the piece changed the parsed value
    or closed a subtree, else ``None``; call ``close`` when the answer's text has ended (an
    answer that is one number at the top level is only complete then). Each subtree is checked
    against its part of ``output_schema`` as it closes, and a failure is reported once, in that
    snapshot's ``problems`` (``TQX_OUTPUT_SCHEMA``, the pointer into the answer); the receipt's
    verdict stays the authority. A snapshot costs O(1) to make: its value is built when first
    read, as it was at that moment, sharing every closed subtree.
    """

    __slots__ = (
        "_alone",
        "_base",
        "_depth",
        "_error",
        "_escape",
        "_in_key",
        "_kept",
        "_kept_at",
        "_kept_counts",
        "_kept_frames",
        "_kept_size",
        "_kept_top",
        "_key",
        "_offset",
        "_problems",
        "_reported",
        "_result",
        "_root",
        "_scalar",
        "_state",
        "_text",
        "_top",
        "_word_at",
    )

    def __init__(self, output_schema: Mapping[str, JsonValue]) -> None:
        places = schema_places(output_schema)
        self._start(places.root if places is not None else None)

    def _start(self, root: SchemaPlace | None) -> None:
        self._state = _VALUE
        self._top: _Frame | None = None
        self._text: _Text | None = None  # the open value string
        self._in_key = False
        self._key: list[str] = []
        self._scalar: list[str] = []
        self._escape = ""  # a cut escape, held back until it is whole
        self._word_at = 0  # where the true, false or null being read began
        self._result: Any = None
        self._root = root
        self._depth = 0
        self._offset = 0  # characters fed so far
        self._base = 0  # the offset of the piece being read (its held escape included)
        self._error: PartialJSONError | None = None
        self._problems: list[Diagnostic] | None = None
        self._reported: set[tuple[str, str]] = set()
        # The containers of the value last built, root first (_built): their frames, the
        # members each holds, the offset of the snapshot they were built for, the innermost
        # frame, how many members in all, and the references each has when no one else holds
        # it.
        self._kept: list[Any] = []
        self._kept_frames: list[_Frame] = []
        self._kept_counts: list[int] = []
        self._kept_at = -1
        self._kept_top: _Frame | None = None
        self._kept_size = 0
        self._alone: list[int] = []

    # ---- reading ------------------------------------------------------------------------

    def feed(self, text: str) -> OutputSnapshot | None:
        """The snapshot after ``text``, the next piece of the answer; ``None`` when it changed
        nothing (or the answer is no longer JSON: see ``error``)."""
        state = self._state
        if state == _STRING and not self._in_key and not self._escape:
            # the common piece: more of an open string, nothing in it to decode
            if '"' not in text and "\\" not in text and text.isprintable() and text:
                self._offset += len(text)
                holder = self._text
                grown = holder.text  # type: ignore[union-attr]
                holder.text = ""  # type: ignore[union-attr]  # the local is the one reference: it grows in place
                grown += text
                holder.text = grown  # type: ignore[union-attr]
                top = self._top
                snapshot = _new(_Snapshot)
                made: tuple[Any, ...]
                if top is None:
                    made = (self, self._offset, None, None, False, None, 0, "", holder, len(grown))
                else:
                    count = len(top.members)
                    made = (
                        self,
                        self._offset,
                        None,
                        None,
                        False,
                        top,
                        count,
                        top.key,
                        holder,
                        len(grown),
                    )
                _set_made(snapshot, made)
                return snapshot
        elif state == _NUMBER and not text.lstrip(NUMBER_SET):
            # more of a number, which has not ended
            self._offset += len(text)
            self._scalar.append(text)
            return None
        if state >= _DONE:
            if state == _DONE:
                self._base = self._offset
                self._offset += len(text)
                stop = _SPACES.match(text).end()  # type: ignore[union-attr]
                if stop < len(text):
                    with contextlib.suppress(_Stop):
                        self._stopped("more text after the JSON value", stop)
            return None
        held = self._escape
        if held:
            self._base = self._offset - len(held)
            self._offset += len(text)
            text = held + text
            self._escape = ""
        else:
            self._base = self._offset
            self._offset += len(text)
        end = len(text)
        slashes = "\\" in text
        position = 0
        changed = False
        closed: list[str] | None = None
        top = self._top
        try:
            while position < end:
                if state == _STRING:
                    quote = text.find('"', position)
                    stop = end if quote < 0 else quote
                    if slashes:
                        slash = text.find("\\", position, stop)
                        if slash >= 0:
                            stop = slash
                    if stop > position:
                        run = text if stop - position == end else text[position:stop]
                        if not run.isprintable() and BAD_CHAR.search(run) is not None:
                            self._bad_char(run, position)
                        changed = self._add(run) or changed
                        position = stop
                        if stop == end:
                            break
                    if position == quote:  # the string ends
                        position += 1
                        if self._in_key:
                            self._in_key = False
                            parts = self._key
                            key = parts[0] if len(parts) == 1 else "".join(parts)
                            self._key = []
                            top.key = key  # type: ignore[union-attr]
                            top.key_pointer = top.pointer + "/" + _escape_key(key)  # type: ignore[union-attr]
                            state = _COLON
                            continue
                        value: Any = self._text.text  # type: ignore[union-attr]
                        self._text = None
                    else:  # an escape
                        stop = _RUN.match(text, position).end()  # type: ignore[union-attr]
                        if stop > position:
                            decoded = scanstring(text[position:stop] + '"', 0)[0]
                            changed = self._add(decoded) or changed
                            position = stop
                        else:
                            self._state = state
                            position = self._unescape(text, position)
                            if position < 0:
                                break
                            changed = changed or not self._in_key
                        continue
                elif state == _AFTER:
                    char = text[position]
                    if char == ",":
                        state = _KEY if top.is_object else _VALUE  # type: ignore[union-attr]
                        position += 1
                        continue
                    if char in _CLOSING and (char == "}") is top.is_object:  # type: ignore[union-attr]
                        position += 1
                        state, top, closed = self._end_container(closed)
                        continue
                    if char in _WHITESPACE:
                        position = _SPACES.match(text, position).end()  # type: ignore[union-attr]
                        continue
                    self._stopped(
                        f"{char!r} where ',' or {'}' if top.is_object else ']'!r} belongs",  # type: ignore[union-attr]
                        position,
                    )
                elif state == _NUMBER:  # a number goes on: only at the start of a piece
                    stop = end - len(text.lstrip(NUMBER_SET))
                    if stop:
                        self._scalar.append(text if stop == end else text[:stop])
                        position = stop
                        if stop == end:
                            break
                    value = self._end_number(position)
                    changed = True
                elif state == _COLON:
                    char = text[position]
                    if char == ":":
                        state = _VALUE
                        position += 1
                    elif char in _WHITESPACE:
                        position = _SPACES.match(text, position).end()  # type: ignore[union-attr]
                    else:
                        self._stopped(f"{char!r} where ':' belongs", position)
                    continue
                elif state <= _VALUE_OR_END:
                    char = text[position]
                    if char == '"':
                        self._text = _Text()
                        state = _STRING
                        changed = True
                        position += 1
                        continue
                    if char in _NUMBER_START:
                        stop = _NUMBER_CHARS.match(text, position).end()  # type: ignore[union-attr]
                        self._scalar = [text[position:stop]]
                        position = stop
                        state = _NUMBER
                        if stop == end:
                            break
                        value = self._end_number(position)
                        changed = True
                    elif char == "{" or char == "[":
                        self._state = state
                        state = self._open(char == "{", position)
                        top = self._top
                        changed = True
                        position += 1
                        continue
                    elif char in _WORD_START:
                        stop = _WORD_CHARS.match(text, position).end()  # type: ignore[union-attr]
                        self._scalar = [text[position:stop]]
                        self._word_at = self._base + position
                        self._check_word()
                        position = stop
                        state = _LITERAL
                        if stop == end:
                            break
                        value = self._end_word(position)
                        changed = True
                    elif char == "]" and state == _VALUE_OR_END:
                        position += 1
                        state, top, closed = self._end_container(closed)
                        continue
                    elif char in _WHITESPACE:
                        position = _SPACES.match(text, position).end()  # type: ignore[union-attr]
                        continue
                    else:
                        self._stopped(f"{char!r} where a JSON value belongs", position)
                elif state <= _KEY:  # _KEY_OR_END or _KEY
                    char = text[position]
                    if char == '"':
                        self._in_key = True
                        state = _STRING
                        position += 1
                    elif char == "}" and state == _KEY_OR_END:
                        position += 1
                        state, top, closed = self._end_container(closed)
                    elif char in _WHITESPACE:
                        position = _SPACES.match(text, position).end()  # type: ignore[union-attr]
                    else:
                        self._stopped(f"{char!r} where a key belongs", position)
                    continue
                elif state == _DONE:  # the value ended inside this piece
                    stop = _SPACES.match(text, position).end()  # type: ignore[union-attr]
                    if stop < end:
                        self._stopped("more text after the JSON value", stop)
                    break
                else:  # _LITERAL goes on: only at the start of a piece
                    stop = _WORD_CHARS.match(text).end()  # type: ignore[union-attr]
                    if stop:
                        self._scalar.append(text[:stop])
                        self._check_word()
                        position = stop
                        if stop == end:
                            break
                    value = self._end_word(position)
                    changed = True
                # a string, number or word ended: ``value`` is the member (or the whole value)
                if top is None:
                    self._result = value
                    state = _DONE
                    closed = self._member_closed(closed, "", self._root, value)
                    continue
                node = top.node
                members = top.members
                if top.is_object:
                    key = top.key
                    pointer = top.key_pointer
                    if node is not None:
                        node = node.child(key)
                    members.append((key, value))
                else:
                    index = len(members)
                    pointer = f"{top.pointer}/{index}"
                    if node is not None:
                        node = node.child(index)
                    members.append(value)
                state = _AFTER
                closed = self._member_closed(closed, pointer, node, value)
        except _Stop:
            return None
        self._state = state
        if closed is None and not changed:
            return None
        return self._snapshot(closed)

    def close(self) -> OutputSnapshot | None:
        """The answer's text has ended: the last snapshot, when ending it completed the value
        (an answer that is one number), else ``None``."""
        state = self._state
        self._base = self._offset
        try:
            if state in (_NUMBER, _LITERAL) and self._top is None:
                if state == _LITERAL:
                    word = "".join(self._scalar)
                    if word not in _WORDS:
                        self._stopped(f"the text ended inside {word!r}", 0)
                    value = self._end_word(0)
                else:
                    value = self._end_number(0)
                self._result = value
                self._state = _DONE
                closed = self._member_closed(None, "", self._root, value)
            elif state < _DONE:
                self._stopped("the text ended before its JSON value did", 0)
                return None  # not reached: stopping raises
            else:
                return None
        except _Stop:
            return None
        return self._snapshot(closed)

    @property
    def value(self) -> JsonValue:
        """The answer so far, as the latest snapshot shows it (``None`` before anything)."""
        return build(self._view())  # type: ignore[no-any-return]

    @property
    def done(self) -> bool:
        """The whole answer has arrived and was JSON."""
        return self._state == _DONE

    @property
    def error(self) -> PartialJSONError | None:
        """Why snapshots stopped (``None`` while they go on); the answer stopped being JSON
        (``code`` ``TQX_OUTPUT_SCHEMA``, the receipt's output will be the text) or passed a
        JSON bound (``TQX_RUNTIME_INVALID_RESPONSE``, the call fails with it)."""
        return self._error

    def _snapshot(self, closed: list[str] | None) -> OutputSnapshot:
        """The snapshot of this moment, with the subtrees that closed and the problems found
        since the last one."""
        problems = self._problems  # made by this piece's closing subtrees, if any
        if problems is not None:
            self._problems = None
        snapshot = _new(_Snapshot)
        _set_made(snapshot, (self, self._offset, closed, problems, *self._view()))
        return snapshot

    def _built(self, made: tuple[Any, ...]) -> Any:
        """The value of a snapshot made from ``made``, as it was then: a new list or dict for
        each container open at that moment, the closed members in them shared.

        A consumer that reads every snapshot's value as it comes would otherwise copy every
        open container's members per snapshot — quadratic in the answer. So the containers
        last built are kept, and a later snapshot's value reuses each one that no one else
        holds any more (the consumer let go of the snapshot and its value: only the builder
        and the container's parent refer to it, ``sys.getrefcount`` says), adding only the
        members that arrived since. A container still held is never changed: the value is
        built afresh from there down. Only the containers from the deepest reused one down
        are touched: above it each one's last member is the reused one, still open. When the
        same containers are open as at the last build (most reads: a string or a container
        grew), that is the innermost alone.
        """
        if made[_MADE_AT]:
            return made[_MADE_AT + 1]
        top: Any  # the innermost frame open then (None for none)
        _, top, count, key, holder, length = made[_MADE_AT:]
        value = _NOTHING if holder is None else holder.text[:length]
        if top is None:
            return None if value is _NOTHING else value
        kept = self._kept  # the containers of the value last built, root first
        # The common read: the same containers are open as when the value was last built, so
        # only the innermost can have gained members (each outer one's last member is the next
        # one in, still open) — and they are reused if no one else holds any of them.
        if (
            top is self._kept_top
            and made[1] >= self._kept_at
            and list(map(_refs, kept)) == self._alone  # type: ignore[arg-type]
        ):
            container = kept[-1]
            counts = self._kept_counts
            before = counts[-1]
            members = top.members  # type: ignore[union-attr]  # narrowed by `is`, never None
            if top.is_object:  # type: ignore[union-attr]
                if count > before:
                    container.update(members[before:count])
                if value is not _NOTHING:
                    container[key] = value
            else:
                container[before:] = members[before:count]
                if value is not _NOTHING:
                    container.append(value)
            if count != before:
                counts[-1] = count
                self._kept_size += count - before
            if holder is not None and length > self._kept_size:
                self._forget()  # a long open string is not kept (below)
            else:
                self._kept_at = made[1]
            return kept[0]
        frames = []  # open then, innermost first
        frame = top
        while frame is not None:
            frames.append(frame)
            frame = frame.parent
        frames.reverse()
        depth = len(frames)
        reused = 0  # how many of the kept containers, from the root, no one else holds
        if kept and made[1] >= self._kept_at:
            kept_frames = self._kept_frames
            for refs, alone in zip(map(_refs, kept), self._alone, strict=True):  # type: ignore[arg-type]
                if reused == depth or kept_frames[reused] is not frames[reused] or refs != alone:
                    break
                reused += 1
        # Above the deepest reused container nothing changed (each one's last member is the
        # reused one below it, still open), so the build stops there.
        last = reused - 1 if reused else 0
        built: list[Any] = []  # innermost first
        counts = []
        frame = top
        for level in range(depth - 1, last - 1, -1):
            members = frame.members
            is_object = frame.is_object
            if level < reused:
                container = kept[level]
                before = self._kept_counts[level]
                if not is_object:
                    container[before:] = members[before:count]
                elif count > before:
                    container.update(members[before:count])
            elif is_object:
                container = dict(members[:count]) if count else {}
            else:
                container = members[:count]
            if value is not _NOTHING:
                if is_object:
                    container[key] = value
                else:
                    container.append(value)
            counts.append(count)
            built.append(container)
            value = container
            count = frame.index
            key = frame.parent_key
            frame = frame.parent
        built.reverse()
        counts.reverse()
        containers = kept[:last] + built
        counts = self._kept_counts[:last] + counts
        value = containers[0]
        size = sum(counts)
        # Kept, an open string is copied by each piece that grows it (it is no longer the
        # reader's alone): it is kept only while it is no longer than the open containers'
        # members, so that copy never costs more than building them afresh would.
        if _refs is not None and (holder is None or length <= size):
            self._kept_frames = frames
            self._kept = containers
            self._kept_counts = counts
            self._kept_at = made[1]
            self._kept_top = top
            self._kept_size = size
            self._alone = [_ALONE] + [_ALONE + 1] * (depth - 1)
        else:
            self._forget()
        return value

    def _forget(self) -> None:
        """Keep no container of a built value (none is reused by the next)."""
        self._kept = []
        self._kept_frames = []
        self._kept_counts = []
        self._kept_at = -1
        self._kept_top = None
        self._kept_size = 0
        self._alone = []

    def _view(self) -> View:
        if self._state == _DONE:
            return (True, self._result)
        top = self._top
        holder = None if self._in_key else self._text
        return (
            False,
            top,
            len(top.members) if top is not None else 0,
            top.key if top is not None else "",
            holder,
            len(holder.text) if holder is not None else 0,
        )

    # ---- the rare steps -----------------------------------------------------------------

    def _member_closed(
        self, closed: list[str] | None, pointer: str, node: SchemaPlace | None, value: Any
    ) -> list[str]:
        if closed is None:
            closed = [pointer]
        else:
            closed.append(pointer)
        if node is not None:
            check = node.check
            if check is not None and not check(value):
                self._report(node, pointer, value)
        return closed

    def _bad_char(self, run: str, position: int) -> None:
        found = BAD_CHAR.search(run)
        assert found is not None
        at = found.start()
        if at:  # what came before it is read, as a run that stops there would be
            if self._in_key:
                self._key.append(run[:at])
            else:
                holder = self._text
                assert holder is not None
                holder.text += run[:at]
        self._stopped(
            "a control character inside a string"
            if run[at] < " "
            else "a lone surrogate inside a string (not Unicode text)",
            position + at,
        )

    def _add(self, piece: str) -> bool:
        """Add ``piece`` to the open key or string: true when that changed the value."""
        if self._in_key:
            self._key.append(piece)
            return False
        holder = self._text
        assert holder is not None
        grown = holder.text
        holder.text = ""  # the local is then the string's one reference: it grows in place
        grown += piece
        holder.text = grown
        return True

    def _unescape(self, text: str, position: int) -> int:
        """Decode the escape at ``position``, which a run of whole escapes did not take: the
        position after it, or -1 when it is cut (it is held back for the next piece)."""
        end = len(text)
        if position + 1 >= end:
            return self._hold(text, position)
        kind = text[position + 1]
        if kind != "u":
            decoded = _ESCAPED.get(kind)
            if decoded is None:
                self._stopped(f"the escape '\\{kind}'", position)
            self._add(decoded)  # type: ignore[arg-type]
            return position + 2
        if position + 6 > end:
            if not _HEX4.match(text[position + 2 : end] + "0000"):
                self._stopped(f"the escape {text[position:end]!r}", position)
            return self._hold(text, position)
        digits = text[position + 2 : position + 6]
        if not _HEX4.fullmatch(digits):
            self._stopped(f"the escape '\\u{digits}'", position)
        unit = int(digits, 16)
        if 0xD800 <= unit < 0xDC00:
            if position + 12 > end:
                if not _LOW_START.fullmatch(text, position + 6):
                    self._stopped("a high surrogate not followed by a low one", position)
                return self._hold(text, position)
            low_digits = text[position + 8 : position + 12]
            if (
                text[position + 6 : position + 8] != "\\u"
                or not _HEX4.fullmatch(low_digits)
                or not 0xDC00 <= int(low_digits, 16) < 0xE000
            ):
                self._stopped("a high surrogate not followed by a low one", position)
            low = int(low_digits, 16)
            self._add(chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)))
            return position + 12
        if 0xDC00 <= unit < 0xE000:
            self._stopped("a low surrogate with no high one before it", position)
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
            self._stopped(f"{word[: fits + 1]!r} where a JSON value belongs", fits)

    def _end_word(self, position: int) -> Any:
        word = "".join(self._scalar)
        self._scalar = []
        if word not in _WORDS:
            self._stopped(f"{word!r} where a JSON value belongs", position)
        return _WORDS[word]

    def _end_number(self, position: int) -> int | float:
        parts = self._scalar
        word = parts[0] if len(parts) == 1 else "".join(parts)
        self._scalar = []
        found = _NUMBER_TEXT.fullmatch(word)
        if found is None:
            self._stopped(f"{word[:40]!r} is not a JSON number", position)
        if found.group(1) is None and found.group(2) is None:  # type: ignore[union-attr]
            if len(word) - word.startswith("-") > MAX_INT_DIGITS:
                self._limit(f"holding an integer with more than {MAX_INT_DIGITS} digits", position)
            return int(word)
        number = float(word)
        if number - number != 0:  # infinite (a JSON number is never NaN)
            self._limit(f"holding the number {word[:40]!r}, too large for a float", position)
        return number

    def _open(self, is_object: bool, position: int) -> int:
        if self._depth >= MAX_JSON_DEPTH:
            self._limit(f"nested more than {MAX_JSON_DEPTH} levels deep", position)
        top = self._top
        if top is None:
            pointer = ""
            node = self._root
        elif top.is_object:
            pointer = top.key_pointer
            node = None if top.node is None else top.node.child(top.key)
        else:
            index = len(top.members)
            pointer = f"{top.pointer}/{index}"
            node = None if top.node is None else top.node.child(index)
        self._top = _Frame(is_object, top, pointer, node)
        self._depth += 1
        return _KEY_OR_END if is_object else _VALUE_OR_END

    def _end_container(self, closed: list[str] | None) -> tuple[int, _Frame | None, list[str]]:
        """Close the innermost container: the state after it, the new innermost, and
        ``closed`` with the container's pointer added (its value checked)."""
        frame = self._top
        assert frame is not None
        top = self._top = frame.parent
        self._depth -= 1
        value = dict(frame.members) if frame.is_object else frame.members
        closed = self._member_closed(closed, frame.pointer, frame.node, value)
        if top is None:
            self._result = value
            return _DONE, None, closed
        if top.is_object:
            top.members.append((top.key, value))
        else:
            top.members.append(value)
        return _AFTER, top, closed

    def _report(self, place: SchemaPlace, pointer: str, value: Any) -> None:
        for inner, message in place.errors(value):
            at = pointer + inner
            if (at, message) in self._reported:
                continue
            self._reported.add((at, message))
            if self._problems is None:
                self._problems = []
            self._problems.append(
                Diagnostic(code=ErrorCode.OUTPUT_SCHEMA, message=message, json_pointer=at)
            )

    # ---- failing ------------------------------------------------------------------------

    def _stopped(self, why: str, position: int) -> None:
        self._stop(ErrorCode.OUTPUT_SCHEMA.value, f"the answer stopped being JSON: {why}", position)

    def _limit(self, why: str, position: int) -> None:
        self._stop(ErrorCode.RUNTIME_INVALID_RESPONSE.value, f"the JSON is {why}", position)

    def _stop(self, code: str, message: str, position: int) -> None:
        self._state = _FAILED
        self._error = PartialJSONError(code, message, self._base + position)
        raise _Stop


class PartialJSON:
    """JSON that arrives in pieces — a tool call's arguments, an answer — read as it comes.

    ``feed`` each piece as it arrives (any size, split anywhere); it says whether the value
    changed or a subtree closed. ``value`` is then what the text so far determines: open strings
    cut (a cut escape or surrogate pair held back), numbers and ``true``/``false``/``null`` once
    the character after them arrived, containers with the members that arrived. Nothing shown
    disappears, and once the text is whole the value is what the receipt parses from it. The
    parser never reads a character twice; reading ``value`` builds a new list or dict for each
    open container (closed members are shared, so treat the value as read-only).
    """

    __slots__ = ("_last", "_parser")

    def __init__(self) -> None:
        parser = self._parser = PartialOutput.__new__(PartialOutput)
        parser._start(None)  # the same reader, with no schema to check against
        self._last: OutputSnapshot | None = None

    def feed(self, text: str) -> bool:
        """Read the next piece: true when the value changed or a subtree closed."""
        self._last = self._parser.feed(text)
        return self._last is not None

    def close(self) -> bool:
        """The text ended (a number at the top level ends with it): true when that changed the
        value. If the text stopped short of a JSON value, ``error`` now says so."""
        self._last = self._parser.close()
        return self._last is not None

    @property
    def value(self) -> JsonValue:
        """What the text so far determines (``None`` before anything is)."""
        return self._parser.value

    @property
    def completed(self) -> list[str]:
        """The JSON pointers of the subtrees the last ``feed`` or ``close`` closed, innermost
        first (RFC 6901; ``""`` is the whole value)."""
        last = self._last
        if last is None:
            return []
        made = _get_made(last)  # read without building the value
        return list(made["completed"] if type(made) is dict else made[2] or ())

    @property
    def done(self) -> bool:
        """The whole value has arrived."""
        return self._parser.done

    @property
    def error(self) -> PartialJSONError | None:
        """Why reading stopped for good (``None`` while it goes on); the text stopped being
        JSON, or passed a JSON bound (``MAX_JSON_DEPTH``, ``MAX_INT_DIGITS``)."""
        return self._parser.error
