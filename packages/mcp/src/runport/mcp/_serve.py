"""Starting the server: load the folder, check the adapter starts, then serve over stdio."""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from runport.application import async_adapter_factory, load_catalog
from runport.mcp._server import create_server


def _version() -> str:
    try:
        return metadata.version("runport-mcp")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0.0.0"


def prepare(
    contracts: Path,
    *,
    adapter: str = "mock",
    scenario: str | os.PathLike[str] | None = None,
    warn: Callable[[str], None],
) -> Server[Any]:
    """Everything ``runport mcp`` does before serving; raises ``CatalogError`` when the server
    cannot start (missing folder, duplicate contract ids, an adapter that does not start)."""
    catalog = load_catalog(contracts, warn=warn)
    if not catalog:
        warn(f"no contracts loaded from {contracts}")
    # With a scenario (the mock) each call gets a fresh adapter, playing it from its first
    # turn; any other adapter is made once, here, and shared by every call (one connection
    # pool), then closed when the session ends — as runport serve does.
    build = async_adapter_factory(adapter, scenario=scenario)
    return create_server(catalog, build if scenario is not None else build(), version=_version())


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's stdin/stdout until it disconnects."""

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
