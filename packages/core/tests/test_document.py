"""The bounded document reader (docs/limits.md): strict JSON and YAML, linear in the size of
the text, every refusal a ``DocumentError`` with a stable code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runport.contracts import MAX_INT_DIGITS, MAX_JSON_DEPTH, ErrorCode
from runport.core import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENT_NODES,
    MAX_SCALAR_BYTES,
    DocumentError,
    load_document,
    parse_document,
)
from runport.core._document import PythonYamlLoader, _decode_yaml, _Refused


def refused(text: str) -> DocumentError:
    with pytest.raises(DocumentError) as caught:
        parse_document(text, source="doc.yaml")
    assert caught.value.code == "TQX_DATA_INVALID"
    assert caught.value.source == "doc.yaml"
    assert str(caught.value) == f"doc.yaml: {caught.value.message}"
    return caught.value


def alias_ladder(levels: int, width: int = 10) -> str:
    """Each level is a list of ``width`` aliases to the level below: tiny text, huge value."""
    lines = ["l0: &l0 [" + ", ".join(["x"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_json_and_yaml_give_the_same_json_data() -> None:
    from_json = parse_document('{"a": [1, 2.5, true, null, "x"], "b": {"c": "2024-01-01"}}')
    from_yaml = parse_document("a: [1, 2.5, true, null, x]\nb:\n  c: 2024-01-01\n")

    assert (
        from_json
        == from_yaml
        == {
            "a": [1, 2.5, True, None, "x"],
            "b": {"c": "2024-01-01"},
        }
    )


def test_json_numbers_are_read_by_json_rules() -> None:
    """YAML 1.1 reads ``1e5`` as text; a document that is JSON is read as JSON first."""
    assert parse_document('{"n": 1e5}') == {"n": 100000.0}


def test_an_empty_document_is_null() -> None:
    assert parse_document("") is None


def test_shared_aliases_are_read_when_within_the_bounds() -> None:
    assert parse_document("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}


def test_merge_keys_are_read() -> None:
    assert parse_document("- &a {k: v}\n- <<: *a\n  j: 2\n") == [{"k": "v"}, {"k": "v", "j": 2}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1, "a": 2}', "invalid JSON: key 'a' appears twice in one mapping"),
        ("a: 1\na: 2\n", "invalid YAML at line 2, column 1: key 'a' appears twice in one mapping"),
        ('{"x": NaN}', "invalid JSON: NaN is not JSON"),
        ('{"x": -Infinity}', "invalid JSON: -Infinity is not JSON"),
        ("x: .nan\n", "not a finite number (JSON has no NaN or infinity) (at /x)"),
        ('{"x": 1e999}', "the JSON holds the number '1e999', too large for a float"),
        ('["\\ud800"]', "text with a lone surrogate at character 0 (not Unicode) (at /0)"),
        (
            '{"\\udfff": 1}',
            "a key is text with a lone surrogate at character 0 (not Unicode) (at /)",
        ),
        ("1: one\n", "the key 1 is not a string (quote it) (at /)"),
        ("yes: 1\n", "the key True is not a string (quote it) (at /)"),
        ("x: !!binary aGVsbG8=\n", "invalid YAML: the tag 'tag:yaml.org,2002:binary' is not JSON"),
        ("x: !!set {a}\n", "invalid YAML: the tag 'tag:yaml.org,2002:set' is not JSON data"),
        ("x: !!int abc\n", "invalid YAML: a value cannot be read"),
        ("x: &a [*a]\n", "invalid YAML: a recursive alias makes the document contain itself"),
        ("[1, 2", "invalid JSON at line 1, column 6: Expecting ',' delimiter"),
        ("a: [1\n", "invalid YAML at line 2, column 1: "),
    ],
)
def test_what_json_cannot_carry_is_refused(text: str, message: str) -> None:
    assert refused(text).message.startswith(message)


def test_a_lone_surrogate_escape_in_yaml_is_refused() -> None:
    """libyaml refuses the escape as it scans; PyYAML's own scanner decodes it and the value
    check refuses it: either way, a coded refusal."""
    assert "Unicode" in refused('x: "\\ud800"\n').message


def test_a_lone_surrogate_anywhere_in_the_text_is_refused() -> None:
    error = refused("# a comment \ud800\nx: 1\n")

    assert error.message == "a lone surrogate at character 12 is not Unicode text"


# ---- bounds ----------------------------------------------------------------------------------


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_bound_is_read() -> None:
    value = parse_document(nested(MAX_JSON_DEPTH))
    for _ in range(MAX_JSON_DEPTH - 1):
        assert isinstance(value, list)
        value = value[0]
    assert value == []


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 100_000])
def test_nesting_past_the_bound_is_refused_in_json(depth: int) -> None:
    """Regression (issue 10, item 4): ~1,000 levels raised RecursionError out of the loaders."""
    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in refused(nested(depth)).message


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 100_000])
def test_nesting_past_the_bound_is_refused_in_yaml(depth: int) -> None:
    """Past 1,000 levels libyaml stops the scan itself; below, composition stops at the bound."""
    message = refused(f"x: {nested(depth)}").message

    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in message or (
        "exceeded maximum nesting depth" in message
    )


def test_depth_built_through_aliases_is_counted() -> None:
    text = "a0: &a0 []\n" + "".join(f"a{n}: &a{n} [*a{n - 1}]\n" for n in range(1, 70))

    assert "nested more than 64 levels deep once its aliases are expanded" in refused(text).message


@pytest.mark.parametrize("levels", [5, 7, 9, 30])
def test_an_alias_ladder_is_refused_without_being_expanded(levels: int) -> None:
    """Regression (issue 10, item 3): the cycle check walked every path through shared aliases
    (10× per level: 7 levels took 48 s, a 400-byte file hours). The graph is now measured once
    per node, so this returns at once at any height; 5 levels (111,110 values) is past the
    node bound."""
    text = alias_ladder(levels)
    assert len(text) < 2_000

    message = refused(text).message

    assert message.startswith(
        f"invalid YAML: more than {MAX_DOCUMENT_NODES:,} values once its aliases are expanded"
    )


def test_an_alias_ladder_within_the_node_bound_is_read() -> None:
    value = parse_document(alias_ladder(4))

    assert isinstance(value, dict)
    assert len(value["l3"]) == 10
    assert value["l3"][9][9][9] == ["x"] * 10


def test_too_many_values_in_json_are_refused() -> None:
    text = "[" + ",".join(["0"] * MAX_DOCUMENT_NODES) + "]"

    assert refused(text).message.startswith(f"more than {MAX_DOCUMENT_NODES:,} values")


def test_too_many_values_in_yaml_stop_composition() -> None:
    text = "".join(f"- {n}\n" for n in range(MAX_DOCUMENT_NODES + 1))

    assert refused(text).message.startswith(
        f"invalid YAML: more than {MAX_DOCUMENT_NODES:,} values"
    )


def test_a_string_past_the_scalar_bound_is_refused() -> None:
    assert parse_document(f'"{"x" * MAX_SCALAR_BYTES}"') == "x" * MAX_SCALAR_BYTES
    message = refused(f'"{"é" * (MAX_SCALAR_BYTES // 2 + 1)}"').message

    assert message == (
        f"a string of {MAX_SCALAR_BYTES + 2:,} bytes (the bound is {MAX_SCALAR_BYTES:,}) (at /)"
    )


@pytest.mark.parametrize(
    "text",
    [
        "1" * (MAX_INT_DIGITS + 1),
        "-" + "1" * (MAX_INT_DIGITS + 1),
        "x: " + "1" * (MAX_INT_DIGITS + 1),
        "x: 0x" + "f" * 3_600,  # fewer hex digits, more than 4,300 decimal ones
    ],
)
def test_integers_past_4300_digits_are_refused(text: str) -> None:
    """Regression (issue 10, item 4): these raised ``ValueError`` out of the loaders."""
    assert f"an integer with more than {MAX_INT_DIGITS} digits" in refused(text).message


def test_integers_of_4300_digits_are_read() -> None:
    assert parse_document("9" * MAX_INT_DIGITS) == 10**MAX_INT_DIGITS - 1


def test_a_document_past_the_size_bound_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (MAX_DOCUMENT_BYTES + 1))

    with pytest.raises(DocumentError) as caught:
        load_document(path)

    assert caught.value.message == f"larger than {MAX_DOCUMENT_BYTES:,} bytes"
    assert caught.value.source == str(path)


# ---- files and codes -------------------------------------------------------------------------


def test_the_caller_names_the_code_of_what_the_text_says(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("x: [1\n", encoding="utf-8")

    with pytest.raises(DocumentError) as caught:
        load_document(path, code=ErrorCode.PARSE_YAML)

    assert caught.value.code == "TQX_PARSE_YAML"


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "cannot read the file: No such file or directory"), (b"\xff", "not UTF-8 text")],
)
def test_a_file_that_cannot_be_read_is_data_invalid(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "f.yaml"
    if content is not None:
        path.write_bytes(content)

    with pytest.raises(DocumentError) as caught:
        load_document(path, code=ErrorCode.PARSE_YAML)

    assert caught.value.code == "TQX_DATA_INVALID"
    assert caught.value.message.startswith(message)


# ---- without libyaml ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a: [1, {b: x}]\nc: &x [1]\nd: *x\n",
        "- &a {k: v}\n- <<: *a\n  j: 2\n",
        "when: 2024-01-01\n",
        alias_ladder(4),
    ],
)
def test_pyyamls_own_scanner_reads_what_libyaml_reads(text: str) -> None:
    """Where PyYAML was built without libyaml, its Python scanner and parser take over under
    the same bounded composer."""
    assert _decode_yaml(text, PythonYamlLoader) == _decode_yaml(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (alias_ladder(9), "more than 100,000 values once its aliases are expanded"),
        ("x: " + nested(200), f"nested more than {MAX_JSON_DEPTH} levels deep"),
        ("x: &a [*a]\n", "a recursive alias makes the document contain itself"),
        ("x: " + "1" * (MAX_INT_DIGITS + 1), f"an integer with more than {MAX_INT_DIGITS} digits"),
        ("x: !!set {a}\n", "the tag 'tag:yaml.org,2002:set' is not JSON data"),
    ],
)
def test_pyyamls_own_scanner_is_bounded_the_same_way(text: str, message: str) -> None:
    with pytest.raises(_Refused, match=re.escape(message)):
        _decode_yaml(text, PythonYamlLoader)
