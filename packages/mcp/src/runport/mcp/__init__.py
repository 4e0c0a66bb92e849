"""runport's MCP server (docs/cli.md): ``list_contracts`` and ``execute_contract`` over stdio,
streaming every event as a progress notification while a call runs; and its MCP client:
``mcp_tools`` offers any MCP server's tools to a run (docs/runs.md, "Tools from an MCP server").

``runport mcp`` is the usual way in; ``prepare`` + ``serve_stdio`` are what it calls, and
``create_server`` builds a server over any catalog and adapter, or adapter factory
(in-process tests, other transports). The catalog (``load_catalog``) and the adapter
factory it takes live in ``runport.application``, which ``runport serve`` shares.
"""

from runport.mcp._client import DEFAULT_MAX_TOOLS, McpToolset, mcp_tools
from runport.mcp._serve import prepare, serve_stdio
from runport.mcp._server import (
    EXECUTE_CONTRACT,
    LIST_CONTRACTS,
    AdapterFactory,
    create_server,
)

__all__ = [
    "DEFAULT_MAX_TOOLS",
    "EXECUTE_CONTRACT",
    "LIST_CONTRACTS",
    "AdapterFactory",
    "McpToolset",
    "create_server",
    "mcp_tools",
    "prepare",
    "serve_stdio",
]
