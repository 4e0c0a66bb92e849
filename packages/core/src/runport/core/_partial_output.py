"""A structured answer shown as it streams: ``OutputSnapshot``\\s from the answer's text deltas,
and the same reader for any JSON that arrives in pieces (ADR 0034, docs/partial-output.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, JsonValue

from runport.contracts import Diagnostic, ErrorCode, OutputSnapshot
from runport.core._partial_json import Parser, PartialJSONError, View, build
from runport.core._schema_places import SchemaPlace, schema_places

_FIELDS: Final = BaseModel.__dict__["__dict__"]  # the instance dict itself, under any override
_set = object.__setattr__


class _Snapshot(OutputSnapshot):
    """An ``OutputSnapshot`` whose value is built the first time anything reads it.

    Reading ``value``, serializing (pydantic reads a model's ``__dict__``), comparing, copying
    or pickling all go through ``__dict__``, which builds the value from the view taken when
    the snapshot was made; until then a snapshot costs O(1) however large the answer. It
    compares equal to the plain ``OutputSnapshot`` with the same fields, prints as one and
    pickles into one.
    """

    __slots__ = ("_view",)
    if TYPE_CHECKING:  # not an annotation pydantic sees: it would make a private attribute
        _view: View | None

    def _fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = _FIELDS.__get__(self)
        view = self._view
        if view is not None:
            fields["value"] = build(view)
            _set(self, "_view", None)
        return fields

    def _replace_fields(self, fields: dict[str, Any]) -> None:
        _set(self, "_view", None)
        _FIELDS.__set__(self, fields)

    __dict__ = property(_fields, _replace_fields)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OutputSnapshot):
            return bool(self.__dict__ == other.__dict__)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr_name__(self) -> str:
        return "OutputSnapshot"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_plain, (dict(self.__dict__),))


# A data descriptor on the class outranks the instance dict, where ``value`` waits as ``None``.
_Snapshot.value = property(lambda self: self.__dict__["value"])  # type: ignore[assignment]


# A snapshot is made per delta: its slots are set through their own descriptors, without the
# attribute lookup ``object.__setattr__`` does on every call.
_new = object.__new__
_set_view = _Snapshot.__dict__["_view"].__set__
_set_fields = _FIELDS.__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def _plain(fields: dict[str, Any]) -> OutputSnapshot:
    return OutputSnapshot.model_construct(**fields)


def _snapshot(view: View, completed: list[str], problems: list[Diagnostic]) -> OutputSnapshot:
    snapshot = _new(_Snapshot)
    if view[0]:
        _set_view(snapshot, None)
        value = view[1]
    else:
        _set_view(snapshot, view)
        value = None
    _set_fields(
        snapshot,
        {"kind": "OutputSnapshot", "value": value, "completed": completed, "problems": problems},
    )
    _set_fields_set(snapshot, {"kind", "value", "completed", "problems"})
    _set_extra(snapshot, None)
    _set_private(snapshot, None)
    return snapshot


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

    __slots__ = ("_parser",)

    def __init__(self) -> None:
        self._parser = Parser()

    def feed(self, text: str) -> bool:
        """Read the next piece: true when the value changed or a subtree closed."""
        return self._parser.feed(text)

    def close(self) -> bool:
        """The text ended (a number at the top level ends with it): true when that changed the
        value. If the text stopped short of a JSON value, ``error`` now says so."""
        return self._parser.close()

    @property
    def value(self) -> JsonValue:
        """What the text so far determines (``None`` before anything is)."""
        return build(self._parser.view())  # type: ignore[no-any-return]

    @property
    def completed(self) -> list[str]:
        """The JSON pointers of the subtrees the last ``feed`` or ``close`` closed, innermost
        first (RFC 6901; ``""`` is the whole value)."""
        return list(self._parser.closed)

    @property
    def done(self) -> bool:
        """The whole value has arrived."""
        return self._parser.done

    @property
    def error(self) -> PartialJSONError | None:
        """Why reading stopped for good (``None`` while it goes on); the text stopped being
        JSON, or passed a JSON bound (``MAX_JSON_DEPTH``, ``MAX_INT_DIGITS``)."""
        return self._parser.error


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

    __slots__ = ("_parser", "_problems", "_reported")

    def __init__(self, output_schema: Mapping[str, JsonValue]) -> None:
        places = schema_places(output_schema)
        self._parser = Parser(
            places.root if places is not None else None, SchemaPlace.child, self._check
        )
        self._problems: list[Diagnostic] = []
        self._reported: set[tuple[str, str]] = set()

    def feed(self, text: str) -> OutputSnapshot | None:
        """The snapshot after ``text``, the next piece of the answer; ``None`` when it changed
        nothing (or the answer is no longer JSON: see ``error``)."""
        parser = self._parser
        if not parser.feed(text):
            return None
        problems = self._problems
        if problems:
            self._problems = []
        else:
            problems = []
        return _snapshot(parser.view(), parser.closed, problems)

    def close(self) -> OutputSnapshot | None:
        """The answer's text has ended: the last snapshot, when ending it completed the value
        (an answer that is one number), else ``None``."""
        parser = self._parser
        if not parser.close():
            return None
        problems, self._problems = self._problems, []
        return _snapshot(parser.view(), parser.closed, problems)

    @property
    def value(self) -> JsonValue:
        """The answer so far, as the latest snapshot shows it (``None`` before anything)."""
        return build(self._parser.view())  # type: ignore[no-any-return]

    @property
    def done(self) -> bool:
        """The whole answer has arrived and was JSON."""
        return self._parser.done

    @property
    def error(self) -> PartialJSONError | None:
        """Why snapshots stopped (``None`` while they go on); the answer stopped being JSON
        (``code`` ``TQX_OUTPUT_SCHEMA``, the receipt's output will be the text) or passed a
        JSON bound (``TQX_RUNTIME_INVALID_RESPONSE``, the call fails with it)."""
        return self._parser.error

    def _check(self, place: object, pointer: str, value: Any) -> None:
        assert isinstance(place, SchemaPlace)
        for inner, message in place.errors(value):
            at = pointer + inner
            if (at, message) in self._reported:
                continue
            self._reported.add((at, message))
            self._problems.append(
                Diagnostic(code=ErrorCode.OUTPUT_SCHEMA, message=message, json_pointer=at)
            )
