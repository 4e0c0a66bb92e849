"""``runport record CONTRACT --input FILE --adapter NAME --out SCENARIO.yaml``: one streamed
turn, written as a scenario the mock replays to the same receipt (docs/batch.md)."""

from __future__ import annotations

import argparse
import base64
import copy
import mimetypes
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from runport.application import execute_contract
from runport.cli._check import request_parts
from runport.cli._cmd_run import adapter
from runport.cli._errors import CliError
from runport.cli._files import read_request
from runport.cli._output import report
from runport.cli._record import (
    comparable,
    dump_json,
    input_document,
    kept_unknown,
    redact,
    redact_answer,
    redacted_blocks,
    split_pointers,
    turn_events,
)
from runport.contracts import ErrorCode, OperationEnvelope, StreamEvent
from runport.core import Contract, ContractError, ScenarioError, load_contract, parse_scenario
from runport.mock import ScriptedRuntime

HELP = "run a contract once, streamed, and write what the adapter did as a mock scenario"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("contract", type=Path, help="contract file (YAML)")
    parser.add_argument("--input", type=Path, help="inputs file (JSON or YAML)")
    parser.add_argument("--adapter", default="mock", help="adapter name (default: mock)")
    parser.add_argument("--scenario", type=Path, help="scenario file for the mock adapter")
    parser.add_argument("--out", type=Path, required=True, help="scenario file to write (YAML)")
    parser.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="POINTER",
        help="replace a value by JSON pointer: /inputs/…, /context/… or /output… (repeatable)",
    )


def _relative(target: Path, scenario: Path) -> str:
    return Path(os.path.relpath(target.resolve(), scenario.resolve().parent)).as_posix()


def part_files(contract: Contract, request: dict[str, Any], out: Path) -> dict[str, Any]:
    """The recorded input with each image or file value's bytes written beside the scenario
    (``<stem>.<name><extension>``) and named by path, so the recording stays readable and
    within the one-string bound however large the image."""
    kept = copy.deepcopy(request)
    for root, specs in (("inputs", contract.inputs), ("context", contract.context)):
        values = kept.get(root) or {}
        for name, spec in specs.items():
            value = values.get(name)
            if spec.kind is None or not isinstance(value, dict) or "data" not in value:
                continue
            part = dict(value)
            data = part.pop("data")
            suffix = mimetypes.guess_extension(part.get("media_type", "")) or ".bin"
            target = out.with_name(f"{out.stem}.{name}{suffix}")
            target.write_bytes(base64.b64decode(data))
            values[name] = {"path": target.name, **part}
    return kept


def _held_as(held: str) -> str:
    """A part digest holds a URL (``https:…``) or the hex SHA-256 of the bytes."""
    return "url" if held.startswith("https:") else "sha256"


def _expectations(envelope: OperationEnvelope) -> dict[str, Any]:
    expect: dict[str, Any] = {
        "status": "success" if envelope.ok else "failure",
        "diagnostics": sorted({d.code for d in envelope.diagnostics}),
    }
    if envelope.result is not None:
        expect["output_fingerprint"] = envelope.result.output_fingerprint
        if envelope.result.output_schema_valid is not None:
            expect["output_schema_valid"] = envelope.result.output_schema_valid
        if envelope.result.reasoning:
            expect["reasoning"] = [part.text for part in envelope.result.reasoning]
    return expect


def main(args: argparse.Namespace) -> int:
    if not args.contract.is_file():
        raise CliError(ErrorCode.DATA_INVALID, f"contract file not found: {args.contract}")
    try:
        contract = load_contract(args.contract)
    except ContractError as error:
        raise CliError(error.diagnostics[0].code, str(error)) from None
    on_request, on_answer = split_pointers(args.redact)
    inputs, context, fixture = (
        ({}, None, None) if args.input is None else read_request(args.input, contract)
    )
    runtime = adapter(args.adapter, args.scenario)
    seen: list[StreamEvent] = []
    live = execute_contract(
        contract, runtime, inputs=inputs, context=context, fixture_output=fixture,
        on_event=seen.append,
    )  # fmt: skip
    request = input_document(inputs, context, fixture)
    for pointer in on_request:
        request, found = redact(request, pointer)
        if not found:
            raise CliError("usage", f"--redact {pointer!r} names no value in the input")
    events = redact_answer(turn_events(seen), live.result, on_answer)
    out: Path = args.out
    descriptor = runtime.descriptor()
    document: dict[str, Any] = {
        "api_version": "runport.mock/v1",
        "id": out.stem,
        "contract": _relative(args.contract, out),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.input is not None:
        request_file = out.with_name(f"{out.stem}.input.json")
        kept = part_files(contract, request, out)
        request_file.write_text(dump_json(kept), encoding="utf-8")
        document["input"] = request_file.name
    document["turns"] = [{"events": events}]
    try:
        scenario = parse_scenario(document, source=str(out))
    except ScenarioError as error:
        raise CliError(error.code, f"the recording is not a valid scenario: {error}") from None
    replayed = execute_contract(
        contract,
        ScriptedRuntime(scenario),
        inputs=request["inputs"],
        context=request.get("context"),
        fixture_output=request.get("fixture_output"),
    )
    if not (args.redact or comparable(replayed.result) == comparable(live.result)):
        raise CliError(
            ErrorCode.RUNTIME_INVALID_RESPONSE,
            "the recorded stream does not replay to the receipt the adapter gave "
            "(the adapter's receipt disagrees with its own stream)",
        )
    document["expect"] = _expectations(replayed)
    parts = request_parts(contract, request["inputs"], request.get("context"))
    if parts:
        document["expect"]["parts"] = [
            {"kind": kind, "media_type": media_type, _held_as(held): held}
            for kind, media_type, held in parts
        ]
    document["turns"] = document.pop("turns")  # expect before turns, as people write them
    header = (
        f"# Recorded by `runport record` from adapter {descriptor.id!r}"
        + (f" (model {descriptor.model!r})" if descriptor.model else "")
        + (f"; redacted: {', '.join(args.redact)}" if args.redact else "")
        + "\n"
    )
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    out.write_text(header + text, encoding="utf-8")
    sys.stderr.write(f"runport: recorded {len(events)} event(s) into {out}\n")
    redacted = redacted_blocks(live.result)
    if redacted:
        sys.stderr.write(
            f"runport: {redacted} redacted reasoning block(s) not recorded (a scenario replays "
            "reasoning text only)\n"
        )
    unknown = kept_unknown(live.result)
    if unknown:
        sys.stderr.write(
            f"runport: {unknown} object(s) of kinds runport does not read, kept in the receipt's "
            "provider_metadata, not recorded (a scenario has no event for them)\n"
        )
    report(live, sys.stderr)  # a recorded failure is a recording all the same
    return 0
