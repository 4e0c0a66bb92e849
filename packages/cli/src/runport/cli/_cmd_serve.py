"""``runport serve``: a folder of contracts over HTTP, with the playground page at ``/``.

``runport.server`` (and Starlette and uvicorn under it) is imported only here, so the command
line works without the optional ``runport[server]`` extra and says what to install when it is
missing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from runport.cli._errors import CliError
from runport.cli._surfaces import add_folder_options, extra_missing, warn

INSTALL_HINT = "runport serve needs the runport-server package: pip install 'runport[server]'"
HELP = "serve a folder of contracts over HTTP, with a playground page"
TOKEN_VARIABLE = "RUNPORT_SERVER_TOKEN"
REASONING_KEY_VARIABLE = "RUNPORT_SERVER_REASONING_KEY"
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def configure(parser: argparse.ArgumentParser) -> None:
    add_folder_options(parser)
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine)"
    )
    parser.add_argument(
        "--port", type=int, default=8000, help="port to bind (default: 8000; 0 picks a free one)"
    )
    parser.add_argument(
        "--token",
        help=f"require 'Authorization: Bearer TOKEN' on the API (default: ${TOKEN_VARIABLE})",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to call the API from its own pages (repeatable)",
    )
    parser.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help=(
            "the tools a chat's run may call (/chat and /agui): a list of Tool or functions, "
            "as runport run --tools takes"
        ),
    )
    parser.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="CMD_OR_URL",
        help=(
            "an MCP server whose tools a chat's run may call: the command line that starts it "
            "(stdio) or its http(s) URL; repeatable, as runport run --mcp takes"
        ),
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=1024 * 1024,
        metavar="BYTES",
        help=(
            "the largest request body taken (default: 1048576, 1 MiB); a chat carries its "
            "images as base64, about 4/3 of their size"
        ),
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST",
        help=(
            "a name (or name:port) the server may be reached by, besides the loopback names "
            "and --host; any other Host header is refused (repeatable)"
        ),
    )
    parser.add_argument(
        "--reasoning-key-file",
        type=Path,
        metavar="PATH",
        help=(
            "the key (at least 32 bytes) that seals the reasoning the chat routes send to the "
            "browser; servers behind one balancer share one (default: "
            f"${REASONING_KEY_VARIABLE}, else a new key at each start)"
        ),
    )
    add_resumable_options(parser)


def _reasoning_key(args: argparse.Namespace) -> bytes | None:
    """The key from ``--reasoning-key-file`` (its bytes, without the line end an editor
    adds), else from the environment; ``None`` lets the server draw one."""
    path: Path | None = args.reasoning_key_file
    if path is not None:
        try:
            key = path.read_bytes()
        except OSError as error:
            raise CliError("usage", f"cannot read --reasoning-key-file {path}: {error}") from None
        return key.rstrip(b"\r\n")
    value = os.environ.get(REASONING_KEY_VARIABLE)
    return value.encode() if value else None


def add_resumable_options(parser: argparse.ArgumentParser) -> None:
    """Heartbeats, and runs that survive a dropped connection (docs/server.md)."""
    parser.add_argument(
        "--heartbeat",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="send ': ping' on an event stream after this many quiet seconds (default: 15)",
    )
    parser.add_argument(
        "--resumable",
        action="store_true",
        help=(
            "runs outlive their connection: resume with GET /v1/runs/{id}/events and "
            "Last-Event-ID, stop with DELETE /v1/runs/{id}"
        ),
    )
    parser.add_argument(
        "--event-log",
        metavar="URL",
        help="where --resumable keeps runs: 'memory' (default, this process) or redis://HOST:PORT",
    )
    parser.add_argument(
        "--orphan-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="stop a resumable run no client has read for this long (default: 30)",
    )
    parser.add_argument(
        "--retention",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long a finished resumable run stays readable (default: 300)",
    )
    parser.add_argument(
        "--lease",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help=(
            "with a Redis log: within this long, readers of a run whose server process died "
            "get a Failed with TQX_RUN_PRODUCER_LOST (default: 5)"
        ),
    )


def _allowed_hosts(args: argparse.Namespace) -> list[str]:
    """``--allowed-host`` and the name given to ``--host``: a server bound to a name answers
    for it. A wildcard address (``0.0.0.0``, ``::``) is no name: a client reaches such a server
    by one of its addresses, which the server accepts as it is, or by an ``--allowed-host``."""
    bound = [] if args.host in _WILDCARDS else [args.host]
    return [*args.allowed_host, *bound]


def _say(message: str) -> None:
    sys.stderr.write(f"runport: {message}\n")
    sys.stderr.flush()


def main(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise CliError("usage", f"--port must be between 0 and 65535, not {args.port}")
    if args.max_body_bytes < 1:
        raise CliError("usage", f"--max-body-bytes must be at least 1, not {args.max_body_bytes}")
    try:
        from runport.server import prepare, run_server
    except ModuleNotFoundError as error:
        if not extra_missing(error, "runport.server", "starlette", "uvicorn"):
            raise
        raise CliError("usage", INSTALL_HINT) from None
    from runport.application import CatalogError

    token = args.token if args.token is not None else os.environ.get(TOKEN_VARIABLE) or None
    tools = []
    if args.tools is not None:
        from runport.cli._run_tools import load_tools

        tools = load_tools(args.tools)
    from runport.cli._run_tools import mcp_servers

    with mcp_servers(args.mcp) as served:
        try:
            app = prepare(
                args.contracts,
                adapter=args.adapter,
                scenario=args.scenario,
                token=token,
                cors_origins=args.cors_origin,
                allowed_hosts=_allowed_hosts(args),
                max_body_bytes=args.max_body_bytes,
                heartbeat=args.heartbeat,
                resumable=args.resumable,
                event_log=args.event_log,
                orphan_timeout=args.orphan_timeout,
                retention=args.retention,
                lease=args.lease,
                tools=[*tools, *served],
                reasoning_key=_reasoning_key(args),
                warn=warn,
            )
        except CatalogError as error:
            raise CliError(error.code, error.message) from None
        except ValueError as error:
            raise CliError("usage", str(error)) from None

        def ready(url: str) -> None:
            needs = " (the API needs the bearer token)" if token else ""
            _say(
                f"serving {args.contracts} on {url}/ — the playground is there{needs}; Ctrl-C stops"
            )

        try:
            run_server(app, host=args.host, port=args.port, on_ready=ready)
        except OSError as error:
            raise CliError("usage", f"cannot listen on {args.host}:{args.port}: {error}") from None
    return 0
