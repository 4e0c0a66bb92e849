"""``runport run CONTRACT``: one turn (``execute_contract``), or a whole run with ``--tools``
and/or ``--mcp`` (an MCP server's tools)."""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

from runport.application import (
    AdapterNotFoundError,
    adapter_entry_points,
    create_adapter,
    execute_contract,
)
from runport.cli._cmd_adapters import takes
from runport.cli._errors import CliError
from runport.cli._files import request
from runport.cli._output import ReasoningToStderr, report, write_reasoning
from runport.cli._paused import Resume, add_resume_options, seal
from runport.cli._save_files import prepare_folder, save_files
from runport.cli._sinks import stream_sink
from runport.contracts import ErrorCode, OperationEnvelope
from runport.core import Contract, ContractError, ScenarioError, load_contract
from runport.ports import RuntimeAdapter

HELP = "execute a contract once (or a whole run with --tools or --mcp)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("contract", type=Path, help="contract file (YAML)")
    parser.add_argument(
        "--input",
        type=Path,
        help="inputs file (JSON or YAML); optional when the contract needs no inputs",
    )
    parser.add_argument(
        "-i",
        "--input-value",
        dest="inline",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one input inline (VALUE parsed as JSON when it parses, else a string); "
        "repeatable; wins over --input",
    )
    parser.add_argument("--adapter", default="mock", help="adapter name (default: mock)")
    parser.add_argument("--scenario", type=Path, help="scenario file for the mock adapter")
    parser.add_argument("--stream", action="store_true", help="write text as it arrives")
    parser.add_argument("--json", action="store_true", help="stream events as JSON lines")
    parser.add_argument(
        "--reasoning",
        action="store_true",
        help="write the model's reasoning to stderr (as it arrives with --stream or --json); "
        "stdout keeps only the answer",
    )
    parser.add_argument(
        "--save-files",
        type=Path,
        metavar="DIR",
        help="write the files and images the model generated into DIR (made if missing; "
        "runport names each file)",
    )
    parser.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="run tool turns and corrections with these tools (a list of Tool or functions)",
    )
    parser.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="CMD_OR_URL",
        help="run tool turns with an MCP server's tools: the command line that starts it "
        "(stdio) or its http(s) URL (streamable HTTP); repeatable, one server each "
        "(needs runport[mcp])",
    )
    add_resume_options(parser)


def adapter(name: str, scenario: Path | None) -> RuntimeAdapter:
    """Start adapter ``name``; ``--scenario`` only for an adapter whose factory takes one."""
    entry = adapter_entry_points().get(name)
    if scenario is not None and entry is not None and not _takes_scenario(entry):
        raise CliError(
            "usage",
            f"--scenario is for the mock adapter; adapter {name!r} takes none "
            f"(drop --scenario, or use --adapter mock)",
        )
    options = {} if scenario is None else {"scenario": str(scenario)}
    try:
        return create_adapter(name, **options)
    except AdapterNotFoundError as error:
        raise CliError(ErrorCode.DATA_INVALID, str(error)) from None
    except ScenarioError as error:
        raise CliError(error.code, str(error)) from None
    except Exception as error:  # a plugin's factory is third-party code: name, do not crash
        raise CliError(
            ErrorCode.DATA_INVALID,
            f"cannot start adapter {name!r}: {type(error).__name__}: {error}",
        ) from None


def _takes_scenario(entry: EntryPoint) -> bool:
    try:
        factory = entry.load()
    except Exception:  # starting it reports why it does not load
        return True
    return takes(factory, "scenario")


def main(args: argparse.Namespace) -> int:
    if not args.contract.is_file():
        raise CliError(ErrorCode.DATA_INVALID, f"contract file not found: {args.contract}")
    try:
        contract: Contract | Path = load_contract(args.contract)
    except ContractError:
        contract = args.contract  # execute_contract reports it, in the envelope
    loaded = contract if isinstance(contract, Contract) else None
    inputs, context, fixture = request(args.input, args.inline, loaded)
    folder = None if args.save_files is None else prepare_folder(args.save_files)
    runtime = adapter(args.adapter, args.scenario)
    resume = Resume(args)
    if resume.continuation is not None:
        if args.tools is None and not args.mcp:
            raise CliError(
                "usage", "--continuation resumes a run with tools: give its --tools or --mcp"
            )
        if inputs or context:
            raise CliError(
                "usage",
                "--continuation resumes the paused run's own conversation: drop --input and -i",
            )
    if args.tools is not None or args.mcp:
        from runport.cli._run_tools import load_tools, mcp_servers, run_command

        if fixture is not None:
            raise CliError(
                "usage",
                "fixture_output (in the --input file) is for one turn; a run with --tools "
                "or --mcp takes none (drop it, or run without them)",
            )
        local = [] if args.tools is None else load_tools(args.tools)
        with mcp_servers(args.mcp) as served:
            return run_command(
                args.contract,
                runtime,
                inputs=inputs,
                context=context,
                tools=[*local, *served],
                stream=args.stream,
                json_lines=args.json,
                reasoning=args.reasoning,
                save_to=folder,
                resume=resume.keywords(seal()),
            )
    if args.json or args.stream:
        with stream_sink(json_lines=args.json) as sink:
            if getattr(sink, "partial_output", False):
                sink.structured = structured(args.contract)  # type: ignore[attr-defined]
            on_event = ReasoningToStderr(sink) if args.reasoning else sink
            envelope = execute_contract(
                contract,
                runtime,
                inputs=inputs,
                context=context,
                fixture_output=fixture,
                on_event=on_event,
                partial_output=getattr(sink, "partial_output", False),
            )
            on_event.finish(envelope)
    else:
        envelope = execute_contract(
            contract, runtime, inputs=inputs, context=context, fixture_output=fixture
        )
        if args.reasoning and envelope.result is not None:
            write_reasoning(sys.stderr, [envelope.result])
        _print_envelope(envelope)
    if folder is not None and envelope.result is not None:
        saved(save_files(folder, [envelope.result]))
    return report(envelope, sys.stderr)


def saved(paths: list[Path]) -> None:
    """Say on stderr where each generated file went (stdout keeps the answer)."""
    for path in paths:
        sys.stderr.write(f"runport: saved {path}\n")


def structured(contract: Path) -> bool:
    """Whether the contract's answer is JSON (its terminal view draws it as a tree)."""
    from runport.core import ContractError, DocumentError, is_text_schema, load_contract

    try:
        return not is_text_schema(load_contract(contract).output_schema)
    except (ContractError, DocumentError, OSError):  # the run reports it, with its code
        return False


def _print_envelope(envelope: OperationEnvelope) -> None:
    sys.stdout.write(json.dumps(envelope.model_dump(mode="json"), indent=2, ensure_ascii=False))
    sys.stdout.write("\n")
    sys.stdout.flush()
