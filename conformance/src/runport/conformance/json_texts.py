"""Hypothesis strategies for JSON texts written every way JSON allows, for partial-output
properties (a parser's, an adapter's structured answers): whitespace anywhere, every string
escape (surrogate pairs included), numbers with signs, fractions and exponents, empty and nested
containers, and keys written twice; the texts cut into pieces as a stream delivers them, and
schemas an answer nearly fits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from runport.core import parse_json_text

__all__ = [
    "Written",
    "checked_answers",
    "cuts",
    "schema_for",
    "values",
    "written",
]

SPACES = st.sampled_from(["", "", "", " ", "  ", "\n", "\t", "\r\n", " \n\t "])
SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
SHORT["\t"] = "\\t"
NUMBER_TEXT = st.from_regex(r"\A-?(0|[1-9][0-9]{0,12})(\.[0-9]{1,8})?([eE][-+]?[0-9]{1,2})?\Z")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    NUMBER_TEXT.map(lambda text: _Number(text)),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=5), inner, max_size=4),
    ),
    max_leaves=14,
)


@dataclass(frozen=True)
class _Number:
    """A number written as it was drawn (``-0.5E+07``), not as Python would write it."""

    text: str


@dataclass
class Written:
    """A JSON text, the value it parses to, and whether it writes a key twice."""

    text: str
    value: Any  # what the receipt parses from the text
    repeats_keys: bool


def _unicode_escape(draw: st.DrawFn, char: str) -> str:
    code = ord(char)
    units = (
        [code]
        if code < 0x10000
        else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)]
    )
    hexes = [f"{unit:04x}" for unit in units]
    return "".join("\\u" + (each.upper() if draw(st.booleans()) else each) for each in hexes)


def _string(draw: st.DrawFn, text: str) -> str:
    out = ['"']
    for char in text:
        how = draw(st.integers(0, 5))
        if char in SHORT and (how < 4 or char in '"\\' or char < " "):
            if how == 0:
                out.append(_unicode_escape(draw, char))
            else:
                out.append(SHORT[char])
        elif char < " " or how == 0:
            out.append(_unicode_escape(draw, char))
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _write(draw: st.DrawFn, value: Any, flags: dict[str, bool]) -> str:
    space = draw(SPACES)
    if isinstance(value, _Number):
        return space + value.text
    if value is None or isinstance(value, bool):
        return space + {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return space + str(value)
    if isinstance(value, float):
        assert math.isfinite(value)
        return space + repr(value)
    if isinstance(value, str):
        return space + _string(draw, value)
    if isinstance(value, list):
        inner = [_write(draw, item, flags) + draw(SPACES) for item in value]
        return space + "[" + (",".join(inner) if inner else draw(SPACES)) + "]"
    members = [
        draw(SPACES) + _string(draw, key) + draw(SPACES) + ":" + _write(draw, item, flags)
        for key, item in value.items()
    ]
    if members and draw(st.integers(0, 5)) == 0:  # a key written again, with another value
        key = draw(st.sampled_from(sorted(value)))
        again = draw(values)
        members.insert(
            draw(st.integers(0, len(members))),
            _string(draw, key) + ":" + _write(draw, again, flags),
        )
        flags["repeats"] = True
    return space + "{" + (",".join(members) if members else draw(SPACES)) + draw(SPACES) + "}"


@st.composite
def written(draw: st.DrawFn, value: st.SearchStrategy[Any] = values) -> Written:
    """A text for a value drawn from ``value`` (any JSON value by default), spaced and
    escaped at random."""
    flags = {"repeats": False}
    text = _write(draw, draw(value), flags) + draw(SPACES)
    ok, parsed = parse_json_text(text)
    assert ok, text
    return Written(text, parsed, flags["repeats"])


@st.composite
def cuts(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` in pieces of 1–8 characters, split anywhere."""
    pieces = []
    start = 0
    while start < len(text):
        size = draw(st.integers(1, 8))
        pieces.append(text[start : start + size])
        start += size
    return pieces


@st.composite
def schema_for(draw: st.DrawFn, value: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """A schema that ``value`` nearly fits: its shape, with bounds that may be too tight, keys
    that may be missing, and the subschemas reached through every keyword partial output
    follows (and some it does not)."""
    if isinstance(value, _Number):
        value = float(value.text) if any(c in value.text for c in ".eE") else int(value.text)
    kind = {
        type(None): "null",
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }[type(value)]
    schema: dict[str, Any] = {}
    if draw(st.integers(0, 4)):
        schema["type"] = (
            kind if draw(st.integers(0, 6)) else draw(st.sampled_from(["string", "array"]))
        )
    if kind == "string" and draw(st.booleans()):
        schema["maxLength"] = draw(st.integers(0, 8))
    if kind in ("integer", "number") and draw(st.booleans()):
        schema["minimum"] = draw(st.integers(-5, 5))
    if kind == "array" and value:
        if draw(st.booleans()):
            schema["prefixItems"] = [draw(schema_for(item, defs, depth + 1)) for item in value[:1]]
        schema["items"] = draw(schema_for(value[-1], defs, depth + 1))
        if draw(st.integers(0, 3)) == 0:
            schema["maxItems"] = draw(st.integers(0, 3))
    if kind == "object":
        schema["properties"] = {
            key: draw(schema_for(item, defs, depth + 1))
            for key, item in value.items()
            if draw(st.booleans())
        }
        keys = [*value, "missing"]
        schema["required"] = draw(st.lists(st.sampled_from(keys), max_size=2, unique=True))
        if draw(st.integers(0, 3)) == 0:
            schema["additionalProperties"] = draw(st.sampled_from([False, {"type": "string"}]))
    way = draw(st.integers(0, 7))
    if way == 0 and depth < 3:
        name = f"d{len(defs)}"
        defs[name] = schema
        return {"$ref": "#/$defs/" + name}
    if way == 1:
        return {"allOf": [schema, {"not": {"type": "null"}}]}
    if way == 2:
        return {"anyOf": [schema, {"type": "boolean"}]}  # not followed: checked only above
    return schema


@st.composite
def checked_answers(draw: st.DrawFn) -> tuple[dict[str, Any], Written]:
    """A schema and an answer written for it (which may or may not satisfy it)."""
    answer = draw(written())
    defs: dict[str, Any] = {}
    schema = draw(schema_for(answer.value, defs))
    return {"allOf": [schema], "$defs": defs}, answer
