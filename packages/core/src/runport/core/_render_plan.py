"""A template made once per contract into a function of the two roots (docs/contracts.md).

``render_nodes`` walks the node models on every call and keeps a JSON pointer at each step for
the diagnostics it may owe. A template with no ``for_each`` and whose refs all name a root can
owe none: every ref reads a value or null, and every value renders. Such a template is turned
once into nested functions that give the very text ``render_nodes`` gives, with no pointers;
any other template is left to ``render_nodes``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runport.core import _contract as model
from runport.core._render import ROOTS, apply_filter, is_truthy, json_equal, render_value, walk

Roots = Mapping[str, Any]
Rendered = Callable[[Roots, Roots], str]
_Value = Callable[[Roots, Roots], Any]


def planned_template(nodes: Sequence[model.Node]) -> Rendered | None:
    """``render_nodes(nodes, …)`` as a function of ``(inputs, context)``, or ``None`` when the
    template needs ``render_nodes`` (a ``for_each``, or a ref that names nothing)."""
    pieces: list[str | Rendered] = []
    for node in nodes:
        piece = _node(node)
        if piece is None:
            return None
        pieces.append(piece)
    if all(type(piece) is str for piece in pieces):
        text = "".join(piece for piece in pieces if type(piece) is str)
        return lambda inputs, context: text
    return lambda inputs, context: "".join(
        piece if type(piece) is str else piece(inputs, context)  # type: ignore[operator]
        for piece in pieces
    )


def _node(node: model.Node) -> str | Rendered | None:
    if isinstance(node, model.TextNode):
        return node.value
    if isinstance(node, model.InterpolateNode):
        value = _expression(node.expression)
        if value is None:
            return None
        filters = tuple(node.filters)
        return _interpolate(value, filters)
    if isinstance(node, model.WhenNode):
        condition = _expression(node.condition)
        then = planned_template(node.then)
        otherwise = planned_template(node.otherwise)
        if condition is None or then is None or otherwise is None:
            return None
        return lambda i, c: (then if is_truthy(condition(i, c)) else otherwise)(i, c)
    return None


def _interpolate(value: _Value, filters: tuple[Any, ...]) -> Rendered:
    if not filters:
        return lambda i, c: render_value(value(i, c))

    def interpolate(i: Roots, c: Roots) -> str:
        found = value(i, c)
        for name in filters:
            found = apply_filter(found, name)
        return render_value(found)

    return interpolate


def _expression(expr: model.Expression) -> _Value | None:
    if isinstance(expr, model.RefExpr):
        parts = expr.path.split(".")
        if parts[0] not in ROOTS or len(parts) < 2:
            return None
        rest = tuple(parts[1:])
        if parts[0] == "inputs":
            return lambda i, c: walk(i, rest)
        return lambda i, c: walk(c, rest)
    if isinstance(expr, model.LiteralExpr):
        literal = expr.value
        return lambda i, c: literal
    if isinstance(expr, model.EqualsExpr):
        left, right = _expression(expr.left), _expression(expr.right)
        if left is None or right is None:
            return None
        return lambda i, c: json_equal(left(i, c), right(i, c))
    if isinstance(expr, model.NotExpr):
        operand = _expression(expr.expr)
        if operand is None:
            return None
        return lambda i, c: not is_truthy(operand(i, c))
    if isinstance(expr, model.AndExpr | model.OrExpr):
        operands = [_expression(each) for each in expr.exprs]
        if any(each is None for each in operands):
            return None
        known = tuple(each for each in operands if each is not None)
        if isinstance(expr, model.AndExpr):
            return lambda i, c: all(is_truthy(each(i, c)) for each in known)
        return lambda i, c: any(is_truthy(each(i, c)) for each in known)
    return None
