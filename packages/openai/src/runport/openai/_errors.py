"""How upstream failures become ``PortError``s with docs/wire-types.md codes.

Every message here is written by this module from the failure's *kind* (an HTTP status, an
exception class, an error frame's type/code classified against fixed words). Nothing the
upstream sent is copied into a message: a response body may echo the prompt, the key or
anything else, and docs/streaming-law.md law 10 keeps it out of errors, events and logs.
"""

from __future__ import annotations

import math
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from runport.contracts import ErrorCode
from runport.ports import PortError

_RATE_LIMIT = re.compile(r"rate[_\s-]?limit|too[_\s-]?many[_\s-]?requests|quota", re.IGNORECASE)
_SERVER = re.compile(
    r"server|overload|unavailable|internal|capacity|busy|timeout|timed[_\s-]?out",
    re.IGNORECASE,
)


def status_error(response: httpx.Response) -> PortError:
    """A non-2xx answer, before any of its body is read."""
    status = response.status_code
    label = f"HTTP {status} {response.reason_phrase}".rstrip()
    if status == 429:
        return PortError(
            ErrorCode.RUNTIME_RATE_LIMITED,
            f"the upstream throttled the request ({label})",
            retry_after_ms=retry_after_ms(response.headers),
        )
    if status == 408:
        return PortError(ErrorCode.RUNTIME_TIMEOUT, f"the upstream timed out ({label})")
    if 500 <= status <= 599:
        # A 503 often says when to come back; the hint is passed on as it is for a 429.
        return PortError(
            ErrorCode.RUNTIME_UNAVAILABLE,
            f"the upstream failed ({label})",
            retry_after_ms=retry_after_ms(response.headers),
        )
    if 400 <= status <= 499:
        return PortError(ErrorCode.RUNTIME_PERMANENT, f"the upstream refused the request ({label})")
    return PortError(
        ErrorCode.RUNTIME_INVALID_RESPONSE,
        f"the upstream answered {label}, which is not a chat completion",
    )


def retry_after_ms(headers: httpx.Headers) -> int | None:
    """The back-off the upstream asked for, in milliseconds, or ``None`` if it named none.

    ``retry-after-ms`` (sent by OpenAI) is preferred for its precision; ``Retry-After`` may be
    delta-seconds or an HTTP date (RFC 9110 §10.2.3). A date in the past means "now" (0).
    Unreadable values are ignored rather than failing the error report itself.
    """
    precise = headers.get("retry-after-ms")
    if precise is not None:
        millis = _non_negative_number(precise)
        if millis is not None:
            return math.ceil(millis)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _non_negative_number(value)
    if seconds is not None:
        return math.ceil(seconds * 1000)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less one is read as such
        return None
    return max(0, math.ceil((when.timestamp() - time.time()) * 1000))


def _non_negative_number(text: str) -> float | None:
    try:
        number = float(text.strip())
    except ValueError:
        return None
    if not math.isfinite(number) or number < 0:
        return None
    return number


def transport_error(error: httpx.HTTPError) -> PortError:
    """An ``httpx`` exception raised while connecting, sending or reading."""
    port_error = _transport_error(error)
    port_error.__cause__ = error
    return port_error


def _transport_error(error: httpx.HTTPError) -> PortError:
    if isinstance(error, httpx.TimeoutException):
        return PortError(
            ErrorCode.RUNTIME_TIMEOUT, f"the upstream did not answer in time ({_kind(error)})"
        )
    if isinstance(error, httpx.ConnectError):
        return PortError(ErrorCode.RUNTIME_UNAVAILABLE, "could not connect to the upstream")
    if isinstance(error, httpx.RemoteProtocolError):
        return PortError(
            ErrorCode.RUNTIME_UNAVAILABLE, "the upstream broke the HTTP exchange (disconnected)"
        )
    if isinstance(error, httpx.DecodingError):
        return PortError(
            ErrorCode.RUNTIME_INVALID_RESPONSE, "the upstream's body could not be decoded"
        )
    if isinstance(error, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return PortError(ErrorCode.RUNTIME_PERMANENT, "the base URL cannot be requested")
    if isinstance(error, httpx.TransportError):
        return PortError(ErrorCode.RUNTIME_UNAVAILABLE, f"the connection failed ({_kind(error)})")
    return PortError(ErrorCode.RUNTIME_UNAVAILABLE, f"the HTTP exchange failed ({_kind(error)})")


def _kind(error: Exception) -> str:
    return type(error).__name__


def error_frame(error: Any) -> PortError:
    """``{"error": …}`` in a body or SSE frame: classified by its ``type``/``code`` words.

    Rate limits → ``RATE_LIMITED``; server, overload and capacity errors → ``UNAVAILABLE``;
    anything else → ``PERMANENT``. A numeric code is read as the HTTP status it names (as
    llama.cpp sends them).
    """
    words: list[str] = []
    status: int | None = None
    if isinstance(error, dict):
        for key in ("type", "code", "status"):
            value = error.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                status = value
            elif isinstance(value, str):
                if value.isdigit():
                    status = int(value)
                words.append(value)
    text = " ".join(words)
    if status == 429 or _RATE_LIMIT.search(text):
        return PortError(ErrorCode.RUNTIME_RATE_LIMITED, "the upstream sent a rate-limit error")
    if status == 408:
        return PortError(ErrorCode.RUNTIME_TIMEOUT, "the upstream sent a timeout error")
    if (status is not None and 500 <= status <= 599) or _SERVER.search(text):
        return PortError(ErrorCode.RUNTIME_UNAVAILABLE, "the upstream sent a server error")
    return PortError(ErrorCode.RUNTIME_PERMANENT, "the upstream sent an error")


class UpstreamFailure(Exception):
    """Carries a ``PortError`` out of the adapter's internals.

    A private type, so the adapter can tell its own failures from anything a sink raises (a
    sink's exceptions — even a ``PortError`` or an ``httpx`` error of its own — must propagate
    untouched, docs/streaming-law.md law 6). The public methods unwrap it and raise ``error``.
    """

    def __init__(self, error: PortError) -> None:
        super().__init__(error.code)
        self.error = error


def invalid(message: str) -> UpstreamFailure:
    return UpstreamFailure(PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message))
