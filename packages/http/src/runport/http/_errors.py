"""How an HTTP exchange's failures become ``PortError``s with stable codes.

Every message here is written by runport from the failure's *kind*: an HTTP status (with the
standard phrase for it, never the one the server sent), an exception class, an error frame's
type/code words classified against fixed patterns. The one piece of upstream text a message
may carry is the provider's own structured error message, passed through ``provider_text``:
cut to ``PROVIDER_TEXT_LIMIT`` characters, control characters stripped, key-shaped strings
redacted (docs/upstream-safety.md).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Mapping
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import Any, Final

import httpx

from runport.contracts import ErrorCode
from runport.core import redact_secrets
from runport.ports import PortError

__all__ = [
    "MAX_RETRY_AFTER_MS",
    "PROVIDER_TEXT_LIMIT",
    "error_from_words",
    "provider_text",
    "retry_after_ms",
    "status_error",
    "transport_error",
]

PROVIDER_TEXT_LIMIT: Final = 300
"""Characters of a provider's own error message kept in ``PortError.message``."""

MAX_RETRY_AFTER_MS: Final = 7 * 24 * 3600 * 1000
"""A ``Retry-After`` past a week is read as a week: the hint stays an ``int`` a caller can
compare and sleep on, whatever the server wrote (``1e308`` included)."""

_RATE_LIMIT = re.compile(r"rate[_\s-]?limit|too[_\s-]?many[_\s-]?requests|quota", re.IGNORECASE)
_SERVER = re.compile(
    r"server|overload|unavailable|internal|capacity|busy|timeout|timed[_\s-]?out",
    re.IGNORECASE,
)
_KEY_SHAPED = re.compile(
    r"\bBearer\s+\S+"
    r"|\b(?:sk|pk|rk|ghp|gho|xox[abp])-[-_A-Za-z0-9]{4,}"
    r"|(?=[-_A-Za-z0-9+/=.]*[0-9])(?=[-_A-Za-z0-9+/=.]*[A-Za-z])[-_A-Za-z0-9+/=.]{16,}",
    re.IGNORECASE,
)
"""A bearer token, a prefixed key, or any run of 16+ key characters mixing letters and
digits: a model name may be caught too, which costs a word of the message, never a key."""
_REDACTED = "[redacted]"


def provider_text(value: Any, secrets: Iterable[str] = ()) -> str | None:
    """A provider's structured error message, made fit for ``PortError.message``.

    Only a string is taken; anything else is ``None``. ``secrets`` (the adapter's own key, the
    credentials in its base URL) are removed first, then credentials in URLs and query strings
    (``runport.core.redact_secrets``), then anything shaped like a key; every character that
    is not printable (controls, escapes, bidirectional overrides) becomes a space, so nothing
    reaches a terminal that can move its cursor or reorder what it shows.
    """
    if type(value) is not str:
        return None
    text = value[: PROVIDER_TEXT_LIMIT * 8]
    for secret in secrets:
        if secret:
            text = text.replace(secret, _REDACTED)
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = _KEY_SHAPED.sub(_REDACTED, redact_secrets(text))
    text = " ".join(text.split())
    if len(text) > PROVIDER_TEXT_LIMIT:
        text = text[: PROVIDER_TEXT_LIMIT - 1].rstrip() + "…"
    return text or None


def _with_text(message: str, text: str | None) -> str:
    return message if text is None else f"{message}: {text}"


def _label(status: int) -> str:
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def status_error(
    status: int,
    headers: Mapping[str, str],
    text: str | None = None,
    *,
    body_retry_after_ms: float | None = None,
    code: ErrorCode | None = None,
) -> PortError:
    """A non-2xx answer. ``text`` is the provider's message, already through ``provider_text``;
    ``body_retry_after_ms`` a back-off the body asked for (the codec's reading), taken when the
    headers name none, and clamped as they are. ``code`` is the codec's own classification
    (``Codec.error_code``), taken in place of the status's reading: 429 rate limited, 408
    timeout, 5xx unavailable, another 4xx permanent.

    The label is the standard phrase for the status: the reason phrase the server wrote is
    never read.
    """
    label = _label(status)
    after = retry_after_ms(headers)
    if after is None and body_retry_after_ms is not None:
        number = float(body_retry_after_ms)
        after = None if math.isnan(number) or number < 0 else _clamp(number)
    if code is None:
        code = _status_code(status)
    if code is ErrorCode.RUNTIME_RATE_LIMITED:
        return PortError(
            code,
            _with_text(f"the upstream throttled the request ({label})", text),
            retry_after_ms=after,
        )
    if code is ErrorCode.RUNTIME_TIMEOUT:
        return PortError(code, _with_text(f"the upstream timed out ({label})", text))
    if code is ErrorCode.RUNTIME_UNAVAILABLE:
        # A 503 often says when to come back; the hint is passed on as it is for a 429.
        return PortError(
            code, _with_text(f"the upstream failed ({label})", text), retry_after_ms=after
        )
    if code is ErrorCode.RUNTIME_INVALID_RESPONSE:
        return PortError(
            code, f"the upstream answered {label}, which is not a response to the request"
        )
    return PortError(code, _with_text(f"the upstream refused the request ({label})", text))


def _status_code(status: int) -> ErrorCode:
    """The code a status has when the codec says nothing of it."""
    if status == 429:
        return ErrorCode.RUNTIME_RATE_LIMITED
    if status == 408:
        return ErrorCode.RUNTIME_TIMEOUT
    if 500 <= status <= 599:
        return ErrorCode.RUNTIME_UNAVAILABLE
    if 400 <= status <= 499:
        return ErrorCode.RUNTIME_PERMANENT
    return ErrorCode.RUNTIME_INVALID_RESPONSE


def retry_after_ms(headers: Mapping[str, str]) -> int | None:
    """The back-off the upstream asked for, in milliseconds, or ``None`` if it named none.

    ``retry-after-ms`` (sent by OpenAI) is preferred for its precision; ``Retry-After`` may be
    delta-seconds or an HTTP date (RFC 9110 §10.2.3). A date in the past means "now" (0); any
    value is clamped to ``MAX_RETRY_AFTER_MS``. Unreadable values are ignored rather than
    failing the error report itself.
    """
    precise = headers.get("retry-after-ms")
    if precise is not None:
        millis = _non_negative_number(precise)
        if millis is not None:
            return _clamp(millis)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _non_negative_number(value)
    if seconds is not None:
        return _clamp(seconds * 1000)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less one is read as such
        return None
    return _clamp(max(0.0, (when.timestamp() - time.time()) * 1000))


def _clamp(millis: float) -> int:
    if not millis < MAX_RETRY_AFTER_MS:  # also true for infinity
        return MAX_RETRY_AFTER_MS
    return math.ceil(millis)


def _non_negative_number(text: str) -> float | None:
    try:
        number = float(text.strip())
    except ValueError:
        return None
    if math.isnan(number) or number < 0:
        return None
    return number


def transport_error(error: httpx.HTTPError) -> PortError:
    """An ``httpx`` exception raised while connecting, sending or reading."""
    port_error = _transport_error(error)
    port_error.__cause__ = error
    return port_error


def _transport_error(error: httpx.HTTPError) -> PortError:
    kind = type(error).__name__
    if isinstance(error, httpx.TimeoutException):
        return PortError(ErrorCode.RUNTIME_TIMEOUT, f"the upstream did not answer in time ({kind})")
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
        return PortError(ErrorCode.RUNTIME_UNAVAILABLE, f"the connection failed ({kind})")
    return PortError(ErrorCode.RUNTIME_UNAVAILABLE, f"the HTTP exchange failed ({kind})")


def error_from_words(
    words: Iterable[str], status: int | None = None, text: str | None = None
) -> PortError:
    """An error a provider reported in a body or a stream frame, classified by its type/code
    words (and the HTTP status it names, if any).

    Rate limits → ``RATE_LIMITED``; server, overload and capacity errors → ``UNAVAILABLE``;
    a timeout status → ``TIMEOUT``; anything else → ``PERMANENT``. ``text`` is the provider's
    message, already through ``provider_text``.
    """
    joined = " ".join(words)
    if status == 429 or _RATE_LIMIT.search(joined):
        return PortError(
            ErrorCode.RUNTIME_RATE_LIMITED, _with_text("the upstream sent a rate-limit error", text)
        )
    if status == 408:
        return PortError(
            ErrorCode.RUNTIME_TIMEOUT, _with_text("the upstream sent a timeout error", text)
        )
    if (status is not None and 500 <= status <= 599) or _SERVER.search(joined):
        return PortError(
            ErrorCode.RUNTIME_UNAVAILABLE, _with_text("the upstream sent a server error", text)
        )
    return PortError(ErrorCode.RUNTIME_PERMANENT, _with_text("the upstream sent an error", text))
