"""The ``runport`` command: a parser and a table of commands, one module each (``_cmd_*``).

Each command module holds ``HELP``, ``configure(parser)`` and ``main(args) -> int``; this
module only builds the parser from the table, dispatches, and turns a :class:`CliError` into
its one line on stderr.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from importlib.metadata import distributions
from types import ModuleType
from typing import Any, NoReturn

from runport.cli import (
    _cmd_adapters,
    _cmd_batch,
    _cmd_conformance,
    _cmd_mcp,
    _cmd_record,
    _cmd_run,
    _cmd_scenarios,
    _cmd_serve,
    _cmd_validate,
)
from runport.cli._errors import USAGE, CliError
from runport.cli._safe import terminal_safe
from runport.cli._verbose import verbose_logging

COMMANDS: dict[str, ModuleType] = {
    "run": _cmd_run,
    "validate": _cmd_validate,
    "scenarios": _cmd_scenarios,
    "adapters": _cmd_adapters,
    "conformance": _cmd_conformance,
    "mcp": _cmd_mcp,
    "serve": _cmd_serve,
    "batch": _cmd_batch,
    "record": _cmd_record,
}


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 1."""

    def error(self, message: str) -> NoReturn:
        raise CliError("usage", f"{message} (see `{self.prog} --help`)")


def installed_versions() -> list[tuple[str, str]]:
    """Every installed runport distribution and its version, by name."""
    found: dict[str, str] = {}
    for dist in distributions():
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
        if name == "runport" or name.startswith("runport-"):
            found.setdefault(name, dist.version)
    return sorted(found.items())


class _Versions(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help=kwargs.get("help"))

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
        for name, version in installed_versions():
            sys.stdout.write(f"{name} {version}\n")
        sys.stdout.flush()
        parser.exit()


def parser() -> argparse.ArgumentParser:
    top = Parser(prog="runport", description="Run LLM prompt contracts through runtime adapters.")
    top.add_argument(
        "--version", action=_Versions, help="print each installed runport distribution's version"
    )
    top.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log more to stderr: -v INFO, -vv the wire at DEBUG (never keys or bodies)",
    )
    commands = top.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, module in COMMANDS.items():
        module.configure(commands.add_parser(name, help=module.HELP, description=module.HELP))
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """The ``runport`` command. Never shows a traceback for a failure it can name."""
    with terminal_safe():
        try:
            args = parser().parse_args(argv)
            with verbose_logging(args.verbose):
                status: int = COMMANDS[args.command].main(args)
            return status
        except CliError as error:
            sys.stderr.write(f"runport: error: {error.code}: {error.message}\n")
            return error.status
        except BrokenPipeError:
            return USAGE
        except KeyboardInterrupt:
            sys.stderr.write("runport: interrupted\n")
            return 130
        except Exception as error:  # the last resort of "never a traceback"
            sys.stderr.write(
                f"runport: error: internal: unexpected {type(error).__name__}: {error} "
                "(a defect in runport or in a plugin: please report it with the command)\n"
            )
            return USAGE
