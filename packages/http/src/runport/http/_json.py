"""JSON both ways across the wire, inside the bounds every adapter keeps.

Outgoing: a request body is encoded strictly, and what cannot be sent says why (a number JSON
cannot carry, or text that is not Unicode). Incoming: JSON text an upstream writes for the
receipt (an answer, tool-call arguments) is checked before anything parses it recursively —
nesting past ``MAX_JSON_DEPTH`` or an integer longer than Python will convert is a coded
failure, never a ``RecursionError`` or a ``ValueError`` deep in a parser.
"""

from __future__ import annotations

import json
from typing import Any

from runport.contracts import ErrorCode
from runport.core import JsonLimitError, parse_json_text
from runport.ports import PortError

__all__ = ["bounds_error", "check_json_text", "encode_json"]

_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
"""``json.dumps`` with these keywords builds this encoder on every call; it keeps no state
between calls, so one serves every request."""


def check_json_text(text: str, what: str) -> None:
    """Raise ``TQX_RUNTIME_INVALID_RESPONSE`` when ``text`` is JSON past the bounds: nested
    deeper than ``MAX_JSON_DEPTH`` or holding an integer of more than ``MAX_INT_DIGITS``
    digits. Text that is not JSON at all passes; parsing it is the caller's business.

    The bounds are ``runport.core.parse_json_text``'s, the one place they are kept: a text
    that is about to be parsed anyway should be parsed once, with ``JsonLimitError`` mapped
    by ``bounds_error``, as the turn assembly does.
    """
    try:
        parse_json_text(text)
    except JsonLimitError as error:
        raise bounds_error(error, what) from None


def bounds_error(error: JsonLimitError, what: str) -> PortError:
    """``JsonLimitError`` met in an upstream's ``what`` as the coded failure of the call."""
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, f"{what}: {error.message}")


def encode_json(body: Any) -> bytes:
    """A request body as strict UTF-8 JSON, or ``TQX_DATA_INVALID`` saying what could not go."""
    try:
        text = _ENCODE(body)
    except ValueError:
        raise PortError(
            ErrorCode.DATA_INVALID, "the request holds a number JSON cannot carry (NaN or infinity)"
        ) from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise PortError(
            ErrorCode.DATA_INVALID,
            "the request holds text that is not valid Unicode (a lone surrogate)",
        ) from None
