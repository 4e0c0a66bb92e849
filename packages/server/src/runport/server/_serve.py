"""Serving the app: ``runport serve``'s start, and a loopback server in a thread for tests and
notebooks."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from runport.application import async_adapter_factory, load_catalog
from runport.server._app import create_app
from runport.server._body import DEFAULT_MAX_BODY_BYTES


def prepare(
    contracts: Path,
    *,
    adapter: str = "mock",
    scenario: str | os.PathLike[str] | None = None,
    token: str | None = None,
    cors_origins: Sequence[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    warn: Callable[[str], None],
) -> ASGIApp:
    """Everything ``runport serve`` does before serving: load the folder, try the adapter once.

    Raises ``runport.application.CatalogError`` when the server cannot start (a missing
    folder, two contracts with one id, an adapter that does not start).
    """
    catalog = load_catalog(contracts, warn=warn)
    if not catalog:
        warn(f"no contracts loaded from {contracts}")
    return create_app(
        catalog,
        async_adapter_factory(adapter, scenario=scenario),
        token=token,
        cors_origins=cors_origins,
        max_body_bytes=max_body_bytes,
    )


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _server(app: ASGIApp) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        timeout_graceful_shutdown=2,
        backlog=2048,
    )
    return uvicorn.Server(config)


def run_server(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``app`` until interrupted (Ctrl-C). ``port=0`` picks a free port; ``on_ready``
    is told the base URL once the socket listens."""
    sock = _bind(host, port)
    if on_ready is not None:
        on_ready(_url(sock))
    try:
        _server(app).run(sockets=[sock])
    finally:
        sock.close()


@contextlib.contextmanager
def serve_in_background(app: ASGIApp, *, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``app`` on a free loopback port in a thread while the block runs; yields the
    base URL. For tests, notebooks and examples that need a live server for a moment."""
    sock = _bind(host, 0)
    server = _server(app)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="runport-server", daemon=True
    )
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the server stopped before it started")
            threading.Event().wait(0.01)
        yield _url(sock)
    finally:
        server.should_exit = True
        thread.join()
        sock.close()
