"""Credentials in text: the one rule for every place runport writes text an upstream or a URL
may have put credentials in (docs/security.md).

An upstream may echo the URL it was asked for — in a 401 body, in an error message — and with
it the credentials a ``base_url`` carried: ``user:password@`` user-info, or a query parameter
such as ``?api-key=…``. Whatever writes such text (an error built from an upstream body, a
recorded scenario, a batch output line, a log line, the terminal) passes it through
:func:`redact_secrets` first.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

__all__ = ["REDACTED", "is_secret_parameter", "redact_secrets"]

REDACTED: Final = "[redacted]"

_SECRET_WORDS: Final = r"key|token|secret|sig|pass|pwd|auth|credential|session"
_SECRET_NAME: Final = re.compile(_SECRET_WORDS, re.IGNORECASE)

_NAME_CHARS = r"A-Za-z0-9_.\-\[\]"
_USER_INFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#\"'<>\\]*@")
"""A URL's user-info: everything between ``scheme://`` and the authority's last ``@``."""
_PARAMETER = re.compile(
    rf"(?<=[?&;#])(?P<name>[{_NAME_CHARS}]*(?:{_SECRET_WORDS})[{_NAME_CHARS}]*)"
    r"=(?P<value>[^&;\s#\"'<>\\]+)",
    re.IGNORECASE,
)
"""A query (or fragment) parameter ``name=value`` whose name holds a credential word (``key``,
``api-key``, ``access_token``, ``X-Amz-Signature``, ``password`` …). Only after ``?``, ``&``,
``;`` or ``#``: prose such as "takes KEY=VALUE" is left as it is."""
_BEARER = re.compile(r"\b(?P<scheme>Bearer)\s+[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE)
_BASIC = re.compile(r"\b(?P<scheme>Basic)\s+(?P<token>[A-Za-z0-9+/]{4,}={0,2})", re.IGNORECASE)
"""What an echoed ``Authorization`` header carries; a ``Basic`` token only when it decodes to
``user:password`` (so "Basic usage" stays as it is)."""


def _basic(match: re.Match[str]) -> str:
    token = match["token"]
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return match[0]
    return f"{match['scheme']} {REDACTED}" if b":" in decoded else match[0]


def is_secret_parameter(name: str) -> bool:
    """Whether a query parameter (or header) named ``name`` is taken to carry a credential:
    its name holds ``key``, ``token``, ``secret``, ``sig``, ``pass``, ``pwd``, ``auth``,
    ``credential`` or ``session``, in any case. A harmless name caught too costs a value in a
    message, never a credential."""
    return _SECRET_NAME.search(name) is not None


def redact_secrets(text: str) -> str:
    """``text`` with every credential it shows replaced by ``[redacted]``: the user-info of any
    URL (``https://[redacted]@host/…``), the value of every query parameter whose name is a
    credential's (:func:`is_secret_parameter`), and the token of a ``Bearer``/``Basic``
    authorization. Idempotent; text without any is returned as it is."""
    if "@" in text:
        text = _USER_INFO.sub(rf"\g<scheme>{REDACTED}@", text)
    if "=" in text:
        text = _PARAMETER.sub(rf"\g<name>={REDACTED}", text)
    text = _BEARER.sub(rf"\g<scheme> {REDACTED}", text)
    return _BASIC.sub(_basic, text) if "asic" in text else text
