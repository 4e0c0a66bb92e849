"""The optional bearer token on every ``/v1`` route."""

from __future__ import annotations

import hmac

from starlette.requests import Request

from runport.contracts import ErrorCode
from runport.server._errors import RequestRefused

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="runport"'}


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
