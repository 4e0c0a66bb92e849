"""``runport scenarios check DIR``: every scenario under DIR played against its contract."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runport.cli._errors import NOT_OK

HELP = "scenario tools"


def configure(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(
        dest="scenarios_command", required=True, parser_class=type(parser)
    )
    check = commands.add_parser(
        "check",
        help="run every scenario under DIR against its contract, streamed and not",
        description="run every scenario under DIR against its contract, streamed and not",
    )
    check.add_argument("dir", type=Path, help="folder of contracts, scenarios and their inputs")


def main(args: argparse.Namespace) -> int:
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
