from __future__ import annotations

import datetime as _dt
import re
import threading
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import SchemaError

from runport.contracts import MAX_JSON_DEPTH, Diagnostic, ErrorCode, canonical_json
from runport.core._document import json_pointer
from runport.core._held import HeldCache
from runport.core._schema_patterns import PatternValidator, is_regex, pattern_problems
from runport.core._schema_quick import Quick, quick_check
from runport.core._schema_refs import LOCAL_ONLY, local_resolve, nested_ids, reference_problems

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
    checker.checks("regex")(is_regex)
    return checker


FORMAT_CHECKER = _format_checker()


def bounded_validator(schema: Mapping[str, Any]) -> Draft202012Validator:
    """A validator for a schema that passed :func:`schema_problems`: patterns on RE2, and a
    registry that resolves only within the schema and fetches nothing."""
    validator: Draft202012Validator = PatternValidator(
        schema, format_checker=FORMAT_CHECKER, registry=LOCAL_ONLY
    )
    return validator


def schema_problems(schema: Mapping[str, Any]) -> list[str]:
    """Why ``schema`` cannot be used (empty when it can): not a valid Draft 2020-12 schema, a
    ``$ref`` that leaves the schema or points at nothing or only back at itself, or a pattern
    the linear-time engine cannot run (docs/limits.md)."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        return [f"{error.message} (at schema{json_pointer(error.absolute_path) or ' root'})"]
    except RecursionError:
        return ["the schema is nested too deeply to be checked"]
    return reference_problems(schema) + pattern_problems(schema)


Checked = tuple[Draft202012Validator | str, Quick | None]
"""A schema's validator (or why the schema is invalid) and its quick verdict, if it has one."""

_VALIDATORS: dict[str, Checked] = {}
_CACHE_LIMIT = 256
_LOCK = threading.Lock()
_HELD: HeldCache[Checked] = HeldCache(_CACHE_LIMIT)


def checked_schema(schema: Mapping[str, Any]) -> Checked:
    """The validator for ``schema``, or why the schema is invalid — built once per schema.

    Checking a schema against the meta-schema and building its validator costs far more than
    validating a value, and a run validates against the same few schemas again and again.
    The key is the schema's ``repr``: on JSON data it tells apart everything the canonical
    encoding does (``1``, ``1.0`` and ``true`` included) at a fraction of the cost, and a schema
    written with its keys in another order is only one more entry.
    """
    key = repr(schema)
    found = _VALIDATORS.get(key)
    if found is None:
        canonical_json(schema)  # refuses what is not JSON (NaN, objects), as it always has
        problems = schema_problems(schema)
        if problems:
            found = (problems[0], None)
        else:
            resolve = None if nested_ids(schema) else local_resolve(schema)
            found = (bounded_validator(schema), quick_check(schema, resolve))
        with _LOCK:
            if len(_VALIDATORS) >= _CACHE_LIMIT:
                _VALIDATORS.pop(next(iter(_VALIDATORS)), None)
            _VALIDATORS[key] = found
    return found


def held_schema(holder: object, schema: Mapping[str, Any]) -> Checked:
    """``checked_schema(schema)`` for a schema an immutable ``holder`` (a frozen model) owns,
    found by the holder's identity: no canonical encoding of the schema per call."""
    found = _HELD.get(holder)
    if found is None:
        found = _HELD.put(holder, checked_schema(schema))
    return found


def checked_errors(checked: Checked, value: Any) -> list[tuple[str, str]] | str:
    """``schema_errors`` for a schema already looked up."""
    validator, quick = checked
    if isinstance(validator, str):
        return validator
    if quick is not None and quick(value):
        return []
    try:
        return sorted(
            (json_pointer(error.absolute_path), error.message)
            for error in validator.iter_errors(value)
        )
    except RecursionError:
        # Bounded values under a checked schema stay far from the limit; a value built in code
        # past MAX_JSON_DEPTH is reported, never raised.
        return [("", f"the value is nested more than {MAX_JSON_DEPTH} levels deep")]


def schema_errors(
    schema: Mapping[str, Any], value: Any, *, holder: object = None
) -> list[tuple[str, str]] | str:
    """``(json_pointer, message)`` for every way ``value`` fails ``schema``, sorted; or, when the
    schema itself is invalid, why (a string). ``holder``: the immutable object that owns
    ``schema`` (its validator is then found by the holder's identity)."""
    checked = checked_schema(schema) if holder is None else held_schema(holder, schema)
    return checked_errors(checked, value)


def validate_output(schema: Mapping[str, Any], value: Any) -> list[Diagnostic]:
    """Every way ``value`` fails ``schema`` (Draft 2020-12, ``date``/``date-time`` asserted).

    Empty when the value is valid. An invalid schema gives one ``TQX_OUTPUT_SCHEMA_INVALID``.
    """
    return output_diagnostics(schema_errors(schema, value))


def output_diagnostics(errors: list[tuple[str, str]] | str) -> list[Diagnostic]:
    """``schema_errors`` of an output as diagnostics."""
    if isinstance(errors, str):
        return [Diagnostic(code=ErrorCode.OUTPUT_SCHEMA_INVALID, message=errors, json_pointer="")]
    return [
        Diagnostic(code=ErrorCode.OUTPUT_SCHEMA, message=message, json_pointer=pointer)
        for pointer, message in errors
    ]


def is_valid(schema: Mapping[str, Any], value: Any) -> bool:
    return not validate_output(schema, value)
