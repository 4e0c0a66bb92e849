"""What an OpenAI-compatible server reports as an error, as a ``PortError``.

The classification reads the error object's ``type``/``code``/``status`` words; the message
keeps the provider's own ``message`` field only, through ``runport.http.provider_text``
(bounded, control characters stripped, key-shaped strings redacted). Nothing else the
upstream wrote reaches a message (docs/upstream-safety.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runport.contracts import ErrorCode
from runport.http import error_from_words, provider_text
from runport.ports import PortError


def error_message(body: Any) -> Any:
    """The ``message`` of ``{"error": {"message": …}}`` (or of a bare error object)."""
    if type(body) is dict:
        error = body.get("error", body)
        if type(error) is dict:
            return error.get("message")
        if type(error) is str:  # some servers answer {"error": "text"}
            return error
    return None


def spent_quota(body: Any) -> bool:
    """Whether an error body says the account's quota is spent (OpenAI's
    ``insufficient_quota``, as its ``type`` or its ``code``), not that it is throttled."""
    if type(body) is not dict:
        return False
    error = body.get("error")
    if type(error) is not dict:
        return False
    return "insufficient_quota" in (error.get("type"), error.get("code"))


def error_frame(error: Any, secrets: Iterable[str] = ()) -> PortError:
    """``{"error": …}`` in a body or SSE frame: classified by its ``type``/``code`` words.

    Rate limits → ``RATE_LIMITED``; server, overload and capacity errors → ``UNAVAILABLE``;
    anything else → ``PERMANENT``. A numeric code is read as the HTTP status it names (as
    llama.cpp sends them).
    """
    words: list[str] = []
    status: int | None = None
    if type(error) is dict:
        for key in ("type", "code", "status"):
            value = error.get(key)
            if type(value) is int:
                status = value
            elif type(value) is str:
                if value.isdigit() and len(value) <= 3:
                    status = int(value)
                words.append(value[:200])
    text = provider_text(error_message({"error": error}), secrets)
    return error_from_words(words, status, text)


def invalid(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)
