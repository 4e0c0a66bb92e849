"""The contracts a surface offers (``runport mcp``, ``runport serve``): every contract file in
one folder, keyed by id.

Loading happens once, at start, so a client sees a stable surface and a broken file is
reported to the operator (on stderr) instead of to every caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from runport.contracts import ErrorCode
from runport.core import (
    Contract,
    ContractError,
    DocumentError,
    is_contract_document,
    load_contract,
    load_document,
)

SUFFIXES = frozenset({".yaml", ".yml", ".json"})


class CatalogError(Exception):
    """The folder cannot be served: it is missing, or two files claim one contract id."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def input_schema(contract: Contract) -> dict[str, Any]:
    """A JSON Schema object for a contract's ``inputs``, so a client (an MCP host, the model
    behind it, a browser form) can fill them in without reading the YAML."""
    properties: dict[str, Any] = {}
    for name, spec in contract.inputs.items():
        schema: dict[str, Any] = dict(spec.json_schema)
        if spec.description and "description" not in schema:
            schema["description"] = spec.description
        properties[name] = schema
    required = [name for name, spec in contract.inputs.items() if spec.required]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


class Catalog(Mapping[str, Contract]):
    """Contracts by id. Read-only after loading, so handlers on many tasks may share it."""

    def __init__(self, entries: Mapping[str, tuple[Contract, Path | None]]) -> None:
        """``entries`` maps each id to its contract and the file it came from (or ``None``);
        ``load_catalog`` and ``Catalog.of`` build it."""
        self._entries = dict(entries)

    @classmethod
    def of(cls, contracts: Iterable[Contract]) -> Catalog:
        """A catalog of contracts already in memory (``parse_contract``, ``define_contract``);
        two with one id are a ``CatalogError``, as in a folder."""
        entries: dict[str, tuple[Contract, Path | None]] = {}
        for contract in contracts:
            if contract.id in entries:
                raise CatalogError(
                    ErrorCode.DATA_INVALID, f"contract id {contract.id!r} is given twice"
                )
            entries[contract.id] = (contract, None)
        return cls(entries)

    def __getitem__(self, key: str) -> Contract:
        return self._entries[key][0]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def path(self, contract_id: str) -> Path | None:
        """The file a contract was loaded from (``None`` for one given in memory)."""
        return self._entries[contract_id][1]

    def describe(self) -> list[dict[str, Any]]:
        """The contract listing every surface serves, sorted by id so clients see a stable
        order."""
        return [
            {
                "id": contract.id,
                "version": contract.version,
                "description": contract.description,
                "input_schema": input_schema(contract),
            }
            for contract in (self[key] for key in sorted(self))
        ]


def _candidates(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in SUFFIXES:
            yield path


def _looks_like_contract(path: Path) -> bool:
    """Whether a file is meant as a contract. Scenario and input files often sit next to
    contracts; they are passed over quietly, while a file that cannot even be parsed, or that
    claims a contract ``api_version`` (or has ``messages``), is loaded and any problem shown."""
    try:
        data = load_document(path)
    except DocumentError:  # an unreadable file is left to load_contract, which names the problem
        return True
    return is_contract_document(data)


def load_catalog(root: Path, *, warn: Callable[[str], None]) -> Catalog:
    """Load every contract under ``root``.

    A file that fails to load is reported through ``warn`` (one line) and skipped, so one bad
    contract does not take the others offline; two files with one id stop the start with
    both named, since either choice would silently hide a contract.
    """
    if not root.is_dir():
        raise CatalogError(ErrorCode.DATA_INVALID, f"contracts folder not found: {root}")
    inside = root.resolve()
    entries: dict[str, tuple[Contract, Path | None]] = {}
    for path in _candidates(root):
        if not path.resolve().is_relative_to(inside):
            # a symlink out of the folder would serve a file the operator never offered
            warn(f"skipped {path}: it resolves outside the contracts folder ({inside})")
            continue
        if not _looks_like_contract(path):
            continue
        try:
            contract = load_contract(path)
        except ContractError as error:
            warn(f"skipped {path}: {_first_problem(error)}")
            continue
        if contract.id in entries:
            raise CatalogError(
                ErrorCode.DATA_INVALID,
                f"contract id {contract.id!r} is defined twice: {entries[contract.id][1]} "
                f"and {path}",
            )
        entries[contract.id] = (contract, path)
    return Catalog(entries)


def _first_problem(error: ContractError) -> str:
    if not error.diagnostics:
        return str(error)
    first = error.diagnostics[0]
    where = f" (at {first.json_pointer})" if first.json_pointer else ""
    more = len(error.diagnostics) - 1
    tail = f" (+{more} more)" if more else ""
    return f"{first.code}: {first.message}{where}{tail}"
