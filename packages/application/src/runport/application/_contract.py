"""What every way of calling a contract checks first: the contract itself, and whether the
adapter offers what it requires. One turn (``_envelope``) reports a problem as a diagnostic; a
run (``_plan``) raises it as a ``RunError``."""

from __future__ import annotations

import os

from runport.contracts import AdapterDescriptor, Diagnostic, ErrorCode
from runport.core import Contract, load_contract

ContractSource = Contract | str | os.PathLike[str]


def resolve_contract(contract_or_path: ContractSource) -> Contract:
    if isinstance(contract_or_path, Contract):
        return contract_or_path
    return load_contract(contract_or_path)


def missing_capabilities(required: list[str], descriptor: AdapterDescriptor) -> list[str]:
    offered = set(descriptor.capabilities)
    return [c for c in required if c not in offered]


def capability_diagnostic(missing: list[str], descriptor: AdapterDescriptor) -> Diagnostic:
    return Diagnostic(
        code=ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED,
        message=(
            f"adapter {descriptor.id!r} lacks the capabilities the contract requires: "
            + ", ".join(missing)
        ),
        json_pointer="/capabilities",
    )
