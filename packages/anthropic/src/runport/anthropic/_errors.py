"""What the Messages API reports as an error, as a ``PortError``.

An ``event: error`` frame (or an error body) is ``{"type": "error", "error": {"type": …,
"message": …}}``; the error's type alone picks the code. The message keeps the provider's own
``message`` field only, through ``runport.http.provider_text`` (docs/upstream-safety.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from runport.contracts import ErrorCode
from runport.http import error_message, provider_text
from runport.ports import PortError

_CODES: Final = {
    "overloaded_error": ErrorCode.RUNTIME_UNAVAILABLE,
    "rate_limit_error": ErrorCode.RUNTIME_RATE_LIMITED,
    "api_error": ErrorCode.RUNTIME_UNAVAILABLE,
}
_WORD = re.compile(r"[a-z_]{1,64}")


def error_event(body: Any, secrets: Iterable[str] = ()) -> PortError:
    """An error frame or body: ``overloaded_error`` and ``api_error`` → ``UNAVAILABLE``,
    ``rate_limit_error`` → ``RATE_LIMITED``, any other type → ``PERMANENT``."""
    error = body.get("error") if type(body) is dict else None
    kind = error.get("type") if type(error) is dict else None
    kind = kind if type(kind) is str and _WORD.fullmatch(kind) else None
    code = _CODES.get(kind or "", ErrorCode.RUNTIME_PERMANENT)
    message = f"the upstream sent an error ({kind})" if kind else "the upstream sent an error"
    text = provider_text(error_message(body), secrets)
    return PortError(code, message if text is None else f"{message}: {text}")


def invalid(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)
