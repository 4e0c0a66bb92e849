from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from runport.contracts import ErrorCode
from runport.core import Contract, ContractError, load_contract, parse_contract
from runport.core._contract import ForEachNode, InterpolateNode, NotExpr, RefExpr, WhenNode

CONTRACTS = Path(__file__).parent / "contracts"


def minimal(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "api_version": "runport/v1alpha1",
        "id": "minimal",
        "version": "0.1.0",
        "inputs": {"topic": {"schema": {"type": "string"}, "required": True}},
        "context": {"tone": {"schema": {"type": "string"}}},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"kind": "text", "value": "About: "},
                    {"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.topic"}},
                ],
            }
        ],
        "output_schema": {"type": "string"},
    }
    data.update(changes)
    return data


def problems(data: object) -> list[tuple[str, str | None]]:
    with pytest.raises(ContractError) as caught:
        parse_contract(data)
    return [(d.code, d.json_pointer) for d in caught.value.diagnostics]


def messages_with(*content: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": list(content)}]


def ref(path: str) -> dict[str, Any]:
    return {"kind": "ref", "path": path}


# Loading files --------------------------------------------------------------------------------


def test_crm3_style_contract_loads_with_every_section() -> None:
    contract = load_contract(CONTRACTS / "lease-renewal.yaml")

    assert contract.api_version == "templiqx/v1alpha1"
    assert contract.id == "lease-renewal.notice_v2"
    assert contract.version == "1.2.0-rc.1+build.7"
    assert list(contract.inputs) == ["tenant_name", "lease", "clauses"]
    assert contract.inputs["tenant_name"].required is True
    assert contract.inputs["clauses"].required is False
    assert contract.inputs["tenant_name"].description == "Display name of the synthetic tenant."
    assert contract.inputs["tenant_name"].json_schema == {"type": "string", "minLength": 1}
    assert list(contract.context) == ["office", "issued_at"]
    assert contract.capabilities == ["structured_output", "text"]
    assert [m.role for m in contract.messages] == ["system", "user"]
    assert contract.runtime_policy == {"temperature": 0, "max_response_bytes": 65536}
    assert contract.provenance == {"issue": "RP-7", "classification": "synthetic"}
    assert [e.id for e in contract.evals] == ["indexed-with-clauses", "fixed-no-clauses"]
    interpolate = contract.messages[1].content[1]
    assert isinstance(interpolate, InterpolateNode)
    assert interpolate.filters == ["trim", "upper"]
    assert interpolate.expression == RefExpr(path="context.office")


def test_unquoted_yaml_dates_stay_strings() -> None:
    contract = load_contract(CONTRACTS / "lease-renewal.yaml")

    lease = contract.evals[0].inputs["lease"]
    assert isinstance(lease, dict)
    assert lease["start_date"] == "2024-01-01"


def test_json_is_read_as_yaml() -> None:
    contract = load_contract(str(CONTRACTS / "minimal.json"))

    assert contract.api_version == "runport/v1alpha1"
    assert contract.output_schema == {"type": "string"}
    assert contract.tools == []
    assert contract.evals == []


@pytest.mark.parametrize("api_version", ["runport/v1alpha1", "templiqx/v1alpha1"])
def test_both_api_versions_load(api_version: str) -> None:
    assert parse_contract(minimal(api_version=api_version)).api_version == api_version


def test_other_api_version_is_refused() -> None:
    assert problems(minimal(api_version="runport/v2")) == [
        (ErrorCode.CONTRACT_INVALID, "/api_version")
    ]


def test_broken_yaml_reports_parse_error_with_position(tmp_path: Path) -> None:
    with pytest.raises(ContractError) as caught:
        load_contract(CONTRACTS / "broken.yaml")

    error = caught.value
    assert error.source == str(CONTRACTS / "broken.yaml")
    assert [d.code for d in error.diagnostics] == [ErrorCode.PARSE_YAML]
    assert error.diagnostics[0].message == (
        "invalid YAML at line 8, column 1: found unexpected end of stream "
        "(while scanning a quoted scalar started at line 6, column 37)"
    )


def test_bad_indentation_reports_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("id: x\n  version: 1\n", encoding="utf-8")

    with pytest.raises(ContractError) as caught:
        load_contract(path)

    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == ErrorCode.PARSE_YAML
    assert diagnostic.message.startswith("invalid YAML at line 2, column 10: ")


def test_duplicate_yaml_key_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("id: a\nversion: 0.1.0\nid: b\n", encoding="utf-8")

    with pytest.raises(ContractError) as caught:
        load_contract(path)

    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == ErrorCode.PARSE_YAML
    assert diagnostic.message == (
        "invalid YAML at line 3, column 1: key 'id' appears twice in one mapping "
        "(while constructing a mapping started at line 1, column 1)"
    )


def test_yaml_merge_keys_still_work(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "api_version: runport/v1alpha1\nid: m\nversion: 0.1.0\n"
        "base: &base {type: object}\n"
        "messages: [{role: user, content: []}]\n"
        "output_schema: {<<: *base, type: string}\n",
        encoding="utf-8",
    )

    with pytest.raises(ContractError) as caught:
        load_contract(path)

    assert [(d.code, d.json_pointer) for d in caught.value.diagnostics] == [
        (ErrorCode.CONTRACT_INVALID, "/base")
    ]


def test_unreadable_file_is_data_invalid(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"

    with pytest.raises(ContractError) as caught:
        load_contract(missing)

    assert caught.value.source == str(missing)
    assert [d.code for d in caught.value.diagnostics] == [ErrorCode.DATA_INVALID]
    assert caught.value.diagnostics[0].json_pointer is None


def test_file_that_is_not_utf8_is_data_invalid(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("id: caf\xe9\n".encode("latin-1"))

    with pytest.raises(ContractError) as caught:
        load_contract(path)

    assert [d.code for d in caught.value.diagnostics] == [ErrorCode.DATA_INVALID]


@pytest.mark.parametrize(
    ("text", "kind"), [("", "nothing"), ("- a\n- b\n", "list"), ("just text\n", "str")]
)
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str, kind: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(ContractError) as caught:
        load_contract(path)

    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.json_pointer) == (ErrorCode.CONTRACT_INVALID, "")
    assert diagnostic.message == f"a contract must be a mapping, not {kind}"


# Field errors ---------------------------------------------------------------------------------


def test_every_missing_required_field_is_reported() -> None:
    assert problems({}) == [
        (ErrorCode.CONTRACT_INVALID, "/api_version"),
        (ErrorCode.CONTRACT_INVALID, "/id"),
        (ErrorCode.CONTRACT_INVALID, "/version"),
        (ErrorCode.CONTRACT_INVALID, "/messages"),
        (ErrorCode.CONTRACT_INVALID, "/output_schema"),
    ]


def test_unknown_top_level_field_is_named() -> None:
    with pytest.raises(ContractError) as caught:
        parse_contract(minimal(colour="blue"))

    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == ErrorCode.CONTRACT_INVALID
    assert diagnostic.json_pointer == "/colour"
    assert diagnostic.message == "unknown field 'colour'"


def test_unknown_nested_fields_point_into_nodes_and_specs() -> None:
    data = minimal(
        messages=messages_with(
            {"kind": "text", "value": "x", "style": "bold"},
            {"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.topic", "x": 1}},
        )
    )
    data["inputs"]["topic"]["default"] = "cats"

    assert problems(data) == [
        (ErrorCode.CONTRACT_INVALID, "/inputs/topic/default"),
        (ErrorCode.CONTRACT_INVALID, "/messages/0/content/0/style"),
        (ErrorCode.CONTRACT_INVALID, "/messages/0/content/1/expression/x"),
    ]


def test_wrong_types_each_reported_at_their_field() -> None:
    data = minimal(
        id="has space",
        version=1,
        description=["not", "text"],
        capabilities="text",
        output_schema=["type", "string"],
        messages=[
            {
                "role": "robot",
                "content": [
                    {
                        "kind": "interpolate",
                        "expression": ref("inputs.topic"),
                        "filters": ["capitalize"],
                    },
                    {"kind": "bogus"},
                    {"value": "no kind"},
                    {"kind": "when", "condition": {"kind": "and", "exprs": []}, "then": "x"},
                ],
            }
        ],
    )
    data["inputs"]["topic"]["required"] = "maybe"

    with pytest.raises(ContractError) as caught:
        parse_contract(data)

    found = {d.json_pointer: d.message for d in caught.value.diagnostics}
    assert set(found) == {
        "/id",
        "/version",
        "/description",
        "/inputs/topic/required",
        "/capabilities",
        "/messages/0/role",
        "/messages/0/content/0/filters/0",
        "/messages/0/content/1",
        "/messages/0/content/2",
        "/messages/0/content/3/condition/exprs",
        "/messages/0/content/3/then",
        "/output_schema",
    }
    assert {d.code for d in caught.value.diagnostics} == {ErrorCode.CONTRACT_INVALID}
    assert found["/messages/0/content/1"].startswith("unknown kind 'bogus'; expected one of ")
    assert found["/messages/0/content/2"].startswith("missing or invalid 'kind'")


@pytest.mark.parametrize("version", ["0.1.0", "10.20.30", "1.0.0-alpha.1", "1.0.0+sha.5114f85"])
def test_semantic_versions_are_accepted(version: str) -> None:
    assert parse_contract(minimal(version=version)).version == version


@pytest.mark.parametrize("version", ["1.0", "01.2.3", "1.2.3-", "v1.2.3", "1.2.3.4", ""])
def test_other_versions_are_refused(version: str) -> None:
    with pytest.raises(ContractError) as caught:
        parse_contract(minimal(version=version))

    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.json_pointer == "/version"
    assert diagnostic.message.endswith("is not a semantic version (MAJOR.MINOR.PATCH)")


@pytest.mark.parametrize("contract_id", ["a", "bli-61.v2_x", "A9", "...", ".a", "a..", "_"])
def test_ids_of_letters_digits_dot_dash_underscore(contract_id: str) -> None:
    assert parse_contract(minimal(id=contract_id)).id == contract_id


@pytest.mark.parametrize("contract_id", ["", "a b", "a/b", "é", "a\n", "a%2e", "a?b", "a#b"])
def test_other_ids_are_refused(contract_id: str) -> None:
    assert problems(minimal(id=contract_id)) == [(ErrorCode.CONTRACT_INVALID, "/id")]


@pytest.mark.parametrize("contract_id", [".", ".."])
def test_an_id_a_url_path_cannot_carry_is_refused(contract_id: str) -> None:
    """A surface serves a contract at ``/v1/contracts/{id}/...``: clients remove ``.`` and
    ``..`` segments from a path, so such an id would be listed and never reachable."""
    with pytest.raises(ContractError) as caught:
        parse_contract(minimal(id=contract_id))
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.json_pointer) == (ErrorCode.CONTRACT_INVALID, "/id")
    assert "URL path segment" in diagnostic.message


def test_messages_must_not_be_empty() -> None:
    assert problems(minimal(messages=[])) == [(ErrorCode.CONTRACT_INVALID, "/messages")]


def test_non_finite_numbers_are_refused() -> None:
    assert problems(minimal(runtime_policy={"temperature": float("nan")})) == [
        (ErrorCode.CONTRACT_INVALID, "/runtime_policy/temperature")
    ]


# Checks that span fields ----------------------------------------------------------------------


def test_contract_with_several_problems_reports_all_of_them() -> None:
    with pytest.raises(ContractError) as caught:
        load_contract(CONTRACTS / "many-problems.yaml")

    error = caught.value
    assert [(d.code, d.json_pointer) for d in error.diagnostics] == [
        (ErrorCode.CONTRACT_INVALID, "/version"),
        (ErrorCode.CONTRACT_INVALID, "/colour"),
        (ErrorCode.OUTPUT_SCHEMA_INVALID, "/output_schema"),
        (ErrorCode.CONTRACT_INVALID, "/messages/0/content/1/expression/path"),
    ]
    assert error.diagnostics[3].message == (
        "reference 'inputs.topik' names no declared input (declared: topic)"
    )
    assert str(error) == (
        f"{CONTRACTS / 'many-problems.yaml'}: 4 problems; first: TQX_CONTRACT_INVALID at "
        "/version: version '1.0' is not a semantic version (MAJOR.MINOR.PATCH)"
    )


def test_summary_without_source_and_with_one_problem() -> None:
    with pytest.raises(ContractError) as caught:
        parse_contract(minimal(colour="blue"))

    assert caught.value.source is None
    assert str(caught.value) == (
        "contract: 1 problem; first: TQX_CONTRACT_INVALID at /colour: unknown field 'colour'"
    )


def test_invalid_value_schemas_and_tool_parameters() -> None:
    data = minimal(
        tools=[
            {"name": "lookup", "parameters": {"type": "object", "required": "city"}},
            {"name": "other"},
            {"name": "lookup", "description": "again"},
        ]
    )
    data["inputs"]["topic"]["schema"] = {"type": 12}
    data["context"]["tone"]["schema"] = {"minLength": -1}

    assert problems(data) == [
        (ErrorCode.CONTRACT_INVALID, "/inputs/topic/schema"),
        (ErrorCode.CONTRACT_INVALID, "/context/tone/schema"),
        (ErrorCode.CONTRACT_INVALID, "/tools/0/parameters"),
        (ErrorCode.CONTRACT_INVALID, "/tools/2/name"),
    ]


def test_refs_must_name_declared_values_or_items_in_scope() -> None:
    data = minimal(
        messages=messages_with(
            {"kind": "interpolate", "expression": ref("inputs.topic.sub.0")},
            {"kind": "interpolate", "expression": ref("context.tone")},
            {"kind": "interpolate", "expression": ref("inputs.nope")},
            {"kind": "interpolate", "expression": ref("context.nope")},
            {"kind": "interpolate", "expression": ref("inputs")},
            {"kind": "interpolate", "expression": ref("topic")},
            {"kind": "interpolate", "expression": ref("inputs..topic")},
            {
                "kind": "for_each",
                "collection": ref("inputs.topic"),
                "item": "row",
                "body": [
                    {"kind": "interpolate", "expression": ref("row.name")},
                    {
                        "kind": "when",
                        "condition": {
                            "kind": "and",
                            "exprs": [
                                {"kind": "literal", "value": True},
                                {"kind": "not", "expr": ref("rows")},
                            ],
                        },
                        "then": [],
                        "else": [
                            {
                                "kind": "interpolate",
                                "expression": {
                                    "kind": "equals",
                                    "left": ref("row"),
                                    "right": ref("cell"),
                                },
                            }
                        ],
                    },
                ],
            },
            {"kind": "interpolate", "expression": ref("row")},
        )
    )

    with pytest.raises(ContractError) as caught:
        parse_contract(data)

    content = "/messages/0/content"
    assert [(d.code, d.json_pointer) for d in caught.value.diagnostics] == [
        (ErrorCode.CONTRACT_INVALID, f"{content}/2/expression/path"),
        (ErrorCode.CONTRACT_INVALID, f"{content}/3/expression/path"),
        (ErrorCode.CONTRACT_INVALID, f"{content}/4/expression/path"),
        (ErrorCode.CONTRACT_INVALID, f"{content}/5/expression/path"),
        (ErrorCode.CONTRACT_INVALID, f"{content}/6/expression/path"),
        (ErrorCode.CONTRACT_INVALID, f"{content}/7/body/1/condition/exprs/1/expr/path"),
        (ErrorCode.CONTRACT_INVALID, f"{content}/7/body/1/else/0/expression/right/path"),
        (ErrorCode.CONTRACT_INVALID, f"{content}/8/expression/path"),
    ]
    messages = [d.message for d in caught.value.diagnostics]
    assert (
        messages[1] == "reference 'context.nope' names no declared context value (declared: tone)"
    )
    assert messages[2] == "reference 'inputs' must name a value: 'inputs.<name>'"
    assert messages[4] == "reference 'inputs..topic' has an empty segment"
    assert messages[5] == (
        "reference 'rows' must start with 'inputs.', 'context.' or a for_each item in scope "
        "(items in scope: row)"
    )


def test_ref_problems_are_found_beside_field_errors_in_other_messages() -> None:
    data = minimal(
        messages=[
            {"role": "robot", "content": [{"kind": "interpolate", "expression": ref("inputs.x")}]},
            {"role": "user", "content": [{"kind": "interpolate", "expression": ref("inputs.y")}]},
        ]
    )

    assert problems(data) == [
        (ErrorCode.CONTRACT_INVALID, "/messages/0/role"),
        (ErrorCode.CONTRACT_INVALID, "/messages/1/content/0/expression/path"),
    ]


@pytest.mark.parametrize("item", ["inputs", "context", "1st", "a.b", ""])
def test_for_each_item_must_be_a_plain_name(item: str) -> None:
    data = minimal(
        messages=messages_with(
            {"kind": "for_each", "collection": ref("inputs.topic"), "item": item, "body": []}
        )
    )

    assert problems(data) == [(ErrorCode.CONTRACT_INVALID, "/messages/0/content/0/item")]


def test_templiqx_operand_spellings_load_and_point_at_their_own_keys() -> None:
    data = minimal(
        messages=messages_with(
            {
                "kind": "when",
                "condition": {"kind": "or", "values": [{"kind": "not", "value": ref("x")}]},
                "then": [],
            }
        )
    )

    assert problems(data) == [
        (ErrorCode.CONTRACT_INVALID, "/messages/0/content/0/condition/values/0/value/path")
    ]
    data["messages"][0]["content"][0]["condition"]["values"][0]["value"] = ref("inputs.topic")
    node = parse_contract(data).messages[0].content[0]
    assert isinstance(node, WhenNode)
    assert node.condition.kind == "or"


def test_not_with_both_spellings_is_refused() -> None:
    data = minimal(
        messages=messages_with(
            {
                "kind": "when",
                "condition": {"kind": "not", "expr": ref("inputs.topic"), "value": ref("x")},
                "then": [],
            }
        )
    )

    assert problems(data) == [(ErrorCode.CONTRACT_INVALID, "/messages/0/content/0/condition/value")]


def test_eval_fake_output_must_satisfy_output_schema() -> None:
    data = minimal(
        output_schema={
            "type": "object",
            "required": ["when"],
            "properties": {"when": {"type": "string", "format": "date"}},
        },
        evals=[
            {"id": "ok", "fake_output": {"when": "2026-02-28"}},
            {"id": "bad-date", "fake_output": {"when": "2026-02-30"}},
            {"id": "no-output"},
            {"id": "null-output", "fake_output": None},
            {"id": "ok"},
        ],
    )

    with pytest.raises(ContractError) as caught:
        parse_contract(data)

    assert [(d.code, d.json_pointer) for d in caught.value.diagnostics] == [
        (ErrorCode.OUTPUT_SCHEMA, "/evals/1/fake_output/when"),
        (ErrorCode.OUTPUT_SCHEMA, "/evals/3/fake_output"),
        (ErrorCode.CONTRACT_INVALID, "/evals/4/id"),
    ]
    assert caught.value.diagnostics[0].message.startswith(
        "fake_output does not satisfy output_schema: "
    )


def test_fake_output_is_not_checked_against_an_invalid_schema() -> None:
    data = minimal(output_schema={"type": "objekt"}, evals=[{"id": "e", "fake_output": 1}])

    assert problems(data) == [(ErrorCode.OUTPUT_SCHEMA_INVALID, "/output_schema")]


# The model ------------------------------------------------------------------------------------


def test_contract_is_frozen() -> None:
    contract = parse_contract(minimal())

    with pytest.raises(ValidationError):
        contract.id = "other"  # type: ignore[misc]


def test_dump_uses_yaml_field_names_and_round_trips() -> None:
    contract = load_contract(CONTRACTS / "lease-renewal.yaml")

    dumped = contract.model_dump(mode="json")

    assert dumped["inputs"]["tenant_name"]["schema"] == {"type": "string", "minLength": 1}
    assert "else" in dumped["messages"][1]["content"][6]
    assert parse_contract(copy.deepcopy(dumped)) == contract


def test_model_shapes_of_loop_and_operand_nodes() -> None:
    data = minimal(
        messages=messages_with(
            {
                "kind": "for_each",
                "collection": ref("inputs.topic"),
                "item": "t",
                "body": [
                    {
                        "kind": "when",
                        "condition": {"kind": "not", "expr": ref("t")},
                        "then": [{"kind": "text", "value": "-"}],
                    }
                ],
            }
        )
    )

    node = parse_contract(data).messages[0].content[0]

    assert isinstance(node, ForEachNode)
    assert node.separator == ""
    when = node.body[0]
    assert isinstance(when, WhenNode)
    assert when.otherwise == []
    assert when.condition == NotExpr(expr=RefExpr(path="t"))


def test_contract_accepts_its_own_instances() -> None:
    contract = parse_contract(minimal())

    assert isinstance(contract, Contract)
    assert Contract.model_validate(contract.model_dump()) == contract
