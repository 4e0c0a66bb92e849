from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runport.application import Catalog, CatalogError, input_schema, load_catalog

CONTRACTS = Path(__file__).with_name("contracts")


def test_loads_every_contract_and_describes_it_in_id_order() -> None:
    warnings: list[str] = []
    catalog = load_catalog(CONTRACTS, warn=warnings.append)
    assert warnings == []
    assert sorted(catalog) == ["app.extract", "mcp.echo"]
    listing = catalog.describe()
    assert [entry["id"] for entry in listing] == ["app.extract", "mcp.echo"]
    assert listing[1] == {
        "id": "mcp.echo",
        "version": "1.0.0",
        "description": "Say something about a topic.",
        "input_schema": {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "minLength": 1, "description": "what to talk about"},
                "tone": {"type": "string", "enum": ["dry", "warm"]},
            },
            "required": ["topic"],
            "additionalProperties": False,
        },
    }


def test_the_input_schema_is_a_json_schema_the_inputs_satisfy() -> None:
    import jsonschema

    catalog = load_catalog(CONTRACTS, warn=print)
    schema = input_schema(catalog["mcp.echo"])
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"topic": "rivers", "tone": "dry"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tone": "dry"}, schema)


def test_a_file_that_fails_to_load_is_reported_and_skipped(tmp_path: Path) -> None:
    shutil.copytree(CONTRACTS, tmp_path, dirs_exist_ok=True)
    (tmp_path / "broken.yaml").write_text(
        "api_version: runport/v1alpha1\nid: broken\nversion: one\n", encoding="utf-8"
    )
    (tmp_path / "unparsable.yaml").write_text("id: [unclosed\n", encoding="utf-8")
    (tmp_path / "scenario.yaml").write_text(
        "api_version: runport.mock/v1\nid: s\nturns: []\n", encoding="utf-8"
    )
    (tmp_path / "input.json").write_text('{"inputs": {"topic": "x"}}', encoding="utf-8")
    warnings: list[str] = []
    catalog = load_catalog(tmp_path, warn=warnings.append)
    assert sorted(catalog) == ["app.extract", "mcp.echo"]
    assert len(warnings) == 2
    assert warnings[0].startswith(f"skipped {tmp_path / 'broken.yaml'}: TQX_CONTRACT_INVALID")
    assert warnings[1].startswith(f"skipped {tmp_path / 'unparsable.yaml'}: TQX_PARSE_YAML")


def test_two_files_with_one_id_stop_the_start_naming_both(tmp_path: Path) -> None:
    shutil.copy(CONTRACTS / "echo.yaml", tmp_path / "a.yaml")
    nested = tmp_path / "nested"
    nested.mkdir()
    shutil.copy(CONTRACTS / "echo.yaml", nested / "b.yaml")
    with pytest.raises(CatalogError) as caught:
        load_catalog(tmp_path, warn=print)
    assert caught.value.code == "TQX_DATA_INVALID"
    assert str(tmp_path / "a.yaml") in caught.value.message
    assert str(nested / "b.yaml") in caught.value.message


def test_only_files_inside_the_folder_are_served_symlinks_resolved(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(CONTRACTS / "echo.yaml", served / "echo.yaml")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(CONTRACTS / "extract.yaml", outside / "secret.yaml")
    (served / "linked.yaml").symlink_to(outside / "secret.yaml")
    (served / "linked-folder").symlink_to(outside, target_is_directory=True)
    warnings: list[str] = []
    catalog = load_catalog(served, warn=warnings.append)
    assert sorted(catalog) == ["mcp.echo"]
    linked = f"skipped {served / 'linked.yaml'}: it resolves outside the contracts folder"
    assert [w for w in warnings if w.startswith(linked)] == [warnings[0]]


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="contracts folder not found"):
        load_catalog(tmp_path / "nope", warn=print)


def test_the_catalog_is_a_read_only_mapping() -> None:
    catalog = load_catalog(CONTRACTS, warn=print)
    assert isinstance(catalog, Catalog)
    assert len(catalog) == 2
    assert catalog.path("mcp.echo") == CONTRACTS / "echo.yaml"
    assert "nope" not in catalog
