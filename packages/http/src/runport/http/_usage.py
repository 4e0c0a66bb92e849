"""Prompt-cache counts as a provider reports them, checked before they reach ``Usage``
(ADR 0051): a bad count is the server's fault, coded, never clamped."""

from __future__ import annotations

from typing import Any

from runport.contracts import ErrorCode
from runport.ports import PortError

__all__ = ["cache_counts"]


def cache_counts(
    read: Any, write: Any = None, *, input_tokens: int | None
) -> tuple[int | None, int | None]:
    """``(cache reads, cache writes)``, each ``None`` when the provider left it out.

    Each must be a non-negative integer; when ``input_tokens`` is given the cache counts are
    parts of it (OpenAI, Gemini) and together may not exceed it. Anything else is
    ``TQX_RUNTIME_INVALID_RESPONSE``.
    """
    counts = (read, write)
    for count in counts:
        if count is not None and (type(count) is not int or count < 0):
            raise PortError(
                ErrorCode.RUNTIME_INVALID_RESPONSE, "usage's cache counts are not token counts"
            )
    if input_tokens is not None and (read or 0) + (write or 0) > input_tokens:
        raise PortError(
            ErrorCode.RUNTIME_INVALID_RESPONSE,
            "usage counts more cached tokens than input tokens",
        )
    return read, write
