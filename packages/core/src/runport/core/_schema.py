from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import SchemaError

from runport.contracts import Diagnostic, ErrorCode, canonical_json

# RFC 3339 §5.6. jsonschema checks `date-time` only when rfc3339-validator is installed; we
# assert both formats ourselves so validity never depends on an optional package.
_DATE_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _DATE.match(value):
        return False
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    match = _DATE_TIME.match(value)
    if not match:
        return False
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    offset = match.group(8)
    if offset not in ("Z", "z") and (int(offset[1:3]) > 23 or int(offset[4:6]) > 59):
        return False
    try:
        _dt.datetime(year, month, day, hour, minute, min(second, 59))
    except ValueError:
        return False
    return second <= 60  # a leap second is valid RFC 3339


def _format_checker() -> FormatChecker:
    checker = FormatChecker()
    checker.checks("date")(_is_date)
    checker.checks("date-time")(_is_date_time)
    return checker


FORMAT_CHECKER = _format_checker()


def json_pointer(path: Any) -> str:
    """RFC 6901 pointer for a sequence of keys and indexes."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def schema_problems(schema: Mapping[str, Any]) -> list[str]:
    """Why ``schema`` is not a valid Draft 2020-12 schema (empty when it is)."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        return [f"{error.message} (at schema{json_pointer(error.absolute_path) or ' root'})"]
    return []


_VALIDATORS: dict[bytes, Draft202012Validator | str] = {}
_CACHE_LIMIT = 256


def _validator(schema: Mapping[str, Any]) -> Draft202012Validator | str:
    """A validator for ``schema``, or why the schema is invalid — built once per schema.

    Checking a schema against the meta-schema and building its validator costs far more than
    validating a value, and a run validates against the same few schemas again and again.
    """
    key = canonical_json(schema)
    found = _VALIDATORS.get(key)
    if found is None:
        problems = schema_problems(schema)
        found = (
            problems[0] if problems else Draft202012Validator(schema, format_checker=FORMAT_CHECKER)
        )
        if len(_VALIDATORS) >= _CACHE_LIMIT:
            _VALIDATORS.pop(next(iter(_VALIDATORS)))
        _VALIDATORS[key] = found
    return found


def schema_errors(schema: Mapping[str, Any], value: Any) -> list[tuple[str, str]] | str:
    """``(json_pointer, message)`` for every way ``value`` fails ``schema``, sorted; or, when the
    schema itself is invalid, why (a string)."""
    validator = _validator(schema)
    if isinstance(validator, str):
        return validator
    return sorted(
        (json_pointer(error.absolute_path), error.message) for error in validator.iter_errors(value)
    )


def validate_output(schema: Mapping[str, Any], value: Any) -> list[Diagnostic]:
    """Every way ``value`` fails ``schema`` (Draft 2020-12, ``date``/``date-time`` asserted).

    Empty when the value is valid. An invalid schema gives one ``TQX_OUTPUT_SCHEMA_INVALID``.
    """
    errors = schema_errors(schema, value)
    if isinstance(errors, str):
        return [Diagnostic(code=ErrorCode.OUTPUT_SCHEMA_INVALID, message=errors, json_pointer="")]
    return [
        Diagnostic(code=ErrorCode.OUTPUT_SCHEMA, message=message, json_pointer=pointer)
        for pointer, message in errors
    ]


def is_valid(schema: Mapping[str, Any], value: Any) -> bool:
    return not validate_output(schema, value)
