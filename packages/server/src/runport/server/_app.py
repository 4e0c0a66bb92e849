"""``create_app``: the routes, the token, the bounds, the request guard and CORS around one
catalog."""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from importlib import resources

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from runport.application import Catalog, ContinuationSeal, Tool, to_async
from runport.contracts import ErrorCode
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter, check_byte_count, check_seconds
from runport.server._auth import check_token, token_secret
from runport.server._body import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_MAX_BODY_BYTES,
    parse_call,
    read_body,
)
from runport.server._errors import RequestRefused, error_response, find_contract
from runport.server._event_log import EventLog
from runport.server._execution import Execution
from runport.server._frontends import frontend_routes, registered
from runport.server._guard import RequestGuard, check_allowed_hosts
from runport.server._reasoning_seal import check_reasoning_key
from runport.server._resumable import RUNPORT_STREAM, ResumableExecution, run_events, stop_run
from runport.server._runs import DEFAULT_ORPHAN_TIMEOUT_S, Runs
from runport.server._sse import DEFAULT_HEARTBEAT_S, RUN_ID_HEADER, check_heartbeat

_log = logging.getLogger("runport.server")

AdapterFactory = Callable[[], AsyncRuntimeAdapter | RuntimeAdapter]
"""Builds the adapter for one request. A fresh adapter per request keeps requests independent:
the scripted mock, for one, plays its scenario from the first turn every time. It is called on
a worker thread, never on the event loop (building an HTTP client is blocking work) — unless
it says it does no I/O with ``blocking = False``, as the factories of
``runport.application.async_adapter_factory`` for a prepared adapter (the mock, its scenario
parsed once) do. A sync adapter is bridged with ``to_async`` (a worker thread); an async one
runs on the loop."""

AdapterSource = AsyncRuntimeAdapter | RuntimeAdapter | AdapterFactory
"""One adapter every request shares (one connection pool; the caller's to close), or a
factory called once per request (each adapter closed after its request)."""

_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/playground.css": ("playground.css", "text/css; charset=utf-8"),
    "/playground.js": ("playground.js", "text/javascript; charset=utf-8"),
    "/playground-chat.js": ("playground-chat.js", "text/javascript; charset=utf-8"),
}
_PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    # the page runs only its own files and talks only to this server
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
}


def _static(name: str, media_type: str) -> Callable[[Request], Response]:
    content = resources.files("runport.server").joinpath("static", name).read_bytes()

    def page(request: Request) -> Response:
        return Response(content, media_type=media_type, headers=_PAGE_HEADERS)

    return page


def _as_async(adapter: AsyncRuntimeAdapter | RuntimeAdapter) -> AsyncRuntimeAdapter:
    return adapter if isinstance(adapter, AsyncRuntimeAdapter) else to_async(adapter)


def _partial_output(request: Request) -> bool:
    """``?partial_output=true``: the answer's snapshots ride the event stream."""
    value = request.query_params.get("partial_output", "false")
    if value not in ("true", "false"):
        raise RequestRefused(
            400, ErrorCode.DATA_INVALID, f"partial_output must be true or false, not {value!r}"
        )
    return value == "true"


def _wants_events(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return any(part.split(";")[0].strip() == "text/event-stream" for part in accept.split(","))


def create_app(
    contracts: Catalog | Iterable[Contract],
    adapter: AdapterSource,
    *,
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float = DEFAULT_BODY_TIMEOUT_S,
    cors_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
    tools: Sequence[Tool | Callable[..., object]] = (),
    reasoning_key: bytes | None = None,
    partial_output: bool = True,
    heartbeat: float = DEFAULT_HEARTBEAT_S,
    event_log: EventLog | None = None,
    orphan_timeout: float = DEFAULT_ORPHAN_TIMEOUT_S,
) -> Starlette:
    """The HTTP surface (docs/server.md) as an ASGI app, to serve with uvicorn or mount in a
    service of your own.

    ``adapter`` is one adapter every request shares, or a factory called per request (the
    scripted mock, so each request plays its scenario afresh). ``token`` makes every ``/v1``
    route ask for ``Authorization: Bearer <token>`` (the playground page loads without it and
    asks for it). ``cors_origins`` lists the browser origins allowed to call the API from
    other pages; none by default. ``allowed_hosts`` adds to the names the server answers for
    (the loopback names and the address a connection arrives at); a request naming any other
    ``Host`` is refused, as is a state-changing one from a foreign ``Origin`` or with a body
    that is not JSON (docs/security.md). A body still arriving after ``body_timeout`` seconds
    is refused with 408.

    ``tools`` are the functions a chat's run may call (``POST /v1/contracts/{id}/chat`` and
    ``/agui``, docs/frontends.md). A call of one that ``needs_approval`` pauses the chat: the
    stream ends with the approval request and the run's sealed continuation, and the request
    that carries the person's answer resumes it, once (with an ``event_log``, once among
    every server sharing it; docs/frontends.md, "A person in the loop").
    ``reasoning_key`` seals the reasoning metadata those routes send to the browser, so a
    later request can send it back to the provider and nothing else, and seals a paused
    chat's continuation (a random key per app when none is given: servers behind one
    balancer share one, so any of them resumes a chat another paused).
    Their runs also send a structured answer as it fills in (the UI stream's
    ``data-runport-output`` parts, AG-UI's ``STATE_SNAPSHOT``/``STATE_DELTA``);
    ``partial_output=False`` sends it only once it is whole. A text answer is its own deltas
    either way.

    Every event stream sends ``: ping`` after ``heartbeat`` seconds without output. With an
    ``event_log`` the server is resumable: a streamed run lives in the log, not in its
    connection, and is read (and resumed) through ``GET /v1/runs/{run_id}/events`` and stopped
    by ``DELETE /v1/runs/{run_id}`` or after ``orphan_timeout`` seconds that no client reads it.
    """
    catalog = contracts if isinstance(contracts, Catalog) else Catalog.of(contracts)
    secret = token_secret(token)
    limit = check_byte_count(max_body_bytes, "max_body_bytes")
    if not limit:
        raise ValueError("max_body_bytes must be a positive number of bytes")
    read_timeout = check_seconds(body_timeout, "body_timeout")
    if read_timeout is None:
        raise ValueError("body_timeout must be a positive, finite number of seconds")
    check_allowed_hosts(allowed_hosts)
    check_reasoning_key(reasoning_key)
    beat = check_heartbeat(heartbeat)
    runs = None if event_log is None else Runs(event_log, orphan_timeout=orphan_timeout)
    shared = adapter if isinstance(adapter, AsyncRuntimeAdapter | RuntimeAdapter) else None
    shared_async = None if shared is None else _as_async(shared)
    build_blocks = getattr(adapter, "blocking", True) is not False
    listing = {"contracts": catalog.describe()}
    key = reasoning_key if reasoning_key is not None else secrets.token_bytes(32)
    frontends = registered(reasoning_key=key)
    seal = ContinuationSeal(key)
    known = (*frontends, RUNPORT_STREAM)

    async def list_contracts(request: Request) -> Response:
        try:
            check_token(request, secret)
        except RequestRefused as refused:
            return error_response(refused)
        return JSONResponse(listing)

    async def adapter_for() -> tuple[AsyncRuntimeAdapter, bool]:
        """The request's adapter and whether the request owns it: the shared one, or one
        the factory builds (off the event loop) for this request alone."""
        if shared_async is not None:
            return shared_async, False
        assert callable(adapter)
        try:
            # A prepared factory (async_adapter_factory's, for the mock) reads no file and
            # starts nothing: it builds on the loop. Any other may block: a worker thread.
            built = adapter() if not build_blocks else await anyio.to_thread.run_sync(adapter)
        except Exception as error:  # the server's failure, not the caller's: say so, stay up
            _log.error("the adapter factory failed", exc_info=error)
            raise RequestRefused(
                503,
                ErrorCode.RUNTIME_UNAVAILABLE,
                f"the server cannot start its adapter ({type(error).__name__}); "
                "see the server's log",
            ) from None
        return _as_async(built), True

    async def execute(request: Request) -> Response:
        try:
            check_token(request, secret)
            contract = find_contract(catalog, request.path_params["contract_id"])
            partial = _partial_output(request)
            call = parse_call(await read_body(request, limit, read_timeout))
            run_on, owned = await adapter_for()
        except RequestRefused as refused:
            return error_response(refused)
        streamed = _wants_events(request)
        if runs is not None and streamed:
            return ResumableExecution(
                runs, contract, run_on, call, owned=owned, heartbeat=beat, partial_output=partial
            )
        return Execution(
            contract,
            run_on,
            call,
            streamed=streamed,
            owned=owned,
            partial_output=partial,
            heartbeat=beat,
        )

    async def events(request: Request) -> Response:
        try:
            check_token(request, secret)
            if runs is None:
                raise _not_resumable()
            return await run_events(runs, request, request.path_params["run_id"], beat, known)
        except RequestRefused as refused:
            return error_response(refused)

    async def stop(request: Request) -> Response:
        try:
            check_token(request, secret)
            if runs is None:
                raise _not_resumable()
            return await stop_run(runs, request.path_params["run_id"])
        except RequestRefused as refused:
            return error_response(refused)

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        return error_response(
            RequestRefused(error.status_code, ErrorCode.DATA_INVALID, str(error.detail))
        )

    routes = [Route(path, _static(*file), methods=["GET"]) for path, file in _STATIC.items()]
    routes += [
        Route("/v1/contracts", list_contracts, methods=["GET"]),
        Route("/v1/contracts/{contract_id:str}/executions", execute, methods=["POST"]),
        Route("/v1/runs/{run_id:str}/events", events, methods=["GET"]),
        Route("/v1/runs/{run_id:str}", stop, methods=["DELETE"]),
        *frontend_routes(
            frontends,
            catalog,
            adapter_for,
            token=secret,
            max_body_bytes=limit,
            body_timeout=read_timeout,
            tools=tools,
            partial_output=partial_output,
            runs=runs,
            heartbeat=beat,
            known=known,
            seal=seal,
        ),
    ]
    middleware = [Middleware(RequestGuard, allowed_hosts=allowed_hosts, cors_origins=cors_origins)]
    if cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=["Authorization", "Content-Type", "Accept", "Last-Event-ID"],
                expose_headers=[RUN_ID_HEADER],
            )
        )
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: http_error},
        lifespan=None if runs is None else _closing_runs(runs),
    )


def _not_resumable() -> RequestRefused:
    return RequestRefused(
        404,
        ErrorCode.RUN_NOT_FOUND,
        "this server keeps no runs: a run lives as long as its connection "
        "(start the server with --resumable)",
    )


def _closing_runs(
    runs: Runs,
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await runs.aclose()

    return lifespan
