"""Schemas resolve only within themselves and run patterns on RE2 (docs/limits.md)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from runport.contracts import ErrorCode
from runport.core import (
    ContractError,
    compile_contract,
    load_contract,
    parse_contract,
    schema_errors,
    validate_output,
)


def contract(**fields: Any) -> dict[str, Any]:
    return {
        "api_version": "runport/v1alpha1",
        "id": "c",
        "version": "1.0.0",
        "messages": [{"role": "user", "content": [{"kind": "text", "value": "hi"}]}],
        "output_schema": {"type": "string"},
        **fields,
    }


def problems(data: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    with pytest.raises(ContractError) as caught:
        parse_contract(data)
    return [(d.code, d.json_pointer, d.message) for d in caught.value.diagnostics]


class _Counting(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        body = b'{"const": "FILE-SECRET-42"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback server that would answer any schema request; the test proves none comes."""
    hits: ClassVar[list[str]] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/schema.json", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# ---- references ------------------------------------------------------------------------------


def test_an_http_ref_is_a_contract_error_and_nothing_is_fetched(
    schema_server: tuple[str, list[str]],
) -> None:
    """Regression (issue 10, item 1): jsonschema retrieved what a ``$ref`` named."""
    url, hits = schema_server
    schema = {"type": "object", "properties": {"a": {"$ref": url}}}

    found = problems(contract(output_schema=schema))

    assert found == [
        (
            ErrorCode.OUTPUT_SCHEMA_INVALID,
            "/output_schema",
            f"invalid schema: $ref {url!r} names another document: schemas resolve only "
            "within themselves and nothing is fetched (at schema/properties/a/$ref)",
        )
    ]
    assert validate_output(schema, {"a": "x"})[0].code == ErrorCode.OUTPUT_SCHEMA_INVALID
    assert hits == []


def test_a_file_ref_is_a_contract_error_and_the_file_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"const": "FILE-SECRET-42"}', encoding="utf-8")
    ref = secret.as_uri()
    data = contract(inputs={"x": {"schema": {"$ref": ref}}})

    (found,) = problems(data)

    assert found[:2] == (ErrorCode.CONTRACT_INVALID, "/inputs/x/schema")
    assert "names another document" in found[2]
    assert "FILE-SECRET-42" not in found[2]


@pytest.mark.parametrize(
    "ref", ["other.json", "other.json#/$defs/a", "https://json-schema.org/draft/2020-12/schema"]
)
def test_every_ref_to_another_document_is_refused_in_tool_parameters(ref: str) -> None:
    tool = {"name": "t", "description": "", "parameters": {"$ref": ref}}

    ((code, pointer, message),) = problems(contract(tools=[tool]))

    assert (code, pointer) == (ErrorCode.CONTRACT_INVALID, "/tools/0/parameters")
    assert f"$ref {ref!r} names another document" in message


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"$ref": "#"}, "a $ref leads back to the schema it is in"),
        ({"allOf": [{"$ref": "#"}]}, "a $ref leads back to the schema it is in"),
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                "$ref": "#/$defs/a",
            },
            "a $ref leads back to the schema it is in",
        ),
        ({"x-extra": {"$ref": "#/x-extra"}, "$ref": "#/x-extra"}, "a $ref leads back"),
        ({"$ref": "#/$defs/missing"}, "$ref '#/$defs/missing' points at nothing in this schema"),
        ({"$ref": "#nowhere"}, "$ref '#nowhere' points at nothing in this schema"),
    ],
)
def test_dangling_and_looping_refs_are_contract_errors_at_load(
    schema: dict[str, Any], message: str
) -> None:
    """Regression (issue 10, item 4): these raised RecursionError or referencing's own errors
    at load and at run time."""
    ((code, pointer, text),) = problems(contract(output_schema=schema))

    assert (code, pointer) == (ErrorCode.OUTPUT_SCHEMA_INVALID, "/output_schema")
    assert message in text
    assert schema_errors(schema, "x") == f"{text.removeprefix('invalid schema: ')}"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"next": {"$ref": "#"}}},
        {"$defs": {"s": {"$anchor": "S", "type": "string"}}, "$ref": "#S"},
        {
            "$id": "https://example.test/root",
            "$defs": {"s": {"$id": "https://example.test/s", "type": "string"}},
            "$ref": "https://example.test/s",
        },
        {"$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s"}}},
    ],
)
def test_refs_within_the_schema_resolve(schema: dict[str, Any]) -> None:
    parse_contract(contract(output_schema=schema))


def test_a_recursive_schema_validates_a_value_nested_to_the_bound() -> None:
    schema = {"type": ["object", "string"], "properties": {"a": {"$ref": "#"}}}
    value: Any = "leaf"
    for _ in range(63):
        value = {"a": value}

    assert validate_output(schema, value) == []
    assert [d.json_pointer for d in validate_output(schema, {"a": {"a": 1}})] == ["/a/a"]


# ---- patterns --------------------------------------------------------------------------------


def test_a_catastrophic_pattern_is_answered_at_once() -> None:
    """Regression (issue 10, item 6): ``^(a+)+$`` against forty ``a`` and a ``!`` is about 2**40
    steps for a backtracking engine, which froze validation; RE2 is linear in the string."""
    schema = {"type": "string", "pattern": "^(a+)+$"}

    (problem,) = validate_output(schema, "a" * 40 + "!")

    assert problem.code == ErrorCode.OUTPUT_SCHEMA
    assert validate_output(schema, "a" * 40) == []


def test_pattern_properties_and_additional_properties_run_on_re2() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    hostile = "a" * 40 + "!"

    assert schema_errors(schema, {hostile: 1, "aaa": "x"}) == [
        ("", f"{hostile!r} does not match any of the regexes: '^(a+)+$'"),
        ("/aaa", "'x' is not of type 'integer'"),
    ]


@pytest.mark.parametrize(
    ("where", "pattern"),
    [("pattern", r"(a)\1"), ("pattern", "(?=a)a"), ("patternProperties", "(?<!x)y")],
)
def test_a_pattern_re2_cannot_run_is_a_contract_error_naming_it(where: str, pattern: str) -> None:
    schema: dict[str, Any] = (
        {"type": "string", "pattern": pattern}
        if where == "pattern"
        else {"type": "object", "patternProperties": {pattern: {}}}
    )

    ((code, pointer, message),) = problems(contract(inputs={"x": {"schema": schema}}))

    assert (code, pointer) == (ErrorCode.CONTRACT_INVALID, "/inputs/x/schema")
    assert message.startswith(
        f"invalid schema: pattern {pattern!r} cannot run on the linear-time engine (RE2): "
    )


def test_unevaluated_properties_beside_pattern_properties_is_refused() -> None:
    schema = {"patternProperties": {"^a": {}}, "unevaluatedProperties": False}

    ((_, _, message),) = problems(contract(output_schema=schema))

    assert "unevaluatedProperties cannot be combined with patternProperties" in message


def test_input_patterns_are_checked_on_re2_when_compiling() -> None:
    loaded = parse_contract(
        contract(inputs={"name": {"schema": {"type": "string", "pattern": "^(a+)+$"}}})
    )

    with pytest.raises(ContractError) as caught:
        compile_contract(loaded, inputs={"name": "a" * 40 + "!"})

    assert [d.code for d in caught.value.diagnostics] == [ErrorCode.VALUE_SCHEMA]


def test_a_contract_file_with_a_hostile_ref_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "api_version: runport/v1alpha1\nid: c\nversion: 1.0.0\n"
        "messages: [{role: user, content: [{kind: text, value: hi}]}]\n"
        "output_schema: {$ref: 'file:///etc/passwd'}\n",
        encoding="utf-8",
    )

    with pytest.raises(ContractError) as caught:
        load_contract(path)

    assert caught.value.source == str(path)
    assert [d.code for d in caught.value.diagnostics] == [ErrorCode.OUTPUT_SCHEMA_INVALID]
