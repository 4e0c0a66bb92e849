"""``runport scenarios check DIR``: run every scenario under DIR against its contract and
compare the outcome with the expectations the scenario states."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runport.application import execute_contract
from runport.cli._errors import CliError
from runport.cli._files import read_data, read_request
from runport.contracts import ErrorCode, OperationEnvelope
from runport.core import (
    Contract,
    ContractError,
    DocumentError,
    Scenario,
    ScenarioError,
    is_contract_document,
    is_scenario_document,
    load_contract,
    load_document,
    load_scenario,
)
from runport.mock import ScriptedRuntime

SUFFIXES = frozenset({".json", ".yaml", ".yml"})


@dataclass
class Outcome:
    name: str
    problems: list[str] = field(default_factory=list)
    envelope: OperationEnvelope | None = None


@dataclass
class _Found:
    contracts: dict[str, Contract] = field(default_factory=dict)
    scenarios: list[tuple[Path, str | None]] = field(default_factory=list)
    inventories: list[tuple[Path, Any]] = field(default_factory=list)
    broken: list[Outcome] = field(default_factory=list)


def _files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in SUFFIXES:
            yield path


def _inside(root: Path, base: Path, relative: str) -> Path:
    """Resolve a path a manifest names; refuse one that leaves the folder being checked."""
    target = (base / relative).resolve()
    if not target.is_relative_to(root):
        raise CliError(
            ErrorCode.DATA_INVALID,
            f"path {relative!r} resolves outside the folder being checked ({root})",
        )
    return target


def _discover(root: Path) -> _Found:
    found = _Found()
    for path in _files(root):
        rel = path.relative_to(root)
        try:
            data = load_document(path)
        except DocumentError as error:
            found.broken.append(Outcome(f"file {rel}", [f"cannot be parsed: {error.message}"]))
            continue
        if not isinstance(data, dict):
            continue
        if is_contract_document(data):
            try:
                contract = load_contract(path)
            except ContractError as error:
                found.broken.append(Outcome(f"contract {rel}", [str(error)]))
                continue
            if contract.id in found.contracts:
                found.broken.append(Outcome(f"contract {rel}", [f"duplicate id {contract.id!r}"]))
                continue
            found.contracts[contract.id] = contract
        elif is_scenario_document(data) and isinstance(data.get("scenarios"), list):
            found.inventories.append((path, data))
        elif is_scenario_document(data):
            scenario_id = data.get("id")
            found.scenarios.append((path, scenario_id if isinstance(scenario_id, str) else None))
    return found


def _check_scenario(root: Path, path: Path, contracts: dict[str, Contract]) -> Outcome:
    rel = path.relative_to(root)
    outcome = Outcome(f"scenario {rel}")
    try:
        scenario = load_scenario(path)
        outcome.name = f"scenario {scenario.id} ({rel})"
        if len(scenario.turns) != 1:
            raise CliError(
                ErrorCode.DATA_INVALID,
                f"the scenario has {len(scenario.turns)} turns; scenarios check plays one model "
                "turn against its contract (multi-turn scenarios are runs: use `runport run "
                "--tools`)",
            )
        contract = _contract_for(scenario, contracts)
        inputs: dict[str, Any] = {}
        context: dict[str, Any] | None = None
        fixture: Any = None
        if scenario.input is not None:
            inputs, context, fixture = read_request(_inside(root, path.parent, scenario.input))
        if scenario.expected_output is not None:
            fixture = read_data(
                _inside(root, path.parent, scenario.expected_output), what="expected output"
            )
    except (ScenarioError, CliError) as error:
        outcome.problems.append(str(error))
        return outcome
    plain = execute_contract(
        contract, ScriptedRuntime(scenario), inputs=inputs, context=context, fixture_output=fixture
    )
    streamed = execute_contract(
        contract,
        ScriptedRuntime(scenario),
        inputs=inputs,
        context=context,
        fixture_output=fixture,
        on_event=lambda event: None,
    )
    outcome.envelope = plain
    if streamed.result != plain.result or streamed.diagnostics != plain.diagnostics:
        outcome.problems.append("execute and execute_streaming disagree")
    outcome.problems.extend(scenario.expectations.problems(plain))
    return outcome


def _contract_for(scenario: Scenario, contracts: dict[str, Contract]) -> Contract:
    if scenario.contract is None:
        if len(contracts) == 1:
            return next(iter(contracts.values()))
        raise CliError(ErrorCode.DATA_INVALID, "the scenario names no contract")
    try:
        return contracts[scenario.contract]
    except KeyError:
        raise CliError(
            ErrorCode.CONTRACT_NOT_FOUND,
            f"contract {scenario.contract!r} is not in the folder being checked",
        ) from None


def _status(envelope: OperationEnvelope) -> str:
    return "success" if envelope.ok else "failure"


def _check_inventory(
    root: Path, path: Path, data: Any, results: dict[str, OperationEnvelope]
) -> Outcome:
    outcome = Outcome(f"inventory {path.relative_to(root)}")
    for entry in data["scenarios"]:
        if not isinstance(entry, dict) or "id" not in entry:
            outcome.problems.append("an inventory entry without an id")
            continue
        envelope = results.get(entry["id"])
        if envelope is None:
            outcome.problems.append(f"{entry['id']}: no such scenario was run")
            continue
        expected = entry.get("expectation") or {}
        receipt = envelope.result
        errors = sorted(d.code for d in envelope.diagnostics if d.severity == "error")
        actual = {
            "status": _status(envelope),
            "diagnostic_code": errors[0] if errors else None,
            "output_schema_valid": receipt.output_schema_valid if receipt else None,
        }
        for key, value in actual.items():
            if key in expected and expected[key] != value:
                outcome.problems.append(
                    f"{entry['id']}: {key} expected {expected[key]}, got {value}"
                )
        wanted_fp = expected.get("output_fingerprint")
        if wanted_fp is not None and (receipt is None or receipt.output_fingerprint != wanted_fp):
            outcome.problems.append(f"{entry['id']}: output fingerprint differs")
    return outcome


def check_folder(root: Path) -> list[Outcome]:
    if not root.is_dir():
        raise CliError(ErrorCode.DATA_INVALID, f"not a folder: {root}")
    root = root.resolve()
    found = _discover(root)
    outcomes = list(found.broken)
    results: dict[str, OperationEnvelope] = {}
    for path, scenario_id in found.scenarios:
        outcome = _check_scenario(root, path, found.contracts)
        outcomes.append(outcome)
        if outcome.envelope is not None and scenario_id is not None:
            results[scenario_id] = outcome.envelope
    outcomes.extend(_check_inventory(root, p, d, results) for p, d in found.inventories)
    if not found.scenarios:
        raise CliError(ErrorCode.DATA_INVALID, f"no scenarios found under {root}")
    return outcomes
