"""A plain-Python verdict for common schemas, so the common valid value skips jsonschema.

Most schemas a contract holds — and every subschema a streamed answer is checked against as
it closes (ADR 0034) — are made of a few keywords: ``type``, ``properties``, ``required``,
``additionalProperties``, ``items``, length, count and number bounds, ``enum``/``const`` of
strings, ``pattern``, ``format``, ``allOf``/``anyOf`` and references within the schema. For
those the verdict is a handful of ``isinstance``, ``len`` and comparisons; jsonschema's
``iter_errors`` walks its keyword machinery for the same answer at many times the cost. The
predicate is exact on the shapes it accepts (a property test holds it to jsonschema's
verdict), and it is only ever trusted to say *valid*: when it says no, the full validator runs
and its errors are the report, so messages never change. A schema using anything else gets no
predicate.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from typing import Any, Final

Quick = Callable[[Any], bool]
Resolve = Callable[[str], Any]
"""The subschema a ``$ref`` names, within the schema; raises ``LookupError`` when it cannot."""

# jsonschema's Draft 2020-12 type checks. A number that is neither int nor float (a Decimal)
# is left to jsonschema: the predicate says no and jsonschema decides.
_TYPES: Final[dict[str, Quick]] = {
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "integer": lambda value: (
        not isinstance(value, bool)
        and (isinstance(value, int) or (isinstance(value, float) and value.is_integer()))
    ),
    "number": lambda value: not isinstance(value, bool) and isinstance(value, int | float),
}
ANNOTATIONS: Final = frozenset(
    {
        "title",
        "description",
        "$comment",
        "examples",
        "deprecated",
        "default",
        "readOnly",
        "writeOnly",
        "$schema",
        "$anchor",
        "$defs",
        "definitions",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)
"""Keywords that assert nothing of a value (under Draft 2020-12 the ``content*`` ones are
annotations too): a schema of these alone accepts everything."""
_COUNTS: Final = {
    "minLength": (str, False),
    "maxLength": (str, True),
    "minItems": (list, False),
    "maxItems": (list, True),
    "minProperties": (dict, False),
    "maxProperties": (dict, True),
}
_BOUNDS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "minimum": lambda value, bound: value >= bound,
    "maximum": lambda value, bound: value <= bound,
    "exclusiveMinimum": lambda value, bound: value > bound,
    "exclusiveMaximum": lambda value, bound: value < bound,
}


def _always(value: Any) -> bool:
    return True


def _is_count(bound: object) -> bool:
    return type(bound) is int and bound >= 0


def _is_number(bound: object) -> bool:
    return type(bound) is int or type(bound) is float


class _Unsupported(Exception):
    """The schema uses something the predicate does not decide."""


def quick_check(schema: Mapping[str, Any], resolve: Resolve | None = None) -> Quick | None:
    """A predicate that is true exactly for the values ``schema`` accepts, or ``None`` when the
    schema uses a keyword or shape it does not decide. ``schema`` has passed the meta-schema
    check; ``resolve`` finds what a ``$ref`` names (without it, a reference means ``None``)."""
    if type(schema) is not dict:
        return None
    try:
        return _Compiler(resolve).compile(schema, root=True)
    except _Unsupported:
        return None


class _Compiler:
    def __init__(self, resolve: Resolve | None) -> None:
        self._resolve = resolve
        self._references: dict[int, list[Quick]] = {}

    def compile(self, schema: Any, *, root: bool = False) -> Quick:
        if schema is True:
            return _always
        if type(schema) is not dict:
            raise _Unsupported  # False (never valid) and anything else
        checks: list[Quick] = []
        for keyword, argument in schema.items():
            if keyword in ANNOTATIONS or (root and keyword == "$id"):
                continue
            check = self._keyword(keyword, argument, schema)
            if check is not _always:
                checks.append(check)
        return _all(checks)

    def _keyword(self, keyword: str, argument: Any, schema: Mapping[str, Any]) -> Quick:
        if keyword == "type":
            names = [argument] if isinstance(argument, str) else argument
            if not isinstance(names, list) or not all(name in _TYPES for name in names):
                raise _Unsupported
            tests = [_TYPES[name] for name in names]
            return tests[0] if len(tests) == 1 else lambda value: any(t(value) for t in tests)
        if keyword in _COUNTS:
            if not _is_count(argument):
                raise _Unsupported
            kind, at_most = _COUNTS[keyword]
            if at_most:
                return lambda value: not isinstance(value, kind) or len(value) <= argument
            return lambda value: not isinstance(value, kind) or len(value) >= argument
        if keyword in _BOUNDS:
            if not _is_number(argument):
                raise _Unsupported
            holds = _BOUNDS[keyword]

            def bounded(value: Any) -> bool:
                if isinstance(value, bool) or not isinstance(value, numbers.Number):
                    return True
                return isinstance(value, int | float) and holds(value, argument)

            return bounded
        if keyword == "enum" or keyword == "const":
            words = argument if keyword == "enum" else [argument]
            if not isinstance(words, list) or not all(type(word) is str for word in words):
                raise _Unsupported
            allowed = frozenset(words)
            return lambda value: isinstance(value, str) and value in allowed
        if keyword == "pattern":
            from runport.core._schema_patterns import _compiled  # a cycle at import time

            search = _compiled(argument).search
            return lambda value: not isinstance(value, str) or search(value) is not None
        if keyword == "format":
            from runport.core._schema import FORMAT_CHECKER  # a cycle at import time

            conforms = FORMAT_CHECKER.conforms
            return lambda value: conforms(value, argument)
        if keyword == "required":
            names = tuple(argument)
            return lambda value: not isinstance(value, dict) or all(name in value for name in names)
        if keyword == "properties":
            return self._properties(argument)
        if keyword == "additionalProperties":
            return self._additional(argument, schema)
        if keyword == "items":
            return self._items(argument, schema)
        if keyword == "prefixItems":
            return self._prefix(argument)
        if keyword == "allOf" or keyword == "anyOf":
            branches = [self.compile(branch) for branch in argument]
            if keyword == "allOf":
                return _all(branches)
            return lambda value: any(branch(value) for branch in branches)
        if keyword == "$ref":
            return self._reference(argument)
        raise _Unsupported

    def _properties(self, properties: Mapping[str, Any]) -> Quick:
        checks = [(name, self.compile(sub)) for name, sub in properties.items()]
        checks = [(name, check) for name, check in checks if check is not _always]

        def accepts(value: Any) -> bool:
            if not isinstance(value, dict):
                return True
            return all(check(value[name]) for name, check in checks if name in value)

        return accepts

    def _additional(self, additional: Any, schema: Mapping[str, Any]) -> Quick:
        if "patternProperties" in schema:
            raise _Unsupported
        named = frozenset(schema.get("properties", ()))
        if additional is False:
            return lambda value: not isinstance(value, dict) or value.keys() <= named
        check = self.compile(additional)
        if check is _always:
            return _always
        return lambda value: (
            not isinstance(value, dict)
            or all(check(item) for key, item in value.items() if key not in named)
        )

    def _items(self, items: Any, schema: Mapping[str, Any]) -> Quick:
        prefix = schema.get("prefixItems", [])
        if not isinstance(prefix, list):
            raise _Unsupported
        start = len(prefix)
        if items is False:
            return lambda value: not isinstance(value, list) or len(value) <= start
        check = self.compile(items)
        if check is _always:
            return _always
        if start:
            return lambda value: (
                not isinstance(value, list) or all(check(item) for item in value[start:])
            )
        return lambda value: not isinstance(value, list) or all(map(check, value))

    def _prefix(self, prefix: Any) -> Quick:
        checks = [self.compile(sub) for sub in prefix]
        return lambda value: (
            not isinstance(value, list)
            or all(check(item) for check, item in zip(checks, value, strict=False))
        )

    def _reference(self, ref: str) -> Quick:
        if self._resolve is None:
            raise _Unsupported
        try:
            target = self._resolve(ref)
        except LookupError:
            raise _Unsupported from None
        cell = self._references.get(id(target))
        if cell is None:  # compiled once; a reference back into it reads the same cell
            cell = self._references[id(target)] = []
            cell.append(self.compile(target))
        return lambda value: cell[0](value)


def _all(checks: list[Quick]) -> Quick:
    checks = [check for check in checks if check is not _always]
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)
    if len(checks) == 3:
        first, second, third = checks
        return lambda value: first(value) and second(value) and third(value)

    return lambda value: all(check(value) for check in checks)
