"""``runport mcp``: serve a folder of contracts to an MCP client over stdio.

``runport.mcp`` (and the MCP SDK under it) is imported only here, so the command line works
without the optional ``runport[mcp]`` extra and says what to install when it is missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runport.cli._errors import CliError

INSTALL_HINT = "runport mcp needs the runport-mcp package: pip install 'runport[mcp]'"
HELP = "serve a folder of contracts to an MCP client (stdio)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--contracts", type=Path, required=True, help="folder of contract files")
    parser.add_argument("--adapter", default="mock", help="adapter name (default: mock)")
    parser.add_argument("--scenario", type=Path, help="scenario file for the mock adapter")


def main(args: argparse.Namespace) -> int:
    return serve(args.contracts, adapter=args.adapter, scenario=args.scenario)


def _missing(error: ModuleNotFoundError) -> bool:
    name = error.name or ""
    return name in {"runport.mcp", "mcp"} or name.startswith(("runport.mcp.", "mcp."))


def serve(contracts: Path, *, adapter: str, scenario: Path | None) -> int:
    try:
        from runport.mcp import prepare, serve_stdio
    except ModuleNotFoundError as error:
        if not _missing(error):
            raise
        raise CliError("usage", INSTALL_HINT) from None

    from runport.application import CatalogError

    def warn(message: str) -> None:
        sys.stderr.write(f"runport: warning: {message}\n")
        sys.stderr.flush()

    try:
        server = prepare(contracts, adapter=adapter, scenario=scenario, warn=warn)
    except CatalogError as error:
        raise CliError(error.code, error.message) from None
    serve_stdio(server)
    return 0
