from __future__ import annotations

import pytest

from runport.core import validate_output

DATES = {
    "type": "object",
    "properties": {
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
    },
}


@pytest.mark.parametrize(
    ("value", "pointers"),
    [
        ({"day": "2026-09-01", "at": "2026-09-01T10:00:00Z"}, []),
        ({"at": "2026-09-01T10:00:00.25+02:00"}, []),
        ({"at": "2016-12-31T23:59:60Z"}, []),
        ({"day": "2026-02-30"}, ["/day"]),
        ({"day": "1 september 2026"}, ["/day"]),
        ({"day": "20260901"}, ["/day"]),
        ({"at": "2026-09-01 10:00:00"}, ["/at"]),
        ({"at": "2026-09-01T25:00:00Z"}, ["/at"]),
        ({"at": "2026-09-01T10:00:00+24:00"}, ["/at"]),
        ({"at": "2026-09-01T10:00:00"}, ["/at"]),
        ({"day": "x", "at": "y"}, ["/at", "/day"]),
    ],
)
def test_date_and_date_time_are_asserted(value: object, pointers: list[str]) -> None:
    diagnostics = validate_output(DATES, value)
    assert [d.json_pointer for d in diagnostics] == pointers
    assert all(d.code == "TQX_OUTPUT_SCHEMA" for d in diagnostics)


def test_every_error_is_listed_with_its_pointer() -> None:
    schema = {
        "type": "object",
        "required": ["a", "b"],
        "additionalProperties": False,
        "properties": {"a": {"type": "integer"}, "list": {"items": {"type": "string"}}},
    }
    diagnostics = validate_output(schema, {"a": "x", "list": ["ok", 3], "z~/": 1})
    pointers = sorted(d.json_pointer or "" for d in diagnostics)
    assert pointers == ["", "", "/a", "/list/1"]


def test_draft_2020_12_keywords_apply() -> None:
    schema = {"type": "array", "prefixItems": [{"type": "integer"}], "items": False}
    assert validate_output(schema, [1]) == []
    assert len(validate_output(schema, [1, 2])) == 1


def test_an_invalid_schema_is_reported_not_raised() -> None:
    (diagnostic,) = validate_output({"type": "nope"}, 1)
    assert diagnostic.code == "TQX_OUTPUT_SCHEMA_INVALID"
