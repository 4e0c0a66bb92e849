"""``runport conformance MODULE:FACTORY [--protocol P]``: the conformance suite from the shell.

``P`` is a built-in protocol's name, or ``MODULE:ATTR`` naming a ``WireProtocol`` of the
author's own (an instance, or a class made with no arguments).

``runport-conformance`` is an optional extra (it brings pytest and hypothesis), so it is
imported only here, when the command runs; without it the command says how to install it in
one line. A factory that makes ``AsyncRuntimeAdapter``s gets the async suite (the choice is
``run_conformance``'s). The suite's own pytest output — with its per-law summary — is the
report; a run in which every check was skipped exits 1, saying nothing was checked.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from typing import Any

from runport.cli._errors import USAGE, CliError

PROTOCOLS = (
    "scenario",
    "openai-chat",
    "azure-openai-chat",
    "openai-responses",
    "anthropic-messages",
    "vertex-anthropic",
    "gemini",
    "vertex-gemini",
    "bedrock-converse",
    "bedrock-anthropic",
    "ollama",
    "cohere-chat",
    "none",
)
"""The built-in protocols' names (``runport.conformance.PROTOCOLS``, which this command
imports only when it runs), and ``none``."""
HELP = "run the conformance suite on an adapter factory"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", metavar="MODULE:FACTORY", help="a callable taking the suite's upstream"
    )
    parser.add_argument(
        "--protocol",
        default="scenario",
        metavar="PROTOCOL",
        help=(
            "what the factory's adapter speaks: "
            + ", ".join(PROTOCOLS)
            + ", or MODULE:ATTR naming a WireProtocol (default: scenario)"
        ),
    )


def main(args: argparse.Namespace) -> int:
    return run_conformance_command(args.target, protocol=args.protocol)


def run_conformance_command(target: str, *, protocol: str) -> int:
    """Run the suite on the adapters ``target`` makes: 0 when every check passed, else 1."""
    if importlib.util.find_spec("runport.conformance") is None:
        raise CliError(
            "usage",
            "the conformance suite is not installed: pip install 'runport[conformance]'",
        )
    from runport.cli import _conformance_checks as checks
    from runport.conformance import ConformanceUsageError, run_conformance

    chosen = _protocol(protocol)
    checks.reset()
    try:
        code = run_conformance(
            target,
            protocol=chosen,
            pytest_args=("-p", checks.__name__),
        )
    except ConformanceUsageError as error:
        raise CliError("usage", str(error)) from None
    if code == 0 and not checks.checked:
        raise CliError(
            "usage",
            f"nothing was checked: every check was skipped (with --protocol {protocol}, "
            "name the protocol the adapter speaks, or hand the factory the suite's upstream)",
        )
    return 0 if code == 0 else USAGE


def _protocol(name: str) -> Any:
    """A built-in protocol's name as it is (``none``: ``None``), or the ``WireProtocol`` that
    ``MODULE:ATTR`` names (a class is made with no arguments)."""
    if name in PROTOCOLS:
        return None if name == "none" else name
    from runport.conformance import WireProtocol

    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise CliError(
            "usage",
            f"--protocol {name!r}: expected one of {', '.join(PROTOCOLS)}, or MODULE:ATTR "
            "naming a WireProtocol",
        )
    if os.getcwd() not in sys.path:  # the author's module, found where they stand
        sys.path.insert(0, os.getcwd())
    try:
        value = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise CliError("usage", f"--protocol {name!r}: cannot load it ({error})") from None
    if isinstance(value, type) and issubclass(value, WireProtocol):
        value = value()
    if not isinstance(value, WireProtocol):
        raise CliError(
            "usage",
            f"--protocol {name!r} is a {type(value).__name__}, not a WireProtocol "
            "(runport.conformance.WireProtocol)",
        )
    return value
