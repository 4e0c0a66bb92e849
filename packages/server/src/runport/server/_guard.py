"""``RequestGuard``: the checks every request passes before any route sees it.

A server on 127.0.0.1 is reachable by every web page its user opens: DNS rebinding points an
attacker's name at 127.0.0.1, and a page may post to any address without asking. So the
``Host`` a request names must be one the server answers for, and a request that changes
something (``POST``, ``PUT``, ``PATCH``, ``DELETE``) must come from the server's own origin or
a ``--cors-origin``, with a JSON body — the kind of request a browser sends across sites only
after a CORS preflight this server does not grant (docs/security.md).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from runport.contracts import ErrorCode
from runport.server._errors import RequestRefused, error_response

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
"""The names a loopback server always answers for, whatever else it is told."""

_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` as ``(lowercased host, port)``; an IPv6 host keeps its brackets.
    ``None`` for what is not a host at all."""
    value = value.strip().lower()
    if not value or any(c in value for c in "/\\@?# \t"):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, colon, port_text_or_empty = value.partition(":")
        port_text = port_text_or_empty if colon else None
    if not name or name == "[]":
        return None
    if port_text is None:
        return name, None
    if not port_text.isdigit() or not 0 < int(port_text) <= 65535:
        return None
    return name, int(port_text)


def _literal(address: str) -> str:
    """An address as a ``Host`` header writes it: an IPv6 address in brackets."""
    try:
        parsed = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return address.lower()
    return f"[{parsed.compressed}]" if parsed.version == 6 else parsed.compressed


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def check_allowed_hosts(entries: Iterable[str]) -> tuple[tuple[str, int | None], ...]:
    """``--allowed-host`` entries as ``(host, port or None)``; ``ValueError`` names a bad one.

    An entry is a host name or address, optionally with a port (``svc.internal``,
    ``svc.internal:8443``, ``[fd00::1]``); ``*`` answers for any name (the check is off).
    """
    checked: list[tuple[str, int | None]] = []
    for entry in entries:
        if entry == "*":
            checked.append(("*", None))
            continue
        if ":" in entry and _is_address(entry):  # an IPv6 address written without brackets
            checked.append((_literal(entry), None))
            continue
        split = _split_host(entry)
        if split is None:
            raise ValueError(
                f"allowed host {entry!r} is not a host name or address with an optional port "
                "(for example 'runport.internal' or 'runport.internal:8443')"
            )
        checked.append((_literal(split[0]), split[1]))
    return tuple(checked)


def _origin(value: str) -> tuple[str, str, int] | None:
    """An ``Origin`` header as ``(scheme, host, port)``; ``None`` for ``null`` or junk."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path:
        return None
    host = _literal(parts.hostname)
    return parts.scheme, host, port if port is not None else _DEFAULT_PORTS[parts.scheme]


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def _has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    if length is not None:
        return length.strip() != "0"
    return "transfer-encoding" in headers


class RequestGuard:
    """ASGI middleware: a ``Host`` not on the allow-list is 421, a state-changing request from
    a foreign ``Origin`` is 403 (both ``TQX_ACCESS_DENIED``), and one whose body is not
    ``application/json``, or is sent compressed (a ``Content-Encoding``), is 415
    (``TQX_DATA_INVALID``) — for every route, the page and its
    files included, before the route runs or the body is read.

    The allow-list holds the loopback names, the address the connection arrived at (a client
    that names the server by its address is not being rebound) and ``allowed_hosts``. An
    origin is the server's own when it names the scheme and host the request came in on;
    ``cors_origins`` are the others allowed. A request without ``Origin`` is not from a
    browser page (browsers send one with every cross-origin ``POST``) and passes that check.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Sequence[str] = (),
        cors_origins: Sequence[str] = (),
    ) -> None:
        self.app = app
        hosts = check_allowed_hosts([*LOOPBACK_HOSTS, *allowed_hosts])
        self._any_host = ("*", None) in hosts
        self._names = frozenset(name for name, port in hosts if port is None)
        self._named_ports = frozenset(entry for entry in hosts if entry[1] is not None)
        self._any_origin = "*" in cors_origins
        self._origins = frozenset(
            parsed for parsed in map(_origin, cors_origins) if parsed is not None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            host = self._check_host(scope, headers)
            if scope["method"] in _UNSAFE:
                self._check_origin(scope, headers, host)
                self._check_body_type(headers)
        except RequestRefused as refused:
            await error_response(refused)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _host_allowed(self, scope: Scope, name: str, port: int | None) -> bool:
        if self._any_host or name in self._names or (name, port) in self._named_ports:
            return True
        server = scope.get("server")
        return server is not None and name == _literal(str(server[0]))

    def _check_host(self, scope: Scope, headers: Headers) -> tuple[str, int | None]:
        given = headers.get("host", "")
        split = _split_host(given)
        if split is None or not self._host_allowed(scope, _literal(split[0]), split[1]):
            shown = given[:100] if given else "none"
            raise RequestRefused(
                421,
                ErrorCode.ACCESS_DENIED,
                f"this server does not answer for the host {shown!r}: start it with "
                "--allowed-host NAME to add a name it may be reached by",
            )
        return _literal(split[0]), split[1]

    def _check_origin(self, scope: Scope, headers: Headers, host: tuple[str, int | None]) -> None:
        given = headers.get("origin")
        if given is None or self._any_origin:
            return
        origin = _origin(given)
        scheme = str(scope.get("scheme", "http"))
        own = (scheme, host[0], host[1] if host[1] is not None else _DEFAULT_PORTS.get(scheme))
        if origin is not None and (origin == own or origin in self._origins):
            return
        raise RequestRefused(
            403,
            ErrorCode.ACCESS_DENIED,
            f"a {scope['method']} from the origin {given[:100]!r} is refused: only this "
            "server's own pages and the origins it was started with (--cors-origin) may send one",
        )

    @staticmethod
    def _check_body_type(headers: Headers) -> None:
        if not _has_body(headers):
            return
        given = headers.get("content-type", "")
        if _media_type(given) != "application/json":
            shown = given[:100] if given else "none"
            raise RequestRefused(
                415,
                ErrorCode.DATA_INVALID,
                f"the body must be sent as Content-Type: application/json, not {shown!r}",
            )
        coding = headers.get("content-encoding", "").strip().lower()
        if coding not in ("", "identity"):
            raise RequestRefused(
                415,
                ErrorCode.DATA_INVALID,
                f"the body must be sent uncompressed, not with Content-Encoding {coding[:100]!r}",
            )
