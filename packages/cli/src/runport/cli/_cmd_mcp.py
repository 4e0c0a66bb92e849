"""``runport mcp``: serve a folder of contracts to an MCP client over stdio.

``runport.mcp`` (and the MCP SDK under it) is imported only here, so the command line works
without the optional ``runport[mcp]`` extra and says what to install when it is missing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from runport.cli._errors import CliError
from runport.cli._surfaces import add_folder_options, extra_missing, warn

INSTALL_HINT = "runport mcp needs the runport-mcp package: pip install 'runport[mcp]'"
HELP = "serve a folder of contracts to an MCP client (stdio)"


def configure(parser: argparse.ArgumentParser) -> None:
    add_folder_options(parser)


def main(args: argparse.Namespace) -> int:
    return serve(args.contracts, adapter=args.adapter, scenario=args.scenario)


def serve(contracts: Path, *, adapter: str, scenario: Path | None) -> int:
    try:
        from runport.mcp import prepare, serve_stdio
    except ModuleNotFoundError as error:
        if not extra_missing(error, "runport.mcp", "mcp"):
            raise
        raise CliError("usage", INSTALL_HINT) from None

    from runport.application import CatalogError

    try:
        server = prepare(contracts, adapter=adapter, scenario=scenario, warn=warn)
    except CatalogError as error:
        raise CliError(error.code, error.message) from None
    serve_stdio(server)
    return 0
