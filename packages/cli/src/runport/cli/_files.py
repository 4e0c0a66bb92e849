from __future__ import annotations

from pathlib import Path
from typing import Any

from runport.cli._errors import CliError
from runport.contracts import ErrorCode
from runport.core import DocumentError, load_document


def read_data(path: Path, *, what: str) -> Any:
    """Read a JSON or YAML file through core's bounded reader, or fail with one clear line."""
    if not path.exists():
        raise CliError(ErrorCode.DATA_INVALID, f"{what} file not found: {path}")
    try:
        return load_document(path)
    except DocumentError as error:
        raise CliError(error.code, f"{what} file {path}: {error.message}") from None


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
