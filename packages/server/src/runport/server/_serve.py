"""Serving the app: ``runport serve``'s start, and a loopback server in a thread for tests and
notebooks."""

from __future__ import annotations

import contextlib
import gc
import os
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp

from runport.application import Tool, aclose_adapter, async_adapter_factory, load_catalog
from runport.ports import AsyncRuntimeAdapter, check_seconds
from runport.server._app import AdapterSource, create_app
from runport.server._auth import token_secret
from runport.server._body import DEFAULT_BODY_TIMEOUT_S, DEFAULT_MAX_BODY_BYTES
from runport.server._event_log import DEFAULT_LEASE_S, DEFAULT_RETENTION_S
from runport.server._guard import check_allowed_hosts
from runport.server._logs import event_log_for
from runport.server._protocol import (
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    guarded_protocol,
)
from runport.server._reasoning_seal import check_reasoning_key
from runport.server._runs import DEFAULT_ORPHAN_TIMEOUT_S, check_orphan_timeout
from runport.server._sse import DEFAULT_HEARTBEAT_S, check_heartbeat


def prepare(
    contracts: Path,
    *,
    adapter: str = "mock",
    scenario: str | os.PathLike[str] | None = None,
    token: str | None = None,
    cors_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float = DEFAULT_BODY_TIMEOUT_S,
    heartbeat: float = DEFAULT_HEARTBEAT_S,
    resumable: bool = False,
    event_log: str | None = None,
    orphan_timeout: float = DEFAULT_ORPHAN_TIMEOUT_S,
    retention: float = DEFAULT_RETENTION_S,
    lease: float = DEFAULT_LEASE_S,
    tools: Sequence[Tool | Callable[..., object]] = (),
    reasoning_key: bytes | None = None,
    warn: Callable[[str], None],
) -> ASGIApp:
    """Everything ``runport serve`` does before serving: load the folder, make the adapter.

    With a ``scenario`` (the mock) every request gets a fresh adapter, so each plays the
    scenario from its first turn; any other adapter is made once, here — off the event loop —
    and shared by every request (one connection pool), then closed when the server stops.
    ``tools`` are what a chat's run may call, and ``reasoning_key`` (at least 32 bytes; a
    random one when ``None``) seals the reasoning the chat routes send to the browser: server
    processes behind one balancer share one, so each takes the others' conversations.

    With ``resumable`` runs outlive their connections (docs/server.md): their events go to
    the ``event_log`` — ``"memory"`` (the default, this process) or a ``redis://`` URL shared
    by many server processes, reached here once so that a log out of reach stops the start.

    Raises ``ValueError`` for an unusable option (a token no client could send, an allowed
    host that is not a host, an event log without ``resumable``), before anything is loaded,
    and ``runport.application.CatalogError`` when the server cannot start (a missing folder,
    two contracts with one id, an adapter that does not start, an event log out of reach).
    """
    # The options first: a token or host no client could use is refused before any work.
    token_secret(token)
    check_allowed_hosts(allowed_hosts)
    check_reasoning_key(reasoning_key)
    check_heartbeat(heartbeat)
    check_orphan_timeout(orphan_timeout)
    if event_log is not None and not resumable:
        raise ValueError("an event log is for resumable runs: add --resumable")
    log = None
    if resumable:
        log = event_log_for(event_log or "memory", retention=retention, lease=lease)
    catalog = load_catalog(contracts, warn=warn)
    if not catalog:
        warn(f"no contracts loaded from {contracts}")
    build = async_adapter_factory(adapter, scenario=scenario)
    source: AdapterSource = build if scenario is not None else build()
    app = create_app(
        catalog,
        source,
        token=token,
        cors_origins=cors_origins,
        allowed_hosts=allowed_hosts,
        max_body_bytes=max_body_bytes,
        body_timeout=body_timeout,
        heartbeat=heartbeat,
        event_log=log,
        orphan_timeout=orphan_timeout,
        tools=tools,
        reasoning_key=reasoning_key,
    )
    if isinstance(source, AsyncRuntimeAdapter):
        app.router.lifespan_context = _closing(source, app.router.lifespan_context)
    return app


Lifespan = Callable[[Starlette], contextlib.AbstractAsyncContextManager[Any]]


def _closing(adapter: AsyncRuntimeAdapter, inner: Lifespan) -> Lifespan:
    """A lifespan that closes the shared adapter when the server stops, on the loop that
    used its connections — after the app's own (which ends the runs using it)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with inner(app):
                yield
        finally:
            await aclose_adapter(adapter)

    return lifespan


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


def _server(app: ASGIApp, header_timeout: float, max_connections: int) -> uvicorn.Server:
    timeout = check_seconds(header_timeout, "header_timeout")
    if timeout is None:
        raise ValueError("header_timeout must be a positive, finite number of seconds")
    if isinstance(max_connections, bool) or not isinstance(max_connections, int):
        raise ValueError(f"max_connections must be a whole number, not {max_connections!r}")
    if max_connections < 1:
        raise ValueError(f"max_connections must be at least 1, not {max_connections}")
    config = uvicorn.Config(
        app,
        http=guarded_protocol(timeout, max_connections),
        # uvicorn answers 503 once this many connections or requests are open; the guarded
        # protocol closes connections still waiting for a request head before that.
        limit_concurrency=max_connections + 1,
        lifespan="auto",
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
    header_timeout: float = DEFAULT_HEADER_TIMEOUT_S,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> None:
    """Serve ``app`` until interrupted (Ctrl-C). ``port=0`` picks a free port; ``on_ready``
    is told the base URL once the socket listens. A request head still arriving after
    ``header_timeout`` seconds is dropped, and at most ``max_connections`` connections are
    held at once (docs/limits.md). Before it serves it freezes what the process holds
    (``gc.freeze``): the cyclic collector's full collections, many with many clients, no
    longer walk the libraries, the catalog and the app."""
    server = _server(app, header_timeout, max_connections)
    sock = _bind(host, port)
    settle_heap()
    if on_ready is not None:
        on_ready(_url(sock))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def settle_heap() -> None:
    """Move what the process holds before it serves (the imported modules, the catalog, the
    app) out of the cyclic collector's reach: every full collection walks each tracked object,
    and a server streaming to many clients runs many — without this, each one walks the
    hundred thousand objects of the libraries runport imports, again and again. Only the
    serving process does it (``run_server``): these objects live as long as it does."""
    gc.collect()
    gc.freeze()


@contextlib.contextmanager
def serve_in_background(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    header_timeout: float = DEFAULT_HEADER_TIMEOUT_S,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> Iterator[str]:
    """Serve ``app`` on a free loopback port in a thread while the block runs; yields the
    base URL. For tests, notebooks and examples that need a live server for a moment."""
    server = _server(app, header_timeout, max_connections)
    sock = _bind(host, 0)
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
