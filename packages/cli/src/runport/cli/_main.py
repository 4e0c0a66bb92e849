from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from runport.application import AdapterNotFoundError, create_adapter, execute_contract
from runport.cli._errors import NOT_OK, USAGE, CliError
from runport.cli._files import read_request
from runport.cli._output import diagnostic_line, report
from runport.cli._sinks import stream_sink
from runport.contracts import ErrorCode, OperationEnvelope
from runport.core import ContractError, ScenarioError, compile_contract, load_contract
from runport.ports import RuntimeAdapter


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 1."""

    def error(self, message: str) -> NoReturn:
        raise CliError("usage", f"{message} (see `{self.prog} --help`)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="runport", description="Run LLM prompt contracts through runtime adapters."
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="execute a contract once")
    run.add_argument("contract", type=Path, help="contract file (YAML)")
    run.add_argument("--input", type=Path, required=True, help="inputs file (JSON or YAML)")
    run.add_argument("--adapter", default="mock", help="adapter name (default: mock)")
    run.add_argument("--scenario", type=Path, help="scenario file for the mock adapter")
    run.add_argument("--stream", action="store_true", help="write text as it arrives")
    run.add_argument("--json", action="store_true", help="stream events as JSON lines")
    run.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="run tool turns and corrections with these tools (a list of Tool or functions)",
    )

    validate = commands.add_parser("validate", help="check a contract and compile its evals")
    validate.add_argument("contract", type=Path)

    scenarios = commands.add_parser("scenarios", help="scenario tools")
    scenario_commands = scenarios.add_subparsers(
        dest="scenarios_command", required=True, parser_class=_Parser
    )
    check = scenario_commands.add_parser("check", help="run every scenario under DIR")
    check.add_argument("dir", type=Path)

    mcp = commands.add_parser("mcp", help="serve a folder of contracts to an MCP client (stdio)")
    mcp.add_argument("--contracts", type=Path, required=True, help="folder of contract files")
    mcp.add_argument("--adapter", default="mock", help="adapter name (default: mock)")
    mcp.add_argument("--scenario", type=Path, help="scenario file for the mock adapter")

    adapters = commands.add_parser("adapters", help="list the installed adapters")
    adapters.add_argument("--scenario", type=Path, help="start the mock with this scenario")
    adapters.add_argument("--json", action="store_true", help="write the list as JSON")

    conformance = commands.add_parser(
        "conformance", help="run the conformance suite on an adapter factory"
    )
    conformance.add_argument(
        "target", metavar="MODULE:FACTORY", help="a callable taking the suite's upstream"
    )
    conformance.add_argument(
        "--protocol",
        choices=["scenario", "openai-chat", "none"],
        default="scenario",
        help="what the factory's adapter speaks (default: scenario)",
    )
    return parser


def _adapter(name: str, scenario: Path | None) -> RuntimeAdapter:
    options = {} if scenario is None else {"scenario": str(scenario)}
    try:
        return create_adapter(name, **options)
    except AdapterNotFoundError as error:
        raise CliError(ErrorCode.DATA_INVALID, str(error)) from None
    except ScenarioError as error:
        raise CliError(error.code, str(error)) from None
    except (TypeError, ValueError, OSError) as error:
        raise CliError(ErrorCode.DATA_INVALID, f"cannot start adapter {name!r}: {error}") from None


def _run(args: argparse.Namespace) -> int:
    if not args.contract.is_file():
        raise CliError(ErrorCode.DATA_INVALID, f"contract file not found: {args.contract}")
    inputs, context, fixture = read_request(args.input)
    adapter = _adapter(args.adapter, args.scenario)
    if args.tools is not None:
        from runport.cli._runs_cmd import load_tools, run_command

        return run_command(
            args.contract,
            adapter,
            inputs=inputs,
            context=context,
            tools=load_tools(args.tools),
            stream=args.stream,
            json_lines=args.json,
        )
    if args.json or args.stream:
        with stream_sink(json_lines=args.json) as sink:
            envelope = execute_contract(
                args.contract,
                adapter,
                inputs=inputs,
                context=context,
                fixture_output=fixture,
                on_event=sink,
            )
            sink.finish(envelope)
    else:
        envelope = execute_contract(
            args.contract, adapter, inputs=inputs, context=context, fixture_output=fixture
        )
        _print_envelope(envelope)
    return report(envelope, sys.stderr)


def _print_envelope(envelope: OperationEnvelope) -> None:
    sys.stdout.write(json.dumps(envelope.model_dump(mode="json"), indent=2, ensure_ascii=False))
    sys.stdout.write("\n")
    sys.stdout.flush()


def _validate(args: argparse.Namespace) -> int:
    if not args.contract.is_file():
        raise CliError(ErrorCode.DATA_INVALID, f"contract file not found: {args.contract}")
    try:
        contract = load_contract(args.contract)
    except ContractError as error:
        for diagnostic in error.diagnostics:
            sys.stderr.write(f"runport: error: {diagnostic_line(diagnostic)}\n")
        return NOT_OK
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
    sys.stdout.write(
        f"{contract.id} {contract.version}: valid ({len(contract.evals)} eval(s) compiled)\n"
    )
    return 0


def _scenarios_check(args: argparse.Namespace) -> int:
    from runport.cli._check import check_folder

    outcomes = check_folder(args.dir)
    for outcome in outcomes:
        if outcome.problems:
            sys.stdout.write(f"FAIL {outcome.name}\n")
            for problem in outcome.problems:
                sys.stdout.write(f"     {problem}\n")
        else:
            sys.stdout.write(f"ok   {outcome.name}\n")
    failed = sum(1 for outcome in outcomes if outcome.problems)
    sys.stdout.write(f"{len(outcomes) - failed} passed, {failed} failed\n")
    return NOT_OK if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``runport`` command. Never shows a traceback for a failure it can name."""
    try:
        args = _parser().parse_args(argv)
        if args.command == "run":
            return _run(args)
        if args.command == "validate":
            return _validate(args)
        if args.command == "mcp":
            from runport.cli._mcp import serve

            return serve(args.contracts, adapter=args.adapter, scenario=args.scenario)
        if args.command == "adapters":
            from runport.cli._adapters_cmd import list_adapters

            return list_adapters(scenario=args.scenario, as_json=args.json)
        if args.command == "conformance":
            from runport.cli._conformance import run_conformance_command

            return run_conformance_command(args.target, protocol=args.protocol)
        return _scenarios_check(args)
    except CliError as error:
        sys.stderr.write(f"runport: error: {error.code}: {error.message}\n")
        return error.status
    except BrokenPipeError:
        return USAGE
    except KeyboardInterrupt:
        sys.stderr.write("runport: interrupted\n")
        return 130
