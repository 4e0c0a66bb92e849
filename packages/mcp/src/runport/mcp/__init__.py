"""runport's MCP server (docs/cli.md): ``list_contracts`` and ``execute_contract`` over stdio,
streaming every event as a progress notification while a call runs.

``runport mcp`` is the usual way in; ``prepare`` + ``serve_stdio`` are what it calls, and
``create_server`` builds a server over any catalog and adapter factory (in-process tests,
other transports). The catalog and the adapter factory live in ``runport.application``
(``runport serve`` shares them) and are re-exported here.
"""

from runport.application import (
    Catalog,
    CatalogError,
    adapter_factory,
    input_schema,
    load_catalog,
)
from runport.mcp._serve import prepare, serve_stdio
from runport.mcp._server import (
    EXECUTE_CONTRACT,
    LIST_CONTRACTS,
    AdapterFactory,
    CallCancelled,
    create_server,
)

__all__ = [
    "EXECUTE_CONTRACT",
    "LIST_CONTRACTS",
    "AdapterFactory",
    "CallCancelled",
    "Catalog",
    "CatalogError",
    "adapter_factory",
    "create_server",
    "input_schema",
    "load_catalog",
    "prepare",
    "serve_stdio",
]
