"""What a request's ``runtime_policy`` asks of every provider in the same words."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from runport.contracts import ErrorCode
from runport.ports import PortError

__all__ = ["cache_key", "reasoning_policy", "sampling_settings", "server_tools_policy"]


def sampling_settings(
    policy: Mapping[str, Any], fields: Mapping[str, str], *, stop: str
) -> dict[str, Any]:
    """The ``runtime_policy`` settings a provider takes as they are, under its own names
    (``fields``: runport's key to the provider's field, in the order they are sent), then the
    ``stop`` sequences — one string or a list — always as a list under the field ``stop``."""
    settings = {field: policy[key] for key, field in fields.items() if key in policy}
    if "stop" in policy:
        sequences = policy["stop"]
        settings[stop] = [sequences] if isinstance(sequences, str) else sequences
    return settings


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


def server_tools_policy(
    policy: dict[str, Any],
    provider: str,
    tools: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]],
) -> list[dict[str, Any]]:
    """``runtime_policy.server_tools`` — a list of objects, each naming by ``type`` a tool the
    provider runs itself (``web_search``, ``code_execution``, …), with the provider's own
    options beside it — as ``provider``'s tool entries: ``tools`` maps each type it has to
    what makes its entry from the options. A type ``provider`` has no tool for is
    ``TQX_RUNTIME_CAPABILITY_UNSUPPORTED`` and a malformed list ``TQX_DATA_INVALID``, both
    before any request is sent (adr/0055-what-the-provider-did-itself.md)."""
    wanted = policy.get("server_tools")
    if wanted is None:
        return []
    if not isinstance(wanted, list) or not all(
        isinstance(entry, dict) and isinstance(entry.get("type"), str) for entry in wanted
    ):
        raise PortError(
            ErrorCode.DATA_INVALID,
            "runtime_policy.server_tools must be a list of objects, each with a type",
        )
    entries: list[dict[str, Any]] = []
    for entry in wanted:
        make = tools.get(entry["type"])
        if make is None:
            has = ", ".join(sorted(tools)) or "none"
            raise PortError(
                ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED,
                f"{provider} runs no server tool of type {entry['type']!r} (it has: {has})",
            )
        options = {key: value for key, value in entry.items() if key != "type"}
        entries.append(make(options))
    return entries
