"""``AiohttpTransport``: an ``httpx.AsyncBaseTransport`` over aiohttp's pool and parser.

The async adapters keep their httpx code (the request built once, the response's head and
body read through ``httpx.Response``); only the connection pool, the HTTP/1.1 parser and the
socket reads under them are aiohttp's, which cost a third of httpcore's at hundreds of
concurrent streams (adr/0074). Chosen with ``transport="aiohttp"`` (or the environment
variable ``RUNPORT_ASYNC_TRANSPORT=aiohttp``) on an async adapter; installed with the
``aiohttp`` extra of ``runport-http``.

Every aiohttp failure is raised as the httpx exception httpx's own transport raises for the
same event, so a call fails with the same code on either transport: a refused connection is
``httpx.ConnectError`` (``TQX_RUNTIME_UNAVAILABLE``), a read that outlasts its timeout
``httpx.ReadTimeout`` (``TQX_RUNTIME_TIMEOUT``), a peer that closes or breaks the exchange
``httpx.RemoteProtocolError`` or ``httpx.ReadError`` (``TQX_RUNTIME_UNAVAILABLE``).
"""

from __future__ import annotations

import functools
import ssl
import urllib.request
from collections.abc import AsyncIterator
from typing import Final

import aiohttp
import httpx
from yarl import URL

__all__ = ["KEEPALIVE_EXPIRY_S", "AiohttpTransport"]

KEEPALIVE_EXPIRY_S: Final = 5.0
"""How long an idle kept-alive connection waits for its next exchange (httpx's default)."""


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """The trust httpx's own transport has (certifi's roots), made once per process."""
    return httpx.create_ssl_context()


def _httpx_error(error: aiohttp.ClientError, *, reading: bool) -> httpx.TransportError:
    """The httpx exception httpx's transport raises for the event aiohttp reports as
    ``error`` (``reading``: while the body is read, else while connecting or sending)."""
    text = f"{type(error).__name__}: {error}"
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(text)
    if isinstance(error, aiohttp.ServerTimeoutError):  # sock_read: no byte for the read timeout
        return httpx.ReadTimeout(text)
    if isinstance(error, aiohttp.ClientConnectorError):  # refused, unresolved, TLS refused
        return httpx.ConnectError(text)
    if isinstance(error, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        return httpx.UnsupportedProtocol(text)
    if isinstance(error, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        # closed before the head, or partway through a chunked or sized body
        return httpx.RemoteProtocolError(text)
    if isinstance(error, aiohttp.ClientResponseError):  # a head or chunk the parser refused
        return httpx.RemoteProtocolError(text)
    if isinstance(error, aiohttp.ClientOSError):  # reset, broken pipe
        return httpx.ReadError(text) if reading else httpx.WriteError(text)
    return httpx.ReadError(text) if reading else httpx.ConnectError(text)


class _Body(httpx.AsyncByteStream):
    """A response body read a chunk at a time as aiohttp receives it; closing it before its
    end closes the connection (never returned to the pool with bytes unread), after it
    returns it."""

    __slots__ = ("_response",)

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # One HTTP chunk (or what has come of it) a read, as h11 hands httpx's transport its
        # data: how far a bounded body is read, and so which events come before the bound
        # trips, depends on the chunks the upstream sent, not on how many were buffered.
        content = self._response.content
        try:
            while True:
                chunk, ended = await content.readchunk()
                if chunk:
                    yield chunk
                elif not ended:
                    return
        except aiohttp.ClientError as error:
            raise _httpx_error(error, reading=True) from error

    async def aclose(self) -> None:
        response = self._response
        if response.content.at_eof():
            response.release()
        else:
            response.close()


class AiohttpTransport(httpx.AsyncBaseTransport):
    """httpx's requests sent on one ``aiohttp.ClientSession``, made on first use on the
    running loop (construction binds to none) and closed by ``aclose``.

    ``limits.max_connections`` caps the connections open at once (a call past it waits for
    one, within the request's ``pool`` timeout); ``limits.max_keepalive_connections`` of 0
    closes each connection when its exchange ends, any other value keeps connections alive
    for ``limits.keepalive_expiry`` (aiohttp keeps every idle connection of a pool, not a
    count of them: the shards an adapter makes give each one all of its share or none).
    Cookies, redirects and decompression are left to httpx and runport, as on httpx's own
    transport; proxies come from the environment (``HTTPS_PROXY``, ``NO_PROXY``), looked up
    once per URL.
    """

    def __init__(self, limits: httpx.Limits) -> None:
        self._limits = limits
        self._session: aiohttp.ClientSession | None = None
        self._urls: dict[str, tuple[URL, URL | None]] = {}

    def _open(self) -> aiohttp.ClientSession:
        limits = self._limits
        kept = limits.max_keepalive_connections
        connector = aiohttp.TCPConnector(
            limit=limits.max_connections or 0,
            limit_per_host=0,
            force_close=kept == 0,
            keepalive_timeout=(
                None
                if kept == 0
                else (limits.keepalive_expiry if limits.keepalive_expiry is not None else 3600.0)
            ),
            ssl=_ssl_context(),
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None),
        )
        return self._session

    def _url(self, url: httpx.URL) -> tuple[URL, URL | None]:
        """``url`` as aiohttp takes it, and the proxy the environment names for it, worked
        out once per distinct URL (an adapter posts to a few): aiohttp's own ``trust_env``
        would look the proxy up again on every request, in a thread."""
        text = str(url)
        held = self._urls.get(text)
        if held is None:
            proxy = None
            if not urllib.request.proxy_bypass(url.host):
                named = urllib.request.getproxies().get(url.scheme)
                proxy = URL(named) if named else None
            held = (URL(text, encoded=True), proxy)
            if len(self._urls) < 64:
                self._urls[text] = held
        return held

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._session
        if session is None:
            session = self._open()
        timeout = request.extensions.get("timeout", {})
        connect, pool = timeout.get("connect"), timeout.get("pool")
        body = await request.aread()
        headers = [
            (name, value)
            for name, value in request.headers.multi_items()
            if name != "transfer-encoding"
        ]
        target, proxy = self._url(request.url)
        try:
            response = await session.request(
                request.method,
                target,
                proxy=proxy,
                headers=headers,
                data=body or None,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    # waiting for a slot in the pool and connecting, together: aiohttp times
                    # them as one, httpx apart (each within the longer of the two here)
                    connect=None if pool is None or connect is None else max(pool, connect),
                    sock_connect=connect,
                    sock_read=timeout.get("read"),
                ),
            )
        except aiohttp.ClientError as error:
            raise _httpx_error(error, reading=False) from error
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_Body(response),
            request=request,
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": (response.reason or "").encode("ascii", "replace"),
            },
        )

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()
