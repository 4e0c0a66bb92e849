"""Telling a folder's files apart: which are contracts, which are scenarios.

Surfaces that serve or check a folder (the MCP catalog, ``runport scenarios check``) decide
the same way, so one folder never means two different things to two surfaces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, get_args

from runport.core._contract import Contract
from runport.core._scenario import Scenario

CONTRACT_API_VERSIONS: Final = frozenset(get_args(Contract.model_fields["api_version"].annotation))
SCENARIO_API_VERSIONS: Final = frozenset(get_args(Scenario.model_fields["api_version"].annotation))


def is_contract_document(data: object) -> bool:
    """Whether decoded file content is meant as a contract.

    It is when it claims a contract ``api_version`` — except a templiqx package manifest
    (``templiqx.yaml``), which shares that version but lists contracts under ``package`` — or
    when it has ``messages`` and is not a scenario. A file meant as a contract is then loaded
    and every problem in it shown; anything else (scenarios, inputs) is passed over quietly.
    """
    if not isinstance(data, Mapping):
        return False
    version = data.get("api_version")
    if version in CONTRACT_API_VERSIONS:
        return "package" not in data
    return "messages" in data and version not in SCENARIO_API_VERSIONS


def is_scenario_document(data: object) -> bool:
    """Whether decoded file content claims a scenario ``api_version`` (either format)."""
    return isinstance(data, Mapping) and data.get("api_version") in SCENARIO_API_VERSIONS
