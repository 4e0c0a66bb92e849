"""Loading a scenario of either format from a file or from already-decoded data."""

from __future__ import annotations

import os
from collections.abc import Mapping

from runport.core._document import DocumentError, json_value_problem, load_document
from runport.core._scenario._decoding import ScenarioError, Where, type_name
from runport.core._scenario._mock_v1 import parse_mock_v1
from runport.core._scenario._model import API_VERSION, TEMPLIQX_API_VERSION, Scenario
from runport.core._scenario._templiqx import parse_templiqx


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read a scenario file (JSON or YAML, told apart by content) and validate it.

    The file goes through core's bounded document reader (docs/limits.md): JSON is read with
    JSON's own rules first, anything else as YAML; duplicate keys, NaN and lone surrogates are
    refused in both.
    """
    source = os.fspath(path)
    try:
        data = load_document(source)
    except DocumentError as error:
        raise ScenarioError(str(error), source=source) from None
    return parse_scenario(data, source=source)


def parse_scenario(data: object, *, source: str | None = None) -> Scenario:
    """Validate an already-decoded scenario mapping (either format) and normalize it."""
    where = Where(source)
    if not isinstance(data, Mapping):
        raise where.error(f"a scenario is a mapping, not {type_name(data)}")
    refused = json_value_problem(data, document=False)
    if refused is not None:
        pointer, message = refused
        raise where.error(f"{message} (at {pointer or '/'})")
    api_version = data.get("api_version")
    if api_version == API_VERSION:
        return parse_mock_v1(data, where)
    if api_version == TEMPLIQX_API_VERSION:
        return parse_templiqx(data, where)
    if "api_version" not in data:
        raise where.error("missing field 'api_version'")
    raise where.error(
        f"unknown api_version {api_version!r} (expected {API_VERSION!r} or "
        f"{TEMPLIQX_API_VERSION!r})"
    )
