"""The optional bearer token on every ``/v1`` route."""

from __future__ import annotations

import hmac

from starlette.requests import Request

from runport.contracts import ErrorCode
from runport.server._errors import RequestRefused

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="runport"'}


def token_secret(token: str | None) -> bytes | None:
    """The token as the bytes a request must carry, or ``ValueError`` for one no client could
    send: HTTP header values are ASCII in practice (a browser's ``fetch`` refuses anything
    else, and servers read them as Latin-1), so the token must be printable ASCII with no
    spaces, or it would be accepted here and never match."""
    if token is None:
        return None
    if not token.strip():
        raise ValueError("the token must not be empty")
    if not all("!" <= character <= "~" for character in token):
        raise ValueError(
            "the token must be printable ASCII with no spaces (letters, digits and "
            "punctuation): a client cannot send other characters in an Authorization header"
        )
    return token.encode("ascii")


def check_token(request: Request, token: bytes | None) -> None:
    """Refuse a request without ``Authorization: Bearer <token>``.

    The comparison takes the same time wherever the first wrong byte is, so the response
    time says nothing about how much of a guess was right.
    """
    if token is None:
        return
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise RequestRefused(
            401, ErrorCode.ACCESS_DENIED, "this server needs a bearer token", _CHALLENGE
        )
    if not hmac.compare_digest(given.strip().encode("utf-8"), token):
        raise RequestRefused(401, ErrorCode.ACCESS_DENIED, "the token is wrong", _CHALLENGE)
