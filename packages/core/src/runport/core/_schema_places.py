"""The parts of an output schema that apply to one place in an answer, so a subtree of a streamed
answer can be checked the moment it closes (ADR 0034).

A place is reached from its container's place by a key or an index, through ``properties``,
``patternProperties``, ``additionalProperties``, ``prefixItems`` and ``items``, and through
the ``$ref`` and ``allOf`` of every schema that applies there — exactly the subschemas that
must accept the member whatever the rest of the answer holds. ``anyOf``, ``oneOf``, ``not``,
``if``/``then``/``else`` and ``dependentSchemas`` are not followed: which of their branches
applies depends on more than the member, so a member under them is checked only as part of a
place above it that is. An early check can therefore miss a problem the receipt finds, never
report one the receipt would not. References resolve as jsonschema's own descent resolves
them (each subschema's ``$id`` moves the base), so a subschema's verdict here is the one it
has inside the whole schema's; a schema with ``$dynamicRef`` anywhere is checked only whole.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

from referencing._core import Resolver
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from runport.core._schema import Checked, checked_errors, checked_schema
from runport.core._schema_patterns import _compiled
from runport.core._schema_quick import ANNOTATIONS, Quick, _always, quick_check
from runport.core._schema_refs import LOCAL_ONLY, local_resolve, nested_ids

_DYNAMIC: Final = ("$dynamicRef", "$recursiveRef")
_MOST_KEYS: Final = 1024
"""Keys a place remembers its members' places for; past it (a map with many distinct keys)
each member's place is worked out again."""
_REST: Final = -1
"""The index that stands for every item past the longest ``prefixItems``."""

_Applied = tuple[Any, Resolver[Any]]
"""A subschema and the resolver positioned where jsonschema's descent would have it."""


class SchemaPlace:
    """The subschemas that apply at one place of the answer.

    ``check`` is the quick verdict on what this place asks of its value *itself* — every
    applying subschema with its member subschemas (``properties``, ``patternProperties``,
    ``additionalProperties``, ``prefixItems``, ``items``) taken as ``true``, and its ``$ref``
    and ``allOf`` left to the subschemas they name, which apply here too. Each member is checked
    at its own place as it closes, so when ``check`` holds, every way the value could fail
    these subschemas lies in a member and was reported already; only when it does not (or
    cannot be decided: ``check`` then always says no) does :meth:`errors` run. ``None`` when
    nothing here asks anything of the value itself.
    """

    __slots__ = ("_children", "_expanded", "_prefix", "_refuses", "_schemas", "applied", "check")

    def __init__(self, schemas: SchemaPlaces, applied: tuple[_Applied, ...]) -> None:
        self._schemas = schemas
        self.applied = applied
        self._expanded: list[_Applied] | None = None
        self._prefix = 0
        self._refuses = False
        self._children: dict[str | int, SchemaPlace | None] = {}
        self.check = self._own_check()

    def _own_check(self) -> Quick | None:
        if not self._schemas.descends:  # no member has a place: the whole value is checked
            checked = self._schemas.checked
            checks = [checked(schema, resolver)[1] for schema, resolver in self.applied]
        else:
            self._expand()
            if self._refuses:
                return _never
            assert self._expanded is not None
            resolve = self._schemas.resolve
            checks = [quick_check(_own(schema), resolve) for schema, _ in self._expanded]
        if any(check is None for check in checks):
            return _never
        kept = [check for check in checks if check is not _always]
        if not kept:
            return None
        if len(kept) == 1:
            return kept[0]
        return lambda value: all(check(value) for check in kept)  # type: ignore[misc]

    def child(self, key: str | int) -> SchemaPlace | None:
        """The place of the member at ``key`` (an object's) or index (an array's); ``None``
        when no subschema there says anything."""
        if self._expanded is None:
            self._expand()
        if type(key) is int and key >= self._prefix:
            key = _REST
        children = self._children
        try:
            return children[key]
        except KeyError:
            pass
        found = self._schemas.place(self._member(key))
        if len(children) < _MOST_KEYS:
            children[key] = found
        return found

    def errors(self, value: Any) -> list[tuple[str, str]]:
        """``(pointer within value, message)`` for every way ``value`` fails a subschema that
        applies here."""
        found: list[tuple[str, str]] = []
        for schema, resolver in self.applied:
            errors = checked_errors(self._schemas.checked(schema, resolver), value)
            if isinstance(errors, list):
                found.extend(errors)
        return found

    def _expand(self) -> None:
        expanded: list[_Applied] = []
        seen: set[int] = set()
        stack = list(self.applied)
        while stack:
            schema, resolver = stack.pop()
            if type(schema) is not dict or id(schema) in seen:
                if schema is not True and type(schema) is not dict:
                    self._refuses = True  # ``false``: nothing is valid here
                continue
            seen.add(id(schema))
            expanded.append((schema, resolver))
            ref = schema.get("$ref")
            if isinstance(ref, str):
                try:
                    resolved = resolver.lookup(ref)
                except Unresolvable:  # refused when the contract loaded; never reached
                    continue
                stack.append((resolved.contents, resolved.resolver))
            branches = schema.get("allOf")
            if isinstance(branches, list):
                stack.extend(_within(resolver, branch) for branch in branches)
        prefixes = [schema.get("prefixItems") for schema, _ in expanded]
        self._prefix = max((len(each) for each in prefixes if isinstance(each, list)), default=0)
        self._expanded = expanded

    def _member(self, key: str | int) -> list[_Applied]:
        applied: list[_Applied] = []
        assert self._expanded is not None
        for schema, resolver in self._expanded:
            if isinstance(key, str):
                named = False
                properties = schema.get("properties")
                if isinstance(properties, dict) and key in properties:
                    applied.append(_within(resolver, properties[key]))
                    named = True
                patterns = schema.get("patternProperties")
                if isinstance(patterns, dict):
                    for pattern, subschema in patterns.items():
                        if _compiled(pattern).search(key):
                            applied.append(_within(resolver, subschema))
                            named = True
                # ``false`` here and for ``items`` is reported by the container, in the
                # receipt's words ("Additional properties are not allowed ..."), as it closes
                if not named and schema.get("additionalProperties", False) is not False:
                    applied.append(_within(resolver, schema["additionalProperties"]))
            else:
                prefix = schema.get("prefixItems")
                if isinstance(prefix, list) and 0 <= key < len(prefix):
                    applied.append(_within(resolver, prefix[key]))
                elif schema.get("items", False) is not False:
                    applied.append(_within(resolver, schema["items"]))
        return applied


class SchemaPlaces:
    """The places of one output schema, each worked out once and shared by every answer
    checked against it."""

    def __init__(self, schema: Mapping[str, Any], checked: Checked) -> None:
        self._validator = checked[0]
        self._checked: dict[int, Checked] = {id(schema): checked}
        self._places: dict[tuple[int, ...], SchemaPlace] = {}
        self._keep: list[Any] = [schema]  # what the ids above name stays alive
        resolver = LOCAL_ONLY.resolver_with_root(DRAFT202012.create_resource(schema))
        self.descends = not _mentions(schema, _DYNAMIC)
        self.resolve = None if nested_ids(schema) else local_resolve(schema)
        self.root = SchemaPlace(self, ((schema, resolver),))

    def place(self, applied: list[_Applied]) -> SchemaPlace | None:
        applied = [each for each in applied if _asserts(each[0])]
        if not applied or not self.descends:
            return None
        key = tuple(id(schema) for schema, _ in applied)
        found = self._places.get(key)
        if found is None:
            found = self._places.setdefault(key, SchemaPlace(self, tuple(applied)))
        return found

    def checked(self, schema: Any, resolver: Resolver[Any]) -> Checked:
        found = self._checked.get(id(schema))
        if found is None:
            validator: Any = self._validator
            evolved = validator.evolve(schema=schema, _resolver=resolver)
            quick = quick_check(schema, self.resolve) if type(schema) is dict else None
            found = self._checked.setdefault(id(schema), (evolved, quick))
            self._keep.append(schema)
        return found


_PLACES: dict[str, SchemaPlaces | None] = {}
_CACHE_LIMIT: Final = 256
_LOCK = threading.Lock()


def schema_places(schema: Mapping[str, Any]) -> SchemaPlaces | None:
    """The places of ``schema``, or ``None`` when the schema is not valid (the receipt then
    reports it, with ``TQX_OUTPUT_SCHEMA_INVALID``)."""
    key = repr(schema)
    try:
        return _PLACES[key]
    except KeyError:
        pass
    checked = checked_schema(schema)
    found = None if isinstance(checked[0], str) else SchemaPlaces(schema, checked)
    with _LOCK:
        if len(_PLACES) >= _CACHE_LIMIT:
            _PLACES.pop(next(iter(_PLACES)), None)
        return _PLACES.setdefault(key, found)


_MEMBERS: Final = ("properties", "patternProperties")
_ELSEWHERE: Final = ("$ref", "allOf", "additionalProperties", "items", "prefixItems")


def _never(value: Any) -> bool:
    return False


def _own(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with what its members and its references answer for taken out: member
    subschemas become ``true`` (the names stay, for ``additionalProperties: false``)."""
    own = {key: item for key, item in schema.items() if key not in _ELSEWHERE}
    for keyword in _MEMBERS:
        members = schema.get(keyword)
        if isinstance(members, dict):
            own[keyword] = dict.fromkeys(members, True)
    prefix = schema.get("prefixItems")
    if schema.get("additionalProperties") is False:
        own["additionalProperties"] = False
    if schema.get("items") is False:
        own["items"] = False
        if isinstance(prefix, list):
            own["prefixItems"] = [True] * len(prefix)
    return own


def _within(resolver: Resolver[Any], schema: Any) -> _Applied:
    if type(schema) is dict and "$id" in schema:
        return schema, resolver.in_subresource(DRAFT202012.create_resource(schema))
    return schema, resolver


def _asserts(schema: Any) -> bool:
    if schema is True:
        return False
    if type(schema) is dict:
        return not schema.keys() <= ANNOTATIONS
    return True


def _mentions(schema: Any, keywords: tuple[str, ...]) -> bool:
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if any(keyword in node for keyword in keywords):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False
