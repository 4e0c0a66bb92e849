"""``runport scenarios check DIR``: run every scenario under DIR against its contract and
compare the outcome with the expectations the scenario states.

A one-turn scenario is one model turn (``execute_contract``); a scenario of several turns is a
run (``run`` and ``run_stream``: tool turns and corrections), its tools answered from the
scenario (``runport.cli._scenario_tools``). Either way the outcome is compared as an
:class:`Observed`, streamed and not.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runport.application import RunError, RunResult, execute_contract, run, run_stream
from runport.cli._errors import CliError
from runport.cli._files import read_data, read_request
from runport.cli._scenario_tools import ScenarioTools
from runport.contracts import ErrorCode, ExecutionReceipt, OperationEnvelope
from runport.core import (
    Contract,
    ContractError,
    DocumentError,
    PartDigest,
    Scenario,
    ScenarioError,
    compile_contract,
    is_contract_document,
    is_scenario_document,
    load_contract,
    load_document,
    load_scenario,
    part_digests,
)
from runport.mock import ScriptedRuntime

SUFFIXES = frozenset({".json", ".yaml", ".yml"})


@dataclass(frozen=True)
class Observed:
    """What a played scenario ended in, whether one turn or a run."""

    ok: bool
    codes: tuple[str, ...]
    errors: tuple[str, ...]
    receipt: ExecutionReceipt | None

    @classmethod
    def of_envelope(cls, envelope: OperationEnvelope) -> Observed:
        return cls(
            ok=envelope.ok,
            codes=tuple(sorted({d.code for d in envelope.diagnostics})),
            errors=tuple(sorted({d.code for d in envelope.diagnostics if d.severity == "error"})),
            receipt=envelope.result,
        )

    @classmethod
    def of_run(cls, outcome: RunResult | RunError) -> Observed:
        if isinstance(outcome, RunResult):
            return cls(ok=True, codes=(), errors=(), receipt=outcome.receipts[-1])
        codes = tuple(sorted({outcome.code, *(d.code for d in outcome.diagnostics)}))
        receipts = outcome.partial.receipts
        return cls(ok=False, codes=codes, errors=codes, receipt=receipts[-1] if receipts else None)


@dataclass
class Outcome:
    name: str
    problems: list[str] = field(default_factory=list)
    observed: Observed | None = None


@dataclass
class _Found:
    contracts: dict[str, Contract] = field(default_factory=dict)
    scenarios: list[tuple[Path, str | None]] = field(default_factory=list)
    inventories: list[tuple[Path, Any]] = field(default_factory=list)
    broken: list[Outcome] = field(default_factory=list)


def _files(root: Path) -> Iterator[Path]:
    """The files under ``root`` (resolved), leaving out any symlink that leads outside it."""
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in SUFFIXES and path.resolve().is_relative_to(root):
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
        contract = _contract_for(scenario, contracts, root, path)
        inputs: dict[str, Any] = {}
        context: dict[str, Any] | None = None
        fixture: Any = None
        if scenario.input is not None:
            named = _inside(root, path.parent, scenario.input)
            inputs, context, fixture = read_request(named, contract, inside=root)
        if scenario.expected_output is not None:
            fixture = read_data(
                _inside(root, path.parent, scenario.expected_output), what="expected output"
            )
    except (ScenarioError, CliError) as error:
        outcome.problems.append(str(error))
        return outcome
    if len(scenario.turns) > 1:
        if fixture is not None:
            outcome.problems.append(
                "fixture_output and expected_output are for one-turn scenarios; "
                "a scenario of several turns is played as a run"
            )
            return outcome
        plain, streamed, played = _play_run(contract, scenario, inputs, context)
        if plain.ok and played < len(scenario.turns):
            outcome.problems.append(
                f"the run ended after {played} of the scenario's {len(scenario.turns)} turns"
            )
    else:
        plain, streamed = _play_turn(contract, scenario, inputs, context, fixture)
    outcome.observed = plain
    if streamed != plain:
        outcome.problems.append(_disagreement(plain, streamed))
    outcome.problems.extend(
        expectation_problems(scenario, plain, parts=request_parts(contract, inputs, context))
    )
    return outcome


def request_parts(
    contract: Contract, inputs: dict[str, Any], context: dict[str, Any] | None
) -> tuple[PartDigest, ...] | None:
    """The image and file parts the contract's request holds with these values (``None`` when
    it does not compile: the outcome says why)."""
    try:
        interaction = compile_contract(contract, inputs=inputs, context=context)
    except ContractError:
        return None
    return part_digests(interaction.messages)


def _play_turn(
    contract: Contract,
    scenario: Scenario,
    inputs: dict[str, Any],
    context: dict[str, Any] | None,
    fixture: Any,
) -> tuple[Observed, Observed]:
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
    return Observed.of_envelope(plain), Observed.of_envelope(streamed)


def _play_run(
    contract: Contract, scenario: Scenario, inputs: dict[str, Any], context: dict[str, Any] | None
) -> tuple[Observed, Observed, int]:
    """Play the scenario as a run, plain then streamed; also how many turns the plain run took."""
    outcomes: list[RunResult | RunError] = []
    played: list[int] = []
    for streamed in (False, True):
        tools = ScenarioTools(scenario).tools(contract.tools)
        runtime = ScriptedRuntime(scenario)
        try:
            if streamed:
                result = run_stream(
                    contract,
                    runtime,
                    inputs=inputs,
                    context=context,
                    tools=tools,
                    on_event=lambda event: None,
                )
            else:
                result = run(contract, runtime, inputs=inputs, context=context, tools=tools)
        except RunError as error:
            outcomes.append(error)
        else:
            outcomes.append(result)
        played.append(runtime.stats().attempts)
    plain, streamed_outcome = outcomes
    return Observed.of_run(plain), Observed.of_run(streamed_outcome), played[0]


def _contract_for(
    scenario: Scenario, contracts: dict[str, Contract], root: Path, path: Path
) -> Contract:
    """The contract a scenario names: by id among the folder's contracts, or by a path
    relative to the scenario file (what ``runport record`` writes)."""
    if scenario.contract is not None and scenario.contract not in contracts:
        named = _inside(root, path.parent, scenario.contract)
        if named.is_file():
            try:
                return load_contract(named)
            except ContractError as error:
                raise CliError(error.diagnostics[0].code, str(error)) from None
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


def _disagreement(plain: Observed, streamed: Observed) -> str:
    """How the two plays differ, naming the reasoning when that is where."""
    said = "the streamed and the non-streamed play disagree"
    reasoning = [None if o.receipt is None else o.receipt.reasoning for o in (plain, streamed)]
    if reasoning[0] != reasoning[1]:
        return f"{said} on reasoning"
    return said


def _status(observed: Observed) -> str:
    return "success" if observed.ok else "failure"


def expectation_problems(
    scenario: Scenario, observed: Observed, *, parts: tuple[PartDigest, ...] | None = None
) -> list[str]:
    """Every expectation the scenario states that the observed outcome (and the request's
    ``parts``, when known) does not meet."""
    return scenario.expectations.compare(
        ok=observed.ok,
        codes=observed.codes,
        errors=observed.errors,
        receipt=observed.receipt,
        parts=parts,
    )


def _check_inventory(root: Path, path: Path, data: Any, results: dict[str, Observed]) -> Outcome:
    outcome = Outcome(f"inventory {path.relative_to(root)}")
    for entry in data["scenarios"]:
        if not isinstance(entry, dict) or "id" not in entry:
            outcome.problems.append("an inventory entry without an id")
            continue
        observed = results.get(entry["id"])
        if observed is None:
            outcome.problems.append(f"{entry['id']}: no such scenario was run")
            continue
        expected = entry.get("expectation") or {}
        receipt = observed.receipt
        errors = observed.errors
        actual = {
            "status": _status(observed),
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
    results: dict[str, Observed] = {}
    for path, scenario_id in found.scenarios:
        outcome = _check_scenario(root, path, found.contracts)
        outcomes.append(outcome)
        if outcome.observed is not None and scenario_id is not None:
            results[scenario_id] = outcome.observed
    outcomes.extend(_check_inventory(root, p, d, results) for p, d in found.inventories)
    if not found.scenarios:
        raise CliError(ErrorCode.DATA_INVALID, f"no scenarios found under {root}")
    return outcomes
