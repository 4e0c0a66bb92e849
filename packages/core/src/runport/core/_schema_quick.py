"""A plain-Python verdict for the simplest schemas, so the common valid value skips jsonschema.

Most input and text-output schemas are one ``type`` with a length bound or an enum of strings.
For those the verdict is a couple of ``isinstance`` and ``len`` calls; jsonschema's
``iter_errors`` walks its keyword machinery for the same answer at many times the cost. The
predicate only ever says *valid*: when it says no (or the schema is not one of these shapes),
the full validator runs and its errors are the report, so messages never change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Quick = Callable[[Any], bool]

# jsonschema's Draft 2020-12 type checks for these names are exactly these isinstance tests
# (a bool is not an integer there, so "integer" and "number" are left to jsonschema).
_TYPES: dict[str, type | tuple[type, ...] | None] = {
    "string": str,
    "boolean": bool,
    "null": None,
    "object": dict,
    "array": list,
}
_ANNOTATIONS = frozenset({"title", "description", "$comment", "examples", "deprecated"})
_KEYWORDS = frozenset({"type", "minLength", "maxLength", "enum", "const"}) | _ANNOTATIONS


def quick_check(schema: Mapping[str, Any]) -> Quick | None:
    """A predicate that is true only for values ``schema`` accepts, or ``None`` when the schema
    uses anything but ``type`` (one of the names above), string length bounds, an ``enum`` or
    ``const`` of strings, and annotations. ``schema`` has passed the meta-schema check."""
    if type(schema) is not dict or not schema.keys() <= _KEYWORDS:
        return None
    kind: type | tuple[type, ...] | None = object
    if "type" in schema:
        name = schema["type"]
        if not isinstance(name, str) or name not in _TYPES:
            return None
        kind = _TYPES[name]
    low = schema.get("minLength", 0)
    high = schema.get("maxLength")
    if isinstance(low, bool) or not isinstance(low, int):
        return None
    if high is not None and (isinstance(high, bool) or not isinstance(high, int)):
        return None
    allowed: frozenset[str] | None = None
    if "enum" in schema and "const" in schema:
        return None
    if "enum" in schema or "const" in schema:
        words = schema["enum"] if "enum" in schema else [schema["const"]]
        if not all(type(word) is str for word in words):
            return None
        allowed = frozenset(words)
    return _predicate(kind, low, high, allowed)


def _predicate(
    kind: type | tuple[type, ...] | None, low: int, high: int | None, allowed: frozenset[str] | None
) -> Quick:
    def accepts(value: Any) -> bool:
        if kind is None:
            if value is not None:
                return False
        elif not isinstance(value, kind):
            return False
        if isinstance(value, str):
            if len(value) < low or (high is not None and len(value) > high):
                return False
            return allowed is None or value in allowed
        return allowed is None

    return accepts
