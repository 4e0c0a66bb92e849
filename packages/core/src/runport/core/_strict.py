"""The strict JSON Schema subset of OpenAI's structured output, and a schema's form in it.

Provider-neutral data knowledge, so it lives here: the OpenAI adapter sends a schema strict
only when this finds a strict form, and ``runport validate`` warns about a contract whose output
schema has none.

``strict: true`` makes OpenAI refuse any schema outside a subset: every object closed with
``additionalProperties: false``, every property listed in ``required``, a limited keyword set,
an object at the root. A contract's schema is sent strict when it is in the subset or can be
brought into it without letting through an answer the contract's own schema would refuse:
closing an object that says nothing about extra properties only narrows what the model may
write, and an optional property whose schema admits ``null`` can be made required. Anything
else — an optional property that does not admit ``null`` (the model would then write ``null``
for it, which the contract refuses), a keyword outside the subset — is sent with
``strict: false``. The answer is always validated against the contract's own schema.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["strict_schema"]

_KEYWORDS: Final = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum", "const",
        "anyOf", "$ref", "$defs", "definitions", "description", "title", "pattern", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minItems", "maxItems", "$schema",
    }
)  # fmt: skip
_TYPES: Final = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})


class _NotStrict(Exception):
    """Raised inside the walk: the schema cannot be sent strict."""


def strict_schema(schema: Any) -> dict[str, Any] | None:
    """The strict form of ``schema``, or ``None`` when it has none (send ``strict: false``)."""
    if type(schema) is not dict or schema.get("type") != "object":
        return None
    try:
        result = _node(schema, depth=0)
    except (_NotStrict, RecursionError):
        return None
    return result


def _node(node: Any, depth: int) -> dict[str, Any]:
    if type(node) is not dict or depth > 32 or not node.keys() <= _KEYWORDS:
        raise _NotStrict
    out = dict(node)
    kinds = _types(node)
    if "$ref" in node and (type(node["$ref"]) is not str or not node["$ref"].startswith("#")):
        raise _NotStrict
    if "properties" in node or "object" in kinds:
        _object(node, out, depth)
    if "items" in node:
        out["items"] = _node(node["items"], depth + 1)
    if "anyOf" in node:
        if type(node["anyOf"]) is not list or not node["anyOf"]:
            raise _NotStrict
        out["anyOf"] = [_node(branch, depth + 1) for branch in node["anyOf"]]
    for defs in ("$defs", "definitions"):
        if defs in node:
            if type(node[defs]) is not dict:
                raise _NotStrict
            out[defs] = {name: _node(sub, depth + 1) for name, sub in node[defs].items()}
    return out


def _types(node: dict[str, Any]) -> set[str]:
    declared = node.get("type")
    if declared is None:
        return set()
    kinds = {declared} if type(declared) is str else declared
    if type(kinds) not in (set, list) or not kinds or not all(k in _TYPES for k in kinds):
        raise _NotStrict
    return set(kinds)


def _object(node: dict[str, Any], out: dict[str, Any], depth: int) -> None:
    extra = node.get("additionalProperties", False)
    if extra is not False:
        raise _NotStrict
    out["additionalProperties"] = False
    properties = node.get("properties", {})
    required = node.get("required", [])
    if type(properties) is not dict or type(required) is not list:
        raise _NotStrict
    out["properties"] = {name: _node(sub, depth + 1) for name, sub in properties.items()}
    for name, sub in properties.items():
        if name not in required and not _admits_null(sub):
            raise _NotStrict
    out["required"] = list(properties)


def _admits_null(node: Any) -> bool:
    if type(node) is not dict:
        return False
    for fixed in ("enum", "const"):
        if fixed in node and None not in (node[fixed] if fixed == "enum" else [node[fixed]]):
            return False
    declared = node.get("type")
    if declared == "null" or (type(declared) is list and "null" in declared):
        return True
    if "anyOf" in node and type(node["anyOf"]) is list:
        return any(_admits_null(branch) for branch in node["anyOf"])
    return False
