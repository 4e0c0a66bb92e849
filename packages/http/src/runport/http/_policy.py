"""What a request's ``runtime_policy`` asks of every provider in the same words."""

from __future__ import annotations

from typing import Any

from runport.contracts import ErrorCode
from runport.ports import PortError

__all__ = ["cache_key", "reasoning_policy"]


def reasoning_policy(policy: dict[str, Any]) -> dict[str, Any] | None:
    """``runtime_policy.reasoning`` as an object (its ``budget_tokens`` and ``effort`` are each
    provider's to map): ``None`` when it is absent or ``false``, ``{}`` for ``true``; anything
    else that is not an object is ``TQX_DATA_INVALID``, before any request is sent."""
    reasoning = policy.get("reasoning")
    if reasoning is None or reasoning is False:
        return None
    if reasoning is True:
        return {}
    if not isinstance(reasoning, dict):
        raise PortError(ErrorCode.DATA_INVALID, "runtime_policy.reasoning must be an object")
    return reasoning


def cache_key(policy: dict[str, Any]) -> str | None:
    """``runtime_policy.cache_key``: a non-empty string naming the prompt cache a request
    shares (OpenAI's ``prompt_cache_key``; ADR 0051), ``None`` when absent; anything else is
    ``TQX_DATA_INVALID``, before any request is sent."""
    key = policy.get("cache_key")
    if key is None:
        return None
    if not isinstance(key, str) or not key:
        raise PortError(
            ErrorCode.DATA_INVALID, "runtime_policy.cache_key must be a non-empty string"
        )
    return key
