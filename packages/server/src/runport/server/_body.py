"""Reading an execution request: a bounded body holding ``{"inputs": …, "context": …}``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from runport.contracts import ErrorCode
from runport.server._errors import RequestRefused

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
"""The default bound on a request body (1 MiB): inputs are prompts' values, not uploads."""

_KEYS = frozenset({"inputs", "context"})


@dataclass(frozen=True)
class ExecutionCall:
    inputs: dict[str, Any]
    context: dict[str, Any] | None


def _too_large(limit: int) -> RequestRefused:
    return RequestRefused(
        413, ErrorCode.REQUEST_TOO_LARGE, f"the request body is larger than {limit} bytes"
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The body, read no further than ``limit`` bytes: a declared length over the bound is
    refused before reading, and a chunked body is cut off at the first byte past it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _too_large(limit)
    return bytes(body)


def _malformed(message: str) -> RequestRefused:
    return RequestRefused(400, ErrorCode.DATA_INVALID, message)


def parse_call(body: bytes) -> ExecutionCall:
    """The call in a body, or a 400 naming what is wrong with it."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _malformed(f"the body is not JSON ({error})") from None
    if not isinstance(data, dict):
        raise _malformed('the body must be a JSON object: {"inputs": {...}, "context": {...}}')
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
