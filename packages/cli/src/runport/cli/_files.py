from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runport.application import request_parts
from runport.cli._errors import CliError
from runport.cli._part_files import read_part_files
from runport.contracts import ErrorCode
from runport.core import Contract, DocumentError, load_document, parse_document


def read_data(path: Path, *, what: str) -> Any:
    """Read a JSON or YAML file through core's bounded reader, or fail with one clear line."""
    if not path.exists():
        raise CliError(ErrorCode.DATA_INVALID, f"{what} file not found: {path}")
    try:
        return load_document(path)
    except DocumentError as error:
        raise CliError(error.code, f"{what} file {path}: {error.message}") from None


def read_request(
    path: Path, contract: Contract | None = None, *, inside: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None, Any]:
    """An input file: either ``{inputs, context?, fixture_output?}`` or the inputs themselves
    (the shape a batch row has: ``runport.application``'s row reader decides). With the
    ``contract``, its image and file values given by path are read: relative to the file's
    folder, and inside ``inside`` (by default that folder)."""
    data = read_data(path, what="input")
    if not isinstance(data, dict):
        raise CliError(ErrorCode.DATA_INVALID, f"input file {path} must hold a mapping")
    parts = request_parts(data)
    if isinstance(parts, str):
        raise CliError(ErrorCode.DATA_INVALID, f"input file {path}: {parts}")
    if contract is not None:
        folder = path.parent
        for root, values in (("inputs", parts[0]), ("context", parts[1])):
            read_part_files(contract, values, root, base=folder, inside=inside or folder)
    return parts


def inline_value(item: str) -> tuple[str, Any]:
    """``-i KEY=VALUE``: the value is JSON when it parses as JSON, else the string itself."""
    key, equals, text = item.partition("=")
    if not equals or not key:
        raise CliError("usage", f"-i takes KEY=VALUE, not {item!r}")
    try:
        json.loads(text)
    except ValueError:
        return key, text
    except RecursionError:
        pass  # JSON nested past any bound: the bounded reader below says so, with its code
    try:
        # JSON it is: decoded again by the strict, bounded reader every other input goes through.
        return key, parse_document(text, source=f"-i {key}")
    except DocumentError as error:
        raise CliError(error.code, error.message) from None


def request(
    path: Path | None, inline: list[str], contract: Contract | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None, Any]:
    """The inputs of ``runport run``: the ``--input`` file (none: no inputs), then each ``-i``
    over it, so an inline value wins. An image or file value given by path is read (an inline
    one as ``@path`` or ``{"path": …}``, inside the current folder)."""
    inputs, context, fixture = ({}, None, None) if path is None else read_request(path, contract)
    given: dict[str, Any] = {}
    for item in inline:
        key, value = inline_value(item)
        given[key] = value
    if contract is not None:
        here = Path.cwd()
        read_part_files(contract, given, "inputs", base=here, inside=here, inline=True)
    inputs.update(given)
    return inputs, context, fixture
