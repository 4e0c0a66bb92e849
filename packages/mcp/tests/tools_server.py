"""A small MCP server the client tests start as a process of its own, written with the official
SDK's low-level ``Server``.

    python tools_server.py [--http] [--tools N] [--log FILE]

Over stdio unless ``--http``: then streamable HTTP on 127.0.0.1, on a port the system picks,
which it prints as its first line of stdout. Its tools: ``add`` (a structured result),
``shout`` (text), ``oops`` (an error result), ``count`` (progress, then text), ``record``
(appends its note to ``--log``), ``files.read``, ``where`` (a variable's value and the
working folder's name) and ``die`` (appends its note to ``--log``, then the process
exits mid-call). ``--tools N`` lists
``tool.7`` and N tools named ``tool_0`` … instead (each answers its own name), a thousand a
page.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

_NOTE = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
TOOLS = [
    types.Tool(
        name="add",
        description="Add two integers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    ),
    types.Tool(
        name="shout",
        description="The text in capitals.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 100}},
            "required": ["text"],
        },
    ),
    types.Tool(name="oops", description="Always fails.", input_schema={"type": "object"}),
    types.Tool(
        name="count",
        description="Count up to n, reporting each step as progress.",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    ),
    types.Tool(name="record", description="Write a note down.", input_schema=_NOTE),
    types.Tool(name="files.read", description="A dotted name.", input_schema={"type": "object"}),
    types.Tool(
        name="where",
        description="An environment variable and the working folder.",
        input_schema={"type": "object", "properties": {"variable": {"type": "string"}}},
    ),
    types.Tool(name="die", description="Write a note down, then crash.", input_schema=_NOTE),
]


PAGE = 1000
"""Tools per page of a listing: more are read by its cursor."""


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def server(count: int | None, log: str | None) -> Server[Any]:
    listed = (
        TOOLS
        if count is None
        else [
            types.Tool(
                name="tool.7", description="tool_7 to a model.", input_schema={"type": "object"}
            ),
            *(
                types.Tool(
                    name=f"tool_{i}", description=f"Tool {i}.", input_schema={"type": "object"}
                )
                for i in range(count)
            ),
        ]
    )

    def note(text: str) -> None:
        assert log is not None, "--log is needed for record and die"
        with open(log, "a", encoding="utf-8") as file:
            file.write(text + "\n")

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE
        following = str(end) if end < len(listed) else None
        return types.ListToolsResult(tools=listed[start:end], next_cursor=following)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        if count is not None:
            return _text(params.name)
        if params.name == "add":
            total = {"sum": arguments["a"] + arguments["b"]}
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps(total))], structured_content=total
            )
        if params.name == "shout":
            return _text(str(arguments["text"]).upper())
        if params.name == "count":
            n = int(arguments["n"])
            for step in range(1, n + 1):
                await ctx.session.report_progress(step, total=n, message=f"step {step}")
            return _text(f"counted to {n}")
        if params.name == "oops":
            return _text("the oops tool always fails", error=True)
        if params.name == "where":
            value = os.environ.get(str(arguments["variable"]), "unset")
            return _text(f"{value} in {os.path.basename(os.getcwd())}")
        if params.name == "files.read":
            return _text("read by its own name")
        if params.name == "record":
            note(str(arguments["note"]))
            return _text("noted")
        if params.name == "die":
            note(str(arguments["note"]))
            sys.stdout.flush()
            os._exit(3)
        return _text(f"unknown tool {params.name!r}", error=True)

    return Server("runport-test-tools", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--tools", type=int)
    parser.add_argument("--log")
    args = parser.parse_args()
    app = server(args.tools, args.log)
    if not args.http:

        async def stdio() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await app.run(read_stream, write_stream, app.create_initialization_options())

        anyio.run(stdio)
        return
    import uvicorn

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    print(listener.getsockname()[1], flush=True)
    config = uvicorn.Config(app.streamable_http_app(), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
