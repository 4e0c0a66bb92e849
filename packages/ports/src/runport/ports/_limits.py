"""The limits every adapter obeys, and the one rule that combines them.

An adapter has its own settings (``max_response_bytes``, ``deadline``) and a request may carry
its own (``runtime_policy.max_response_bytes``, ``runtime_policy.deadline_s``); the smaller of
the two applies, and the defaults below apply when neither is set. Kept here, beside the port,
so a third-party adapter imports the rule instead of rewriting it.
"""

from __future__ import annotations

import math
from importlib import metadata
from typing import Final

from runport.contracts import ErrorCode, ExecutionRequest, PortError

__all__ = [
    "DEFAULT_DEADLINE_S",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "check_byte_count",
    "check_seconds",
    "deadline_for",
    "distribution_version",
    "max_response_bytes_for",
]

DEFAULT_MAX_RESPONSE_BYTES: Final = 8 * 1024 * 1024
"""The response bound (streaming law 8) when neither the adapter nor the request sets one."""

DEFAULT_DEADLINE_S: Final = 600.0
"""The total time one call may take when neither the adapter nor the request sets one."""


def _is_byte_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_seconds(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def check_byte_count(value: int | None, name: str = "max_response_bytes") -> int | None:
    """An adapter's own byte setting, checked at construction (``ValueError`` when unusable)."""
    if value is not None and not _is_byte_count(value):
        raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
    return value


def check_seconds(value: float | None, name: str = "deadline") -> float | None:
    """An adapter's own time setting, checked at construction (``ValueError`` when unusable)."""
    if value is not None and not _is_seconds(value):
        raise ValueError(f"{name} must be a positive, finite number of seconds, not {value!r}")
    return None if value is None else float(value)


def max_response_bytes_for(request: ExecutionRequest, own: int | None) -> int:
    """The byte bound for one call: the smaller of the adapter's and the request's.

    Raises ``PortError(TQX_DATA_INVALID)`` when the request's own bound is not a byte count.
    """
    policy = request.interaction.runtime_policy.get(
        "max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES
    )
    if not _is_byte_count(policy):
        raise PortError(
            ErrorCode.DATA_INVALID,
            "runtime_policy.max_response_bytes must be a non-negative integer",
        )
    assert isinstance(policy, int)
    return policy if own is None else min(policy, own)


def deadline_for(request: ExecutionRequest, own: float | None) -> float:
    """The total seconds one call may take: the smaller of the adapter's and the request's.

    Raises ``PortError(TQX_DATA_INVALID)`` when the request's ``deadline_s`` is not a positive,
    finite number.
    """
    policy = request.interaction.runtime_policy.get("deadline_s", DEFAULT_DEADLINE_S)
    if not _is_seconds(policy):
        raise PortError(
            ErrorCode.DATA_INVALID,
            "runtime_policy.deadline_s must be a positive, finite number of seconds",
        )
    assert isinstance(policy, int | float)
    seconds = float(policy)
    return seconds if own is None else min(seconds, own)


def distribution_version(distribution: str) -> str:
    """The installed version of ``distribution``, or ``0.0.0`` when run from an uninstalled tree."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "0.0.0"
