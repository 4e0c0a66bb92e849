"""Rendering message templates over JSON values (docs/contracts.md).

Templates are data, never code: an expression can only read JSON values by key or index and
compare them, so a contract cannot reach Python objects, attributes or ``eval``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runport.contracts import ContentPart, Diagnostic, ErrorCode, TextPart
from runport.core._contract import (
    AndExpr,
    EqualsExpr,
    Expression,
    FileNode,
    Filter,
    ForEachNode,
    ImageNode,
    InterpolateNode,
    LiteralExpr,
    Node,
    NotExpr,
    OrExpr,
    RefExpr,
    TextNode,
    WhenNode,
    out_of_place,
)

ROOTS = ("inputs", "context")


class RenderError(Exception):
    """A template met a value it cannot render; carries the node's pointer for the diagnostic."""

    def __init__(self, code: ErrorCode, pointer: str, message: str) -> None:
        super().__init__(message)
        self.diagnostic = Diagnostic(code=code, json_pointer=pointer, message=message)


def compact_json(value: Any) -> str:
    """Compact JSON with sorted keys: the one spelling a value has in a rendered prompt."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def render_value(value: Any) -> str:
    """Strings as they are, null as nothing, everything else as compact sorted JSON text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return compact_json(value)


def is_truthy(value: Any) -> bool:
    """JSON truthiness: null, false, "", 0, 0.0, [] and {} are false, everything else true.

    On JSON data this is exactly Python's ``bool``; spelled out because it is the contract.
    """
    if value is None or value is False:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str | list | dict):
        return len(value) > 0
    return True


def json_equal(left: Any, right: Any) -> bool:
    """Strict JSON equality.

    A boolean equals only the same boolean (``true`` ≠ ``1``, ``false`` ≠ ``0``); numbers
    compare by value whether written as integers or not (``1`` = ``1.0``, as JSON Schema's
    ``const`` and ``enum`` do); strings compare exactly; ``null`` equals only ``null``; arrays
    equal element-wise in order and objects key-by-key, under the same rules.
    """
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, str) and isinstance(right, str):
        return left == right
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return False


def apply_filter(value: Any, name: Filter) -> str:
    """``trim``/``lower``/``upper`` act on the rendered text; ``json`` encodes the value itself,
    which after a text filter is that text."""
    if name == "json":
        return compact_json(value)
    text = render_value(value)
    if name == "trim":
        return text.strip()
    if name == "lower":
        return text.lower()
    return text.upper()


class Scope:
    """The values a template reads: the two roots and the ``for_each`` items bound so far."""

    def __init__(
        self,
        inputs: Mapping[str, Any],
        context: Mapping[str, Any],
        items: Mapping[str, Any] | None = None,
    ) -> None:
        self._roots: dict[str, Mapping[str, Any]] = {"inputs": inputs, "context": context}
        self._items: dict[str, Any] = dict(items or {})

    def bind(self, name: str, value: Any) -> Scope:
        return Scope(self._roots["inputs"], self._roots["context"], {**self._items, name: value})

    def resolve(self, path: str, pointer: str) -> Any:
        """The value at a dotted path; a missing key or index reads as null.

        A ref into an optional value that was not given, or past the end of a list, is null
        (renders as nothing) rather than an error: the schema, not the template, says what
        must be present.
        """
        parts = path.split(".")
        head = parts[0]
        if head in self._items:
            value: Any = self._items[head]
            rest = parts[1:]
        elif head in ROOTS and len(parts) >= 2:
            value = self._roots[head]
            rest = parts[1:]
        else:
            raise RenderError(
                ErrorCode.CONTRACT_INVALID, pointer, f"reference {path!r} names nothing in scope"
            )
        return walk(value, rest)


def walk(value: Any, rest: Sequence[str]) -> Any:
    """The value ``rest`` (keys and indexes) leads to from ``value``; null where it leads
    nowhere."""
    for part in rest:
        if type(value) is dict or isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(value, list) and part.isascii() and part.isdigit():
            index = int(part)
            value = value[index] if index < len(value) else None
        else:
            return None
    return value


def evaluate(expr: Expression, scope: Scope, pointer: str) -> Any:
    """The JSON value of an expression; operators give booleans and short-circuit."""
    if isinstance(expr, RefExpr):
        return scope.resolve(expr.path, f"{pointer}/path")
    if isinstance(expr, LiteralExpr):
        return expr.value
    if isinstance(expr, EqualsExpr):
        return json_equal(
            evaluate(expr.left, scope, f"{pointer}/left"),
            evaluate(expr.right, scope, f"{pointer}/right"),
        )
    if isinstance(expr, NotExpr):
        return not is_truthy(evaluate(expr.expr, scope, f"{pointer}/expr"))
    if isinstance(expr, AndExpr):
        return all(
            is_truthy(evaluate(operand, scope, f"{pointer}/exprs/{index}"))
            for index, operand in enumerate(expr.exprs)
        )
    if isinstance(expr, OrExpr):
        return any(
            is_truthy(evaluate(operand, scope, f"{pointer}/exprs/{index}"))
            for index, operand in enumerate(expr.exprs)
        )
    raise AssertionError(f"unhandled expression {expr!r}")  # pragma: no cover - closed union


def render_nodes(
    nodes: Sequence[Node], scope: Scope, pointer: str, errors: list[Diagnostic]
) -> str:
    """Concatenate the rendering of ``nodes``.

    A node that cannot render adds a diagnostic to ``errors`` and contributes nothing, so one
    pass reports every such node; the caller discards the text when ``errors`` is not empty.
    """
    out: list[str] = []
    for index, node in enumerate(nodes):
        at = f"{pointer}/{index}"
        try:
            out.append(_render_node(node, scope, at, errors))
        except RenderError as error:
            errors.append(error.diagnostic)
    return "".join(out)


def render_content(
    nodes: Sequence[Node],
    scope: Scope,
    pointer: str,
    errors: list[Diagnostic],
    placed: Callable[[str], ContentPart | None],
) -> str | list[ContentPart]:
    """A message content that holds ``image``/``file`` nodes or cache breakpoints: the text
    between them, and the part each places (``placed(ref path)``; ``None``, nothing, for a
    value not given). A node marked ``cache: true`` ends a part of its own, which carries the
    breakpoint: what the message holds up to and including that node (a node that renders
    nothing marks the part before it; with nothing before it in the message, the breakpoint
    has no part to mark and is left out). With no part placed and no breakpoint the content
    is the joined text, the very string ``render_nodes`` gives."""
    pieces: list[str | ContentPart] = []
    marks: dict[int, str | None] = {}  # piece index -> the breakpoint's ttl
    open_text = False  # the last piece is text the next text joins
    for index, node in enumerate(nodes):
        if isinstance(node, ImageNode | FileNode):
            part = placed(node.source.path)
            if part is not None:
                pieces.append(part)
                open_text = False
        else:
            try:
                text = _render_node(node, scope, f"{pointer}/{index}", errors)
            except RenderError as error:
                errors.append(error.diagnostic)
                text = ""
            if text and open_text:
                pieces[-1] += text  # type: ignore[operator]
            elif text:
                pieces.append(text)
                open_text = True
        if node.cache and pieces:
            marks[len(pieces) - 1] = node.cache_ttl
            open_text = False
    if not marks and all(type(piece) is str for piece in pieces):
        return "".join(piece for piece in pieces if type(piece) is str)
    return [_marked(piece, index, marks) for index, piece in enumerate(pieces)]


def _marked(piece: str | ContentPart, index: int, marks: dict[int, str | None]) -> ContentPart:
    part = TextPart(text=piece) if isinstance(piece, str) else piece
    if index not in marks:
        return part
    return part.model_copy(update={"cache": True, "cache_ttl": marks[index]})


def _render_node(node: Node, scope: Scope, pointer: str, errors: list[Diagnostic]) -> str:
    if isinstance(node, ImageNode | FileNode):
        raise RenderError(ErrorCode.CONTRACT_INVALID, pointer, out_of_place(node))
    if isinstance(node, TextNode):
        return node.value
    if isinstance(node, InterpolateNode):
        value = evaluate(node.expression, scope, f"{pointer}/expression")
        for name in node.filters:
            value = apply_filter(value, name)
        return render_value(value)
    if isinstance(node, WhenNode):
        if is_truthy(evaluate(node.condition, scope, f"{pointer}/condition")):
            return render_nodes(node.then, scope, f"{pointer}/then", errors)
        return render_nodes(node.otherwise, scope, f"{pointer}/else", errors)
    if isinstance(node, ForEachNode):
        collection = evaluate(node.collection, scope, f"{pointer}/collection")
        if collection is None:
            return ""
        if not isinstance(collection, list):
            kind = type(collection).__name__
            if isinstance(collection, Mapping):
                kind = "an object"
            elif isinstance(collection, str):
                kind = "a string"
            elif isinstance(collection, bool):
                kind = "a boolean"
            elif isinstance(collection, int | float):
                kind = "a number"
            raise RenderError(
                ErrorCode.VALUE_SCHEMA,
                f"{pointer}/collection",
                f"for_each collection is {kind}, not an array",
            )
        return node.separator.join(
            render_nodes(node.body, scope.bind(node.item, item), f"{pointer}/body", errors)
            for item in collection
        )
    raise AssertionError(f"unhandled node {node!r}")  # pragma: no cover - closed union
