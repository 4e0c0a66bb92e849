"""JSON both ways across the wire, inside the bounds every adapter keeps.

Outgoing: a request body is encoded strictly, and what cannot be sent says why (a number JSON
cannot carry, or text that is not Unicode). Incoming: JSON text an upstream writes for the
receipt (an answer, tool-call arguments) is checked before anything parses it recursively —
nesting past ``MAX_JSON_DEPTH`` or an integer longer than Python will convert is a coded
failure, never a ``RecursionError`` or a ``ValueError`` deep in a parser.
"""

from __future__ import annotations

import json
import re
from typing import Any

from runport.contracts import MAX_INT_DIGITS, MAX_JSON_DEPTH, ErrorCode
from runport.ports import PortError

__all__ = ["check_json_text", "encode_json"]

_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]|(?<![.\d])-?\d{%d,}' % (MAX_INT_DIGITS + 1))


def check_json_text(text: str, what: str) -> None:
    """Raise ``TQX_RUNTIME_INVALID_RESPONSE`` when ``text`` nests deeper than
    ``MAX_JSON_DEPTH`` or holds an integer of more than ``MAX_INT_DIGITS`` digits.

    Linear: one regular-expression pass skips strings at C speed; only brackets and
    over-long numbers reach Python. Text that is not JSON at all passes; parsing it is the
    caller's business.
    """
    if "[" not in text and "{" not in text and len(text) <= MAX_INT_DIGITS:
        return
    depth = 0
    for match in _TOKENS.finditer(text.encode("utf-8", "surrogatepass")):
        token = match.group()
        first = token[:1]
        if first == b'"':
            continue
        if first in (b"[", b"{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise PortError(
                    ErrorCode.RUNTIME_INVALID_RESPONSE,
                    f"{what} nests deeper than {MAX_JSON_DEPTH} levels",
                )
        elif first in (b"]", b"}"):
            depth = max(0, depth - 1)
        else:
            raise PortError(
                ErrorCode.RUNTIME_INVALID_RESPONSE,
                f"{what} holds an integer of more than {MAX_INT_DIGITS} digits",
            )


def encode_json(body: Any) -> bytes:
    """A request body as strict UTF-8 JSON, or ``TQX_DATA_INVALID`` saying what could not go."""
    try:
        text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
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
