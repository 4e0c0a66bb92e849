"""Reading an execution request: a bounded body holding ``{"inputs": …, "context": …}``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.requests import Request

from runport.contracts import ErrorCode
from runport.core import JsonLimitError, parse_json_text
from runport.server._errors import RequestRefused

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
"""The default bound on a request body (1 MiB): inputs are prompts' values, not uploads."""

DEFAULT_BODY_TIMEOUT_S = 30.0
"""How long a request body may take to arrive, whole (docs/limits.md): a client that sends
its body a byte at a time does not hold a connection for longer."""

_KEYS = frozenset({"inputs", "context"})
# A body that stopped arriving is not waited for again: the connection closes after the 408.
_CLOSE = {"Connection": "close"}


@dataclass(frozen=True)
class ExecutionCall:
    inputs: dict[str, Any]
    context: dict[str, Any] | None


def _too_large(limit: int) -> RequestRefused:
    return RequestRefused(
        413, ErrorCode.REQUEST_TOO_LARGE, f"the request body is larger than {limit} bytes"
    )


async def read_body(request: Request, limit: int, timeout: float = DEFAULT_BODY_TIMEOUT_S) -> bytes:
    """The body, read no further than ``limit`` bytes and for no longer than ``timeout``
    seconds: a declared length over the bound is refused before reading, a chunked body is
    cut off at the first byte past it, and a body still arriving at the deadline is 408."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body = bytearray()
    with anyio.move_on_after(timeout) as deadline:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise _too_large(limit)
    if deadline.cancelled_caught:
        raise RequestRefused(
            408,
            ErrorCode.DATA_INVALID,
            f"the request body did not arrive within {timeout:g} s",
            _CLOSE,
        )
    return bytes(body)


def _malformed(message: str) -> RequestRefused:
    return RequestRefused(400, ErrorCode.DATA_INVALID, message)


def _json(body: bytes) -> object:
    """The body's JSON value, read by the same bounded parser as every JSON text runport reads
    (docs/limits.md): nesting and integer size past the bounds are a 400, like any bad body."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _malformed(f"the body is not JSON (it is not UTF-8: {error.reason})") from None
    try:
        is_json, value = parse_json_text(text)
    except JsonLimitError as error:
        raise _malformed(f"the body is refused: {error.message}") from None
    if not is_json:
        raise _malformed(f"the body is not JSON{_where(text)}")
    return value


def _where(text: str) -> str:
    """Where the JSON goes wrong, as Python's reader says it (the bounded read already
    refused the text, so this second look only words the message)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        return f" ({error})"
    except (ValueError, RecursionError):
        pass
    return " (a lone surrogate, NaN or Infinity is not JSON)"


def parse_json_object(body: bytes, shape: str) -> dict[str, Any]:
    """The body's JSON object, or a 400: ``shape`` says what the object should look like."""
    data = _json(body)
    if not isinstance(data, dict):
        raise _malformed(shape)
    return data


def parse_call(body: bytes) -> ExecutionCall:
    """The call in a body, or a 400 naming what is wrong with it."""
    data = parse_json_object(
        body, 'the body must be a JSON object: {"inputs": {...}, "context": {...}}'
    )
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise _malformed(f"unknown field(s): {', '.join(unknown)} (expected inputs, context)")
    inputs = data.get("inputs", {})
    if not isinstance(inputs, dict):
        raise _malformed("'inputs' must be an object")
    context = data.get("context")
    if context is not None and not isinstance(context, dict):
        raise _malformed("'context' must be an object or null")
    return ExecutionCall(inputs, context)
