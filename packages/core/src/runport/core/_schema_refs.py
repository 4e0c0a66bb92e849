"""``$ref`` in a contract's schemas: resolved within the schema, never fetched (docs/limits.md).

A schema is someone else's text. Left to its defaults, a JSON Schema validator retrieves what a
``$ref`` names — a file, a URL — and what it read can surface in diagnostics; a slow server
hangs the call. Here every reference is checked when the contract loads: it must point into
the same document (``#…`` pointers, ``$defs``, ``$anchor``, or a subschema anchored by its own
``$id``), at something that exists, and never round to itself without descending into the
value (``{"$ref": "#"}`` would recurse forever).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from referencing import Registry, Resource
from referencing.exceptions import NoSuchAnchor, NoSuchResource, PointerToNowhere, Unresolvable
from referencing.jsonschema import DRAFT202012

from runport.core._document import json_pointer


def _refuse(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


LOCAL_ONLY: Final[Registry[Any]] = Registry(retrieve=_refuse)  # type: ignore[call-arg]
"""The registry every runport validator uses: nothing outside the schema can be retrieved."""

# Keywords whose value is one subschema, a list of them, or a map of them (Draft 2020-12).
_ONE = frozenset(
    {
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP = frozenset({"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"})
# Those that apply to the very value the schema applies to: a loop through them alone (and
# through references) never reaches the end of the value.
_IN_PLACE = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas"})


def subschemas(schema: Mapping[str, Any]) -> Iterator[tuple[str, tuple[str | int, ...], Any]]:
    """``(keyword, path within the schema, subschema)`` for each direct subschema."""
    for keyword, value in schema.items():
        if keyword in _ONE:
            yield keyword, (keyword,), value
        elif keyword in _LIST and isinstance(value, list):
            for index, item in enumerate(value):
                yield keyword, (keyword, index), item
        elif keyword in _MAP and isinstance(value, Mapping):
            for name, item in value.items():
                yield keyword, (keyword, name), item


def reference_problems(schema: Mapping[str, Any]) -> list[str]:
    """Why a reference in ``schema`` cannot be used (empty when every one can).

    ``schema`` must already be a valid Draft 2020-12 schema. The walk is iterative and visits
    each subschema once, and what a reference points at is walked too (it may lie under a
    keyword no validator descends into), so a loop of references is found, not followed.
    """
    root = DRAFT202012.create_resource(schema)
    resolver = LOCAL_ONLY.resolver_with_root(root)
    problems: list[str] = []
    edges: dict[int, list[int]] = {}
    where: dict[int, str] = {}
    stack: list[tuple[Any, Any, str]] = [(schema, resolver, "")]
    while stack:
        node, scope, pointer = stack.pop()
        if not isinstance(node, Mapping) or id(node) in edges:
            continue
        if pointer and isinstance(node.get("$id"), str):
            scope = scope.in_subresource(DRAFT202012.create_resource(node))
        targets = edges[id(node)] = []
        where[id(node)] = pointer
        for keyword in ("$ref", "$dynamicRef"):
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            at = f"{pointer}/{keyword}"
            try:
                resolved = scope.lookup(ref)
            except (PointerToNowhere, NoSuchAnchor):
                problems.append(
                    f"{keyword} {ref!r} points at nothing in this schema (at schema{at})"
                )
                continue
            except Unresolvable:
                problems.append(
                    f"{keyword} {ref!r} names another document: schemas resolve only within "
                    f"themselves and nothing is fetched (at schema{at})"
                )
                continue
            targets.append(id(resolved.contents))
            stack.append((resolved.contents, resolved.resolver, _fragment(ref, at)))
        for keyword, path, child in subschemas(node):
            if keyword in _IN_PLACE and isinstance(child, Mapping):
                targets.append(id(child))
            stack.append((child, scope, pointer + json_pointer(path)))
    if not problems:
        looped = _first_loop(edges)
        if looped is not None:
            problems.append(
                "a $ref leads back to the schema it is in without descending into the value, "
                f"so validation would never end (at schema{where[looped] or ' root'})"
            )
    return problems


def local_resolve(schema: Mapping[str, Any]) -> Callable[[str], Any]:
    """What a ``$ref`` in ``schema`` names, looked up from the schema's root (``LookupError``
    when it names nothing there)."""
    resolver = LOCAL_ONLY.resolver_with_root(DRAFT202012.create_resource(schema))

    def resolve(ref: str) -> Any:
        try:
            return resolver.lookup(ref).contents
        except Unresolvable as error:
            raise LookupError(ref) from error

    return resolve


def nested_ids(schema: Any) -> bool:
    """Whether a subschema below the root has its own ``$id`` (which moves the base that the
    references under it resolve against)."""
    stack = [child for _, _, child in subschemas(schema)] if isinstance(schema, Mapping) else []
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if "$id" in node:
                return True
            stack.extend(child for _, _, child in subschemas(node))
    return False


def _fragment(ref: str, at: str) -> str:
    _, _, fragment = ref.partition("#")
    return fragment if fragment.startswith("/") else at


def _first_loop(edges: Mapping[int, list[int]]) -> int | None:
    """A node on a cycle of ``edges``, found by an iterative depth-first search."""
    done: set[int] = set()
    for start in edges:
        if start in done:
            continue
        open_nodes = {start}
        path: list[tuple[int, Iterator[int]]] = [(start, iter(edges.get(start, ())))]
        while path:
            node, pending = path[-1]
            following = next(pending, None)
            if following is None:
                path.pop()
                open_nodes.discard(node)
                done.add(node)
            elif following in open_nodes:
                return following
            elif following not in done:
                open_nodes.add(following)
                path.append((following, iter(edges.get(following, ()))))
    return None
