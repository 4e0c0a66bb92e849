"""``runport validate CONTRACT``: every problem of a contract, and each of its evals compiled."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from runport.cli._errors import NOT_OK, CliError
from runport.cli._output import diagnostic_line
from runport.contracts import ErrorCode
from runport.core import (
    ContractError,
    RuntimePolicyWarning,
    compile_contract,
    is_text_schema,
    load_contract,
    strict_schema,
)

HELP = "check a contract and compile its evals"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("contract", type=Path, help="contract file (YAML)")


def main(args: argparse.Namespace) -> int:
    if not args.contract.is_file():
        raise CliError(ErrorCode.DATA_INVALID, f"contract file not found: {args.contract}")
    try:
        with warnings.catch_warnings(record=True) as heard:
            warnings.simplefilter("always", RuntimePolicyWarning)
            contract = load_contract(args.contract)
    except ContractError as error:
        for diagnostic in error.diagnostics:
            sys.stderr.write(f"runport: error: {diagnostic_line(diagnostic)}\n")
        return NOT_OK
    for warning in heard:
        if issubclass(warning.category, RuntimePolicyWarning):
            sys.stderr.write(f"runport: warning: {warning.message}\n")
        else:
            warnings.warn(warning.message, warning.category, stacklevel=1)
    failures = 0
    for index, case in enumerate(contract.evals):
        try:
            compile_contract(contract, inputs=case.inputs, context=case.context)
        except ContractError as error:
            for diagnostic in error.diagnostics:
                failures += 1
                sys.stderr.write(
                    f"runport: error: eval {case.id!r} (/evals/{index}): "
                    f"{diagnostic_line(diagnostic)}\n"
                )
    if failures:
        return NOT_OK
    schema = contract.output_schema
    if not is_text_schema(schema) and strict_schema(schema) is None:
        # Not an error: the answer is still validated against this very schema. But OpenAI's
        # strict structured output cannot carry it, so the provider constrains less.
        sys.stderr.write(
            "runport: warning: output_schema is outside OpenAI's strict structured-output subset "
            "(every object closed, every property required or nullable, a limited keyword set), "
            "so it is sent with strict: false\n"
        )
    sys.stdout.write(
        f"{contract.id} {contract.version}: valid ({len(contract.evals)} eval(s) compiled)\n"
    )
    return 0
