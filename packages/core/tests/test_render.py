from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from runport.contracts import Diagnostic, ErrorCode
from runport.core._contract import Expression, Node
from runport.core._render import (
    Scope,
    evaluate,
    is_truthy,
    json_equal,
    render_nodes,
    render_value,
)

NODES: TypeAdapter[list[Node]] = TypeAdapter(list[Node])
EXPRESSION: TypeAdapter[Expression] = TypeAdapter(Expression)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


def render(
    nodes: list[dict[str, Any]],
    inputs: dict[str, Any] | None = None,
    context: dict[str, Any] | None = None,
) -> str:
    errors: list[Diagnostic] = []
    text = render_nodes(
        NODES.validate_python(nodes), Scope(inputs or {}, context or {}), "/c", errors
    )
    assert errors == []
    return text


def render_errors(nodes: list[dict[str, Any]], inputs: dict[str, Any]) -> list[Diagnostic]:
    errors: list[Diagnostic] = []
    render_nodes(NODES.validate_python(nodes), Scope(inputs, {}), "/c", errors)
    return errors


def value(expression: dict[str, Any], inputs: dict[str, Any] | None = None) -> Any:
    return evaluate(EXPRESSION.validate_python(expression), Scope(inputs or {}, {}), "/e")


def ref(path: str) -> dict[str, Any]:
    return {"kind": "ref", "path": path}


def lit(v: Any) -> dict[str, Any]:
    return {"kind": "literal", "value": v}


def show(expression: dict[str, Any], *filters: str) -> dict[str, Any]:
    return {"kind": "interpolate", "expression": expression, "filters": list(filters)}


def text(v: str) -> dict[str, Any]:
    return {"kind": "text", "value": v}


# Values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given_value", "rendered"),
    [
        ("plain", "plain"),
        ("  spaced\n", "  spaced\n"),
        ("", ""),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (42, "42"),
        (1.5, "1.5"),
        (1.0, "1.0"),
        (-2.25e-7, "-2.25e-07"),
        (None, ""),
        ([], "[]"),
        ({}, "{}"),
        ({"b": 1, "a": [True, None, "é"]}, '{"a":[true,null,"é"],"b":1}'),
        ([{"z": 1, "y": 2}, "x"], '[{"y":2,"z":1},"x"]'),
    ],
)
def test_value_rendering(given_value: Any, rendered: str) -> None:
    assert render_value(given_value) == rendered
    assert render([show(ref("inputs.v"))], {"v": given_value}) == rendered


def test_absent_optional_value_renders_as_nothing() -> None:
    assert render([text("["), show(ref("inputs.missing")), text("]")]) == "[]"


def test_paths_walk_objects_and_list_indexes() -> None:
    inputs = {"doc": {"parties": [{"name": "Ada"}, {"name": "Bob"}], "n": 3}}

    assert render([show(ref("inputs.doc.parties.1.name"))], inputs) == "Bob"
    assert render([show(ref("inputs.doc.parties.0"))], inputs) == '{"name":"Ada"}'
    assert render([show(ref("inputs.doc.parties.2.name"))], inputs) == ""
    assert render([show(ref("inputs.doc.parties.-1"))], inputs) == ""
    assert render([show(ref("inputs.doc.parties.first"))], inputs) == ""
    assert render([show(ref("inputs.doc.n.digits"))], inputs) == ""
    assert render([show(ref("inputs.doc.absent.deeper"))], inputs) == ""


def test_context_values_render() -> None:
    assert render([show(ref("context.tone"))], {}, {"tone": "dry"}) == "dry"


def test_templates_cannot_reach_python_objects_or_evaluate_text() -> None:
    inputs = {"s": "{{ 7 * 7 }} ${x} %(y)s", "d": {"a": 1}}

    assert render([show(ref("inputs.s"))], inputs) == "{{ 7 * 7 }} ${x} %(y)s"
    assert render([show(ref("inputs.d.__class__"))], inputs) == ""
    assert render([show(ref("inputs.d.keys"))], inputs) == ""
    assert render([show(ref("inputs.s.upper"))], inputs) == ""


# Filters --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given_value", "filters", "rendered"),
    [
        ("  Mixed Case \n", ["trim"], "Mixed Case"),
        ("Mixed Case", ["lower"], "mixed case"),
        ("Mixed Case", ["upper"], "MIXED CASE"),
        ("straße", ["upper"], "STRASSE"),
        ({"b": [1, 2], "a": "é"}, ["json"], '{"a":"é","b":[1,2]}'),
        ('quote"d', ["json"], '"quote\\"d"'),
        (None, ["json"], "null"),
        (True, ["json"], "true"),
        (12, ["trim"], "12"),
        (True, ["upper"], "TRUE"),
        (None, ["trim"], ""),
        ({"k": "V"}, ["lower"], '{"k":"v"}'),
        ("  Padded  ", ["trim", "json"], '"Padded"'),
        ({"k": "v"}, ["json", "upper"], '{"K":"V"}'),
        ({"k": "v"}, ["json", "json"], '"{\\"k\\":\\"v\\"}"'),
        ("  A b  ", ["trim", "lower", "upper"], "A B"),
        ("x", [], "x"),
    ],
)
def test_filters_apply_in_order(given_value: Any, filters: list[str], rendered: str) -> None:
    assert render([show(ref("inputs.v"), *filters)], {"v": given_value}) == rendered


# Control nodes --------------------------------------------------------------------------------


def test_when_picks_then_or_else() -> None:
    node = {
        "kind": "when",
        "condition": ref("inputs.flag"),
        "then": [text("yes "), show(ref("inputs.name"))],
        "else": [text("no")],
    }

    assert render([node], {"flag": True, "name": "Ada"}) == "yes Ada"
    assert render([node], {"flag": False, "name": "Ada"}) == "no"
    assert render([node], {}) == "no"


def test_when_without_else_renders_nothing_when_false() -> None:
    node = {"kind": "when", "condition": lit(0), "then": [text("shown")]}

    assert render([text("a"), node, text("b")]) == "ab"


def test_for_each_joins_iterations_with_separator() -> None:
    node = {
        "kind": "for_each",
        "collection": ref("inputs.people"),
        "item": "person",
        "separator": ", ",
        "body": [show(ref("person.name"), "trim"), text("="), show(ref("person.age"))],
    }
    people = [{"name": " Ada ", "age": 36}, {"name": "Bob", "age": 1.5}, {"name": "Cy"}]

    assert render([node], {"people": people}) == "Ada=36, Bob=1.5, Cy="
    assert render([node], {"people": []}) == ""
    assert render([node], {"people": None}) == ""
    assert render([node], {}) == ""


def test_nested_loops_see_outer_items_and_inner_shadows() -> None:
    node = {
        "kind": "for_each",
        "collection": ref("inputs.rows"),
        "item": "row",
        "separator": "|",
        "body": [
            {
                "kind": "for_each",
                "collection": ref("row.cells"),
                "item": "cell",
                "separator": ",",
                "body": [show(ref("row.id")), text(":"), show(ref("cell"))],
            },
            {
                "kind": "for_each",
                "collection": ref("row.cells"),
                "item": "row",
                "body": [show(ref("row"))],
            },
        ],
    }
    rows = [{"id": "a", "cells": [1, 2]}, {"id": "b", "cells": [True]}]

    assert render([node], {"rows": rows}) == "a:1,a:212|b:truetrue"


@pytest.mark.parametrize(
    ("collection", "kind"),
    [("text", "a string"), ({"a": 1}, "an object"), (3, "a number"), (True, "a boolean")],
)
def test_for_each_over_a_non_list_is_a_render_error(collection: Any, kind: str) -> None:
    nodes = [
        text("x"),
        {"kind": "for_each", "collection": ref("inputs.c"), "item": "i", "body": [text("-")]},
        {
            "kind": "when",
            "condition": lit(True),
            "then": [{"kind": "for_each", "collection": ref("inputs.c"), "item": "j", "body": []}],
        },
    ]

    errors = render_errors(nodes, {"c": collection})

    assert [(e.code, e.json_pointer, e.message) for e in errors] == [
        (ErrorCode.VALUE_SCHEMA, "/c/1/collection", f"for_each collection is {kind}, not an array"),
        (
            ErrorCode.VALUE_SCHEMA,
            "/c/2/then/0/collection",
            f"for_each collection is {kind}, not an array",
        ),
    ]


def test_ref_to_nothing_in_scope_is_a_render_error() -> None:
    errors = render_errors([show(ref("ghost.name")), show(ref("inputs"))], {})

    assert [(e.code, e.json_pointer) for e in errors] == [
        (ErrorCode.CONTRACT_INVALID, "/c/0/expression/path"),
        (ErrorCode.CONTRACT_INVALID, "/c/1/expression/path"),
    ]


# Expressions ----------------------------------------------------------------------------------


def test_literal_and_ref() -> None:
    assert value(lit({"a": [1, None]})) == {"a": [1, None]}
    assert value(ref("inputs.a.b"), {"a": {"b": "c"}}) == "c"
    assert value(ref("inputs.a"), {}) is None


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (True, 1, False),
        (False, 0, False),
        (1, True, False),
        (True, True, True),
        (False, False, True),
        (1, 1.0, True),
        (0, -0.0, True),
        (2**53 + 1, float(2**53), False),
        ("1", 1, False),
        ("a", "a", True),
        ("a", "A", False),
        (None, None, True),
        (None, "", False),
        (None, False, False),
        (None, 0, False),
        ([], [], True),
        ([1, True], [1.0, True], True),
        ([1, True], [1, 1], False),
        ([1, 2], [2, 1], False),
        ([1], [1, 1], False),
        ({"a": 1, "b": [None]}, {"b": [None], "a": 1.0}, True),
        ({"a": True}, {"a": 1}, False),
        ({"a": 1}, {"a": 1, "b": 1}, False),
        ({}, [], False),
        ("[]", [], False),
    ],
)
def test_equals_is_strict_json_equality(left: Any, right: Any, equal: bool) -> None:
    assert json_equal(left, right) is equal
    assert json_equal(right, left) is equal
    assert value({"kind": "equals", "left": lit(left), "right": lit(right)}) is equal


@pytest.mark.parametrize(
    ("given_value", "truthy"),
    [
        (None, False),
        (False, False),
        ("", False),
        (0, False),
        (0.0, False),
        (-0.0, False),
        ([], False),
        ({}, False),
        (True, True),
        ("0", True),
        ("false", True),
        (" ", True),
        (1, True),
        (-1, True),
        (0.001, True),
        ([None], True),
        ([False], True),
        ({"a": None}, True),
    ],
)
def test_truthiness_table(given_value: Any, truthy: bool) -> None:
    assert is_truthy(given_value) is truthy
    assert value({"kind": "not", "expr": lit(given_value)}) is (not truthy)
    node = {"kind": "when", "condition": lit(given_value), "then": [text("T")], "else": [text("F")]}
    assert render([node]) == ("T" if truthy else "F")


@pytest.mark.parametrize(
    ("operands", "conjunction", "disjunction"),
    [
        ([True], True, True),
        ([False], False, False),
        ([1, "x", [0]], True, True),
        ([1, "", [0]], False, True),
        ([0, "", None], False, False),
        ([{}, {"a": 1}], False, True),
    ],
)
def test_and_or_combine_truthiness_into_booleans(
    operands: list[Any], conjunction: bool, disjunction: bool
) -> None:
    exprs = [lit(o) for o in operands]

    assert value({"kind": "and", "exprs": exprs}) is conjunction
    assert value({"kind": "or", "exprs": exprs}) is disjunction


def test_operators_render_as_json_booleans() -> None:
    nodes = [
        show({"kind": "equals", "left": ref("inputs.n"), "right": lit(2)}),
        text(" "),
        show({"kind": "not", "expr": ref("inputs.n")}),
        text(" "),
        show({"kind": "and", "exprs": [ref("inputs.n"), lit("x")]}, "json"),
        text(" "),
        show({"kind": "or", "exprs": [lit(None), lit(0)]}, "upper"),
    ]

    assert render(nodes, {"n": 2.0}) == "true false true FALSE"


def test_condition_combining_every_operator() -> None:
    condition = {
        "kind": "or",
        "exprs": [
            {
                "kind": "and",
                "exprs": [
                    {"kind": "equals", "left": ref("inputs.status"), "right": lit("active")},
                    {"kind": "not", "expr": ref("inputs.archived")},
                ],
            },
            {"kind": "equals", "left": ref("context.override"), "right": lit(True)},
        ],
    }
    node = {"kind": "when", "condition": condition, "then": [text("on")], "else": [text("off")]}

    assert render([node], {"status": "active"}) == "on"
    assert render([node], {"status": "active", "archived": True}) == "off"
    assert render([node], {"status": "active", "archived": True}, {"override": True}) == "on"
    assert render([node], {"status": "active", "archived": True}, {"override": 1}) == "off"


# Properties -----------------------------------------------------------------------------------


@settings(deadline=None)
@given(prefix=st.text(), s=st.text())
def test_text_then_interpolated_string_is_concatenation(prefix: str, s: str) -> None:
    assert render([text(prefix), show(ref("inputs.s"))], {"s": s}) == prefix + s


@settings(deadline=None)
@given(v=json_values)
def test_json_filter_parses_back_to_the_value(v: Any) -> None:
    rendered = render([show(ref("inputs.v"), "json")], {"v": v})

    assert json_equal(json.loads(rendered), v)
    assert json.loads(rendered) == v


@settings(deadline=None)
@given(v=json_values)
def test_every_json_value_equals_itself_and_renders_deterministically(v: Any) -> None:
    assert json_equal(v, v)
    assert render_value(v) == render_value(json.loads(json.dumps(v)))
    if not isinstance(v, str) and v is not None:
        assert json.loads(render_value(v)) == v
