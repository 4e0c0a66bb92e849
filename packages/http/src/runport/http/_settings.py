"""An HTTP adapter's own settings, checked once at construction for both drivers."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Final, Generic, TypedDict, TypeVar

import httpx

from runport.contracts import AdapterDescriptor, ExecutionRequest
from runport.http._codec import Codec, HTTPRequest
from runport.http._exchange import BASE_HEADERS, Exchange
from runport.http._guard import model_request_refused
from runport.http._urls import checked_base_url, redact_url, request_url, url_secrets
from runport.ports import PortError, check_byte_count, check_seconds

__all__ = [
    "DEFAULT_TIMEOUT",
    "AdapterSettings",
    "ClientT",
    "CodecCarrier",
    "DriverOptions",
    "checked_api_key",
    "require",
]

ClientT = TypeVar("ClientT", bound=httpx.Client | httpx.AsyncClient)

DEFAULT_TIMEOUT: Final = httpx.Timeout(600.0, connect=10.0)
"""Ten minutes of silence at most, as long as a slow unstreamed completion may take to start;
ten seconds to connect. The whole call is bounded by its deadline besides."""

_MAX_URLS: Final = 64
"""Request URLs (and request heads) kept per adapter; a codec whose query or headers vary per
call makes the rest anew."""

_BUILD_REQUEST: Final = httpx.Client.build_request
"""httpx's own (``AsyncClient`` has the same): a client that overrides it is left to it."""

_FILLED_BY_HTTPX: Final = ("Host", "Content-Length", "Transfer-Encoding")
"""Headers ``httpx.Request`` fills in itself unless given: a head holding one is built by
httpx."""


@dataclass(frozen=True, slots=True)
class AdapterSettings:
    base_url: httpx.URL
    timeout: httpx.Timeout | None
    max_response_bytes: int | None
    deadline: float | None
    secrets: tuple[str, ...]
    """The credentials in ``base_url``, kept out of every message as the codec's are."""
    urls: dict[tuple[str, tuple[tuple[str, str], ...]], httpx.URL] = field(
        default_factory=dict, compare=False
    )
    """Each request URL made from ``base_url`` (a codec has a few paths at most): httpx
    parses a URL in Python, and a call's URL is the same every time."""
    auth: httpx.Auth | httpx._client.UseClientDefault = httpx.USE_CLIENT_DEFAULT
    """What signs each request as it is sent (``DriverOptions.auth``); unset, the client's
    own auth, if it has one."""
    heads: dict[
        tuple[tuple[str, str], ...], tuple[list[tuple[bytes, bytes]], httpx.Headers | None]
    ] = field(default_factory=dict, compare=False)
    """Each request head made for a codec header set, beside the client headers it was
    merged with (``http_request``): merging headers the way httpx does costs more than the
    rest of building the request."""

    @classmethod
    def build(
        cls,
        base_url: str,
        *,
        timeout: float | httpx.Timeout | None,
        max_response_bytes: int | None,
        deadline: float | None,
        auth: httpx.Auth | None = None,
    ) -> AdapterSettings:
        url = checked_base_url(base_url)
        if auth is not None and not isinstance(auth, httpx.Auth):
            raise TypeError("auth must be an httpx.Auth (SigV4Auth, an OAuth token refresher)")
        return cls(
            base_url=url,
            timeout=None if timeout is None else httpx.Timeout(timeout),
            max_response_bytes=check_byte_count(max_response_bytes),
            deadline=check_seconds(deadline),
            secrets=url_secrets(url),
            auth=httpx.USE_CLIENT_DEFAULT if auth is None else auth,
        )

    def http_request(
        self, client: httpx.Client | httpx.AsyncClient, wire: HTTPRequest, exchange: Exchange
    ) -> httpx.Request:
        """The codec's request on ``client``, its timeouts cut to the call's deadline (a
        client passed in without an adapter ``timeout`` keeps its own).

        It is the request ``client.build_request`` makes: the client's headers merged with
        the codec's, ``Host`` first and ``Content-Length`` last, the body read. The merged
        head is made once per codec header set and reused while the client's headers stay
        as they were; a client with cookies or query parameters of its own, a subclass with
        its own ``build_request``, or a head httpx would fill differently (an empty body, a
        ``Host`` or a length given) goes through ``build_request`` itself.
        """
        base = self.timeout if self.timeout is not None else client.timeout
        key = (wire.path, tuple(wire.params.items()))
        url = self.urls.get(key)
        if url is None:
            url = request_url(self.base_url, wire.path, wire.params)
            if len(self.urls) < _MAX_URLS:
                self.urls[key] = url
        extensions = {"timeout": exchange.timeouts(base)}
        head = self._head(client, wire) if wire.body else None
        if head is None:
            return client.build_request(
                wire.method,
                url,
                content=wire.body,
                headers={**BASE_HEADERS, **wire.headers},
                extensions=extensions,
            )
        request = httpx.Request(
            wire.method,
            url,
            headers=head,
            stream=httpx.ByteStream(wire.body),
            extensions=extensions,
        )
        request.headers.encoding = head.encoding
        request.headers["Content-Length"] = str(len(wire.body))
        request.read()
        return request

    def _head(
        self, client: httpx.Client | httpx.AsyncClient, wire: HTTPRequest
    ) -> httpx.Headers | None:
        """The merged head for ``wire``'s headers on ``client`` (``Host`` in, no length), or
        ``None`` when the request must be built by ``client.build_request``."""
        if type(client).build_request is not _BUILD_REQUEST or client.params or client.cookies:
            return None
        key = tuple(wire.headers.items())
        held = self.heads.get(key)
        client_headers = client.headers.raw
        if held is not None and held[0] == client_headers:
            return held[1]
        merged = httpx.Headers(client.headers)  # as httpx's own merge does
        merged.update({**BASE_HEADERS, **wire.headers})
        if any(name in merged for name in _FILLED_BY_HTTPX):
            head = None
        else:
            head = httpx.Headers([(b"Host", self.base_url.netloc), *merged.raw])
            _ = head.encoding  # worked out once, handed to every request made from it
        if len(self.heads) < _MAX_URLS or key in self.heads:
            self.heads[key] = (client_headers, head)
        return head

    def client_timeout(self) -> httpx.Timeout:
        return DEFAULT_TIMEOUT if self.timeout is None else self.timeout


class DriverOptions(TypedDict, Generic[ClientT], total=False):
    """The keywords every provider adapter passes on to its driver unchanged: with
    ``**options: Unpack[DriverOptions[httpx.Client]]`` a provider names only its own.
    ``auth`` (an ``httpx.Auth``) signs every request the adapter sends, on any client
    (SigV4, a refreshed OAuth token); without it a client's own ``auth`` applies."""

    http_client: ClientT | None
    timeout: float | httpx.Timeout | None
    max_response_bytes: int | None
    deadline: float | None
    auth: httpx.Auth | None
    """Signs each request as it is sent, for credentials a header set once cannot carry
    (tokens that expire, signatures over the request): Azure's Entra ID tokens, say. It may
    send a request again once, on the answer it gets (a token refreshed after a 401); a
    ``PortError`` it raises fails the call with its code, unsent."""
    transport: str | None
    """Whose connections an async adapter sends on, ``"httpx"`` (httpcore's pool, the
    default) or ``"aiohttp"`` (aiohttp's pool and parser under the same httpx code, with the
    ``aiohttp`` extra; docs/async.md). Unset, the environment variable
    ``RUNPORT_ASYNC_TRANSPORT`` names it, else it is ``"httpx"``. The sync adapters take only
    ``"httpx"``."""


class CodecCarrier(Generic[ClientT]):
    """What both drivers hold and show: the codec, the checked settings, the descriptor and a
    repr without credentials. The drivers differ only in how they hold a client."""

    def __init__(
        self,
        codec: Codec,
        *,
        base_url: str,
        http_client: ClientT | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_response_bytes: int | None = None,
        deadline: float | None = None,
        auth: httpx.Auth | None = None,
        transport: str | None = None,
    ) -> None:
        self._codec = codec
        self._settings = AdapterSettings.build(
            base_url,
            timeout=timeout,
            max_response_bytes=max_response_bytes,
            deadline=deadline,
            auth=auth,
        )
        if self._settings.base_url.userinfo and codec.secrets:
            # httpx turns the URL's user-info into a Basic Authorization header, in place of
            # a Bearer key: the key would be dropped without a word.
            raise ValueError(
                "base_url carries credentials (user-info, user:password@) and an api_key is "
                "set: give one of them — the key, or the credentials in the URL"
            )
        self._repr = f"{type(self).__name__}(base_url={redact_url(self._settings.base_url)!r})"
        self._hold(http_client, transport)

    def _hold(self, http_client: ClientT | None, transport: str | None) -> None:
        raise NotImplementedError

    def _show(self, url: str, model: str) -> None:
        """A provider adapter's repr: where it posts and which model, never the key nor
        credentials in the URL."""
        self._repr = f"{type(self).__name__}(url={redact_url(url)!r}, model={model!r})"

    def __repr__(self) -> str:
        return self._repr

    def descriptor(self) -> AdapterDescriptor:
        return self._codec.descriptor()

    def _open(
        self, request: ExecutionRequest, *, stream: bool
    ) -> tuple[Exchange, HTTPRequest] | PortError:
        """A call's exchange and the codec's request for it, or why the call cannot start."""
        refused = model_request_refused(self._settings.base_url)
        if refused is not None:
            return refused  # nothing is connected: the test guard (runport.testing) said no
        try:
            exchange = Exchange(
                self._codec,
                request,
                stream=stream,
                max_response_bytes=self._settings.max_response_bytes,
                deadline=self._settings.deadline,
                secrets=self._settings.secrets,
            )
            return exchange, self._codec.encode(request, stream=stream)
        except PortError as error:
            return error


def require(adapter: str, named: tuple[tuple[str, str], ...], example: str) -> None:
    """An entry point's check that every value it needs came from an argument or the
    environment, naming all that are missing at once."""
    missing = [name for name, value in named if not value]
    if missing:
        raise ValueError(f"the {adapter} adapter needs {' and '.join(missing)} (e.g. {example})")


def from_environment(
    adapter: str, example: str, *wanted: tuple[str | None, *tuple[str, ...]]
) -> list[str]:
    """An entry point's required values: each ``(argument, VARIABLE, ...)`` is the argument
    given, else the first of its environment variables that is set, and ``require`` refuses
    them at once if any is still empty — so every provider reads its settings the same way."""
    values = [
        given or next((os.environ[name] for name in names if os.environ.get(name)), "")
        for given, *names in wanted
    ]
    named = tuple(
        (names[0] + "".join(f" (or {name})" for name in names[1:]), value)
        for (_, *names), value in zip(wanted, values, strict=True)
    )
    require(adapter, named, example)
    return values


def checked_api_key(api_key: str | None) -> str | None:
    """A key as a header can carry it; the error never repeats the value."""
    if api_key is not None and not (api_key.isascii() and api_key.isprintable()):
        raise ValueError("api_key must be printable ASCII (it goes in a header)")
    return api_key
