from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from runport.cli._errors import CliError
from runport.contracts import ErrorCode
from runport.core import load_yaml


def read_data(path: Path, *, what: str) -> Any:
    """Read a JSON or YAML file, or fail with one clear line naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(ErrorCode.DATA_INVALID, f"{what} file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(ErrorCode.DATA_INVALID, f"cannot read {what} file {path}: {error}") from None
    try:
        if path.suffix in {".yaml", ".yml"}:
            return load_yaml(text)
        return json.loads(text, object_pairs_hook=_refuse_duplicate_keys)
    except _DuplicateKeyError as error:
        raise CliError(ErrorCode.DATA_INVALID, f"{what} file {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise CliError(
            ErrorCode.DATA_INVALID,
            f"{what} file {path} is not valid JSON (line {error.lineno}, column {error.colno}): "
            f"{error.msg}",
        ) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise CliError(
            ErrorCode.PARSE_YAML, f"{what} file {path} is not valid YAML{where}"
        ) from None


class _DuplicateKeyError(ValueError):
    pass


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """JSON allows a repeated key and keeps the last; a request file that says two things about
    one input is refused instead, as the YAML loader refuses it."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(f"key {key!r} appears twice in one object")
        result[key] = value
    return result


REQUEST_KEYS = frozenset({"inputs", "context", "fixture_output"})


def read_request(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None, Any]:
    """An input file: either ``{inputs, context?, fixture_output?}`` or the inputs themselves.

    The request form is recognised when the file's keys are a subset of those three and
    include ``inputs`` (the shape templiqx request files use).
    """
    data = read_data(path, what="input")
    if not isinstance(data, dict):
        raise CliError(ErrorCode.DATA_INVALID, f"input file {path} must hold a mapping")
    if "inputs" in data and set(data) <= REQUEST_KEYS:
        inputs, context = data["inputs"], data.get("context")
        if not isinstance(inputs, dict) or not (context is None or isinstance(context, dict)):
            raise CliError(
                ErrorCode.DATA_INVALID, f"input file {path}: inputs and context must be mappings"
            )
        return inputs, context, data.get("fixture_output")
    return data, None, None


def inline_value(item: str) -> tuple[str, Any]:
    """``-i KEY=VALUE``: the value is JSON when it parses as JSON, else the string itself."""
    key, equals, text = item.partition("=")
    if not equals or not key:
        raise CliError("usage", f"-i takes KEY=VALUE, not {item!r}")
    try:
        return key, json.loads(text, object_pairs_hook=_refuse_duplicate_keys)
    except ValueError:
        return key, text


def request(
    path: Path | None, inline: list[str]
) -> tuple[dict[str, Any], dict[str, Any] | None, Any]:
    """The inputs of ``runport run``: the ``--input`` file (none: no inputs), then each ``-i``
    over it, so an inline value wins."""
    inputs, context, fixture = ({}, None, None) if path is None else read_request(path)
    for item in inline:
        key, value = inline_value(item)
        inputs[key] = value
    return inputs, context, fixture
