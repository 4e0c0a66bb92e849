"""``mcp_tools``: an MCP server's tools for any run, by the name the application offers.

The client itself lives in ``runport-mcp`` (``pip install 'runport[mcp]'``): it brings the
official ``mcp`` SDK, an HTTP client and a server stack, none of which the application layer
may import. It is found the way adapters are, through an entry point
(``runport.tool_sources``, name ``mcp``), so this module names no package above it.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any, Final, Self

from runport.application._tools import Tool
from runport.ports import PortError

__all__ = ["TOOL_SOURCE_GROUP", "ToolSet", "mcp_tools"]

TOOL_SOURCE_GROUP: Final = "runport.tool_sources"
"""The entry-point group of installed tool sources (``mcp``: ``runport.mcp.mcp_tools``)."""


class ToolSet(Sequence[Tool]):
    """Tools from elsewhere, and the connection they are called over: pass it as ``tools=``
    (or add it to a list of your own); :meth:`close`, or leaving its ``with`` block, ends the
    connection. ``runport.mcp.McpToolset`` is one."""

    @abstractmethod
    def close(self) -> None:
        """End the connection (a second close does nothing)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def mcp_tools(server: str | Sequence[str], **options: Any) -> ToolSet:
    """Connect to an MCP server (an ``http(s)://`` URL for streamable HTTP, or the command
    line of a stdio server) and offer its tools to any run: ``runport.mcp.mcp_tools``, whose
    keywords (``include``, ``prefix``, ``max_tools``, ``timeout``, ``call_timeout``, ``env``,
    ``cwd``, ``needs_approval``) ``options`` are. Without ``runport[mcp]`` installed:
    ``PortError(TQX_MCP_SERVER_FAILED)`` saying what to install."""
    found = {entry.name: entry for entry in entry_points(group=TOOL_SOURCE_GROUP)}
    if "mcp" not in found:
        raise PortError(
            "TQX_MCP_SERVER_FAILED",
            "MCP tools need the MCP client, which is not installed: pip install 'runport[mcp]'",
        )
    toolset = found["mcp"].load()(server, **options)
    if not isinstance(toolset, ToolSet):
        raise TypeError(f"the 'mcp' tool source made a {type(toolset).__name__}, not a ToolSet")
    return toolset
