"""What a request's ``runtime_policy`` asks of every provider in the same words."""

from __future__ import annotations

from typing import Any

from runport.contracts import ErrorCode
from runport.ports import PortError

__all__ = ["reasoning_policy"]


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
