"""Message content written as a template string (docs/python-contracts.md)."""

from __future__ import annotations

import re
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import ErrorCode, fingerprint
from runport.core import ContractError, compile_contract, parse_contract
from runport.core._contract import Filter
from runport.core._template import FILTERS, parse_template

NAMES = ("a", "b", "first_name")


def contract(*contents: Any, api_version: str = "runport/v1alpha1") -> dict[str, Any]:
    return {
        "api_version": api_version,
        "id": "t",
        "version": "1.0.0",
        "inputs": {name: {"schema": {}} for name in NAMES},
        "context": {"c": {"schema": {}}},
        "messages": [{"role": "user", "content": content} for content in contents],
        "output_schema": {"type": "string"},
    }


def refused(data: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    with pytest.raises(ContractError) as caught:
        parse_contract(data)
    return [(d.code, d.json_pointer, d.message) for d in caught.value.diagnostics]


def ref(path: str, *filters: str) -> dict[str, Any]:
    return {
        "kind": "interpolate",
        "expression": {"kind": "ref", "path": path},
        "filters": list(filters),
    }


def test_the_parser_knows_exactly_the_filters_the_model_accepts() -> None:
    assert get_args(Filter) == FILTERS


def test_a_string_is_read_into_the_nodes_the_structured_form_spells_out() -> None:
    text = "Dear {{ inputs.first_name | trim | upper }},\n{{context.c.0}} and {{ inputs.a }}."
    structured = [
        {"kind": "text", "value": "Dear "},
        ref("inputs.first_name", "trim", "upper"),
        {"kind": "text", "value": ",\n"},
        ref("context.c.0"),
        {"kind": "text", "value": " and "},
        ref("inputs.a"),
        {"kind": "text", "value": "."},
    ]
    assert parse_template(text) == (structured, [])
    assert parse_contract(contract(text)) == parse_contract(contract(structured))


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ('{{ "{{" }} inputs.a }}', "{{ inputs.a }}"),
        ("{{ '{{' }}", "{{"),
        ('{{"{%"}} raw {{ "%}" }}', "{% raw %}"),
        ('{{ "}}" }}', "}}"),
        ("a }} b { c } {", "a }} b { c } {"),
        ("", ""),
    ],
)
def test_literal_braces(text: str, rendered: str) -> None:
    compiled = compile_contract(parse_contract(contract(text)), inputs={})
    assert compiled.messages[0].content == rendered


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("Hello {{ inputs.a", "'{{' at character 7 is never closed"),
        ("{{ inputs.a {{ inputs.b }}", "is not closed before the next '{{'"),
        ("{% if inputs.a %}x", "'{%' at character 1: statements and comments"),
        ("{# note #}", "'{#' at character 1"),
        ("{{ inputs.a | title }}", "unknown filter 'title' (known: trim, lower, upper, json)"),
        ("{{ inputs.a | }}", "unknown filter ''"),
        ("{{ city }}", "'city' is not a reference"),
        ("{{ inputs }}", "'inputs' is not a reference"),
        ("{{ inputs.a.__class__() }}", "is not a dotted path"),
        ("{{ inputs.a + 1 }}", "is not a dotted path"),
        ("{{ inputs..a }}", "is not a dotted path"),
        ('{{ "x" | upper }}', "a quoted literal takes no filters"),
        ("{{ }}", "a placeholder needs a reference"),
        ("{{- inputs.a }}", "'- inputs.a' is not a reference"),
    ],
)
def test_bad_syntax_is_a_contract_error_at_the_string(text: str, fragment: str) -> None:
    problems = refused(contract("fine {{ inputs.a }}", text))
    assert len(problems) == 1
    code, pointer, message = problems[0]
    assert (code, pointer) == (ErrorCode.CONTRACT_INVALID, "/messages/1/content")
    assert fragment in message


def test_every_bad_placeholder_and_undeclared_ref_is_listed_at_once() -> None:
    problems = refused(
        contract("{{ inputs.a | nope }} {{ inputs.zz }} {{ context.c | upper }} {{ x.y }}")
    )
    assert [(pointer, message.split(":")[0]) for _, pointer, message in problems] == [
        ("/messages/0/content", "'{{ inputs.a | nope }}' at character 1"),
        ("/messages/0/content", "'{{ x.y }}' at character 63"),
        ("/messages/0/content", "reference 'inputs.zz' names no declared input (declared"),
    ]


def test_strings_inside_a_content_list_and_in_branches_keep_the_author_s_pointers() -> None:
    content = [
        "Topic {{ inputs.a }} and {{ inputs.b }}",
        {
            "kind": "when",
            "condition": {"kind": "ref", "path": "inputs.nope"},
            "then": ["x {{ inputs.zz }} y", ref("inputs.yy")],
            "else": [{"kind": "text", "value": 3}],
        },
        ref("inputs.ww"),
    ]
    problems = refused(contract(content))
    assert [(pointer, message.split(" (")[0]) for _, pointer, message in problems] == [
        ("/messages/0/content/1/else/0/value", "Input should be a valid string"),
    ]
    content[1]["else"] = []
    problems = refused(contract(content))
    assert [pointer for _, pointer, _ in problems] == [
        "/messages/0/content/1/condition/path",
        "/messages/0/content/1/then/0",
        "/messages/0/content/1/then/1/expression/path",
        "/messages/0/content/2/expression/path",
    ]


def test_a_for_each_body_may_hold_strings_but_they_cannot_name_the_item() -> None:
    loop = {
        "kind": "for_each",
        "collection": {"kind": "ref", "path": "inputs.a"},
        "item": "x",
        "body": ["- {{ inputs.b }}\n", ref("x")],
    }
    compiled = compile_contract(parse_contract(contract([loop])), inputs={"a": [1, 2], "b": "B"})
    assert compiled.messages[0].content == "- B\n1- B\n2"
    loop["body"] = ["{{ x }}"]
    assert [pointer for _, pointer, _ in refused(contract([loop]))] == [
        "/messages/0/content/0/body/0"
    ]


def test_api_version_errors_name_runport_s_format_first() -> None:
    ((code, pointer, message),) = refused(contract("hi", api_version="templiqx/v2"))
    assert (code, pointer) == (ErrorCode.CONTRACT_INVALID, "/api_version")
    assert message.index("'runport/v1alpha1'") < message.index("templiqx/v1alpha1")
    assert "read unchanged" in message
    assert parse_contract(contract("hi", api_version="templiqx/v1alpha1")).api_version == (
        "templiqx/v1alpha1"
    )


# The property: the string form and the structured form compile alike -------------------------

_KEY = st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True)
_SPACE = st.sampled_from(["", " ", "  ", "\t", "\n"])
_TEXT = st.text(alphabet=st.sampled_from("ab {}%#|\"'\n"), max_size=12) | st.text(max_size=8)


def _escape(text: str) -> str:
    """Each ``{`` that would open a tag (or end the text, where a placeholder may follow)."""
    return re.sub(r"\{(?=[{%#]|$)", '{{ "{" }}', text)


@st.composite
def _segments(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    string: list[str] = []
    nodes: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            text = draw(_TEXT)
            string.append(_escape(text))
            nodes.append({"kind": "text", "value": text})
            continue
        root, name = draw(st.sampled_from([*(("inputs", n) for n in NAMES), ("context", "c")]))
        path = ".".join([root, name, *draw(st.lists(_KEY, max_size=2))])
        filters = draw(st.lists(st.sampled_from(FILTERS), max_size=3))
        pad = [draw(_SPACE) for _ in range(2 + 2 * len(filters))]
        inner = (
            pad[0]
            + path
            + "".join(f"{pad[2 * i + 1]}|{pad[2 * i + 2]}{f}" for i, f in enumerate(filters))
        )
        string.append("{{" + inner + pad[-1] + "}}")
        nodes.append(ref(path, *filters))
    return "".join(string), nodes


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEY, inner, max_size=3),
    max_leaves=6,
)


@settings(deadline=None)
@given(
    template=_segments(),
    values=st.fixed_dictionaries({}, optional=dict.fromkeys(NAMES, _JSON)),
    context=st.fixed_dictionaries({}, optional={"c": _JSON}),
)
def test_string_and_structured_forms_compile_to_the_same_interaction(
    template: tuple[str, list[dict[str, Any]]], values: dict[str, Any], context: dict[str, Any]
) -> None:
    string, nodes = template
    from_string = compile_contract(parse_contract(contract(string)), inputs=values, context=context)
    structured = compile_contract(parse_contract(contract(nodes)), inputs=values, context=context)
    assert from_string == structured
    assert fingerprint(from_string) == fingerprint(structured)
