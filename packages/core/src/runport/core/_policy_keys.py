"""The ``runtime_policy`` keys the adapters in this repository read, and a warning for a key
none of them reads (ADR 0051): never an error, since an adapter written elsewhere may read it,
and never silence, since a misspelt key would otherwise be dropped without a word."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from types import MappingProxyType

from runport.contracts import Diagnostic, ErrorCode

__all__ = ["RUNTIME_POLICY_KEYS", "RuntimePolicyWarning", "runtime_policy_warnings"]

_EVERY = "every adapter"
RUNTIME_POLICY_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "cache_key": ("openai", "openai-responses"),
        "deadline_s": (_EVERY,),
        "max_response_bytes": (_EVERY,),
        "max_tokens": ("anthropic", "gemini", "openai", "openai-responses"),
        "reasoning": ("anthropic", "gemini", "openai-responses"),
        "seed": ("gemini", "openai"),
        "server_tools": ("anthropic", "gemini", "openai-responses"),
        "stop": ("anthropic", "gemini", "openai"),
        "temperature": ("anthropic", "gemini", "openai", "openai-responses"),
        "thinking": ("anthropic",),
        "thinking_config": ("gemini",),
        "tool_choice": ("anthropic", "openai", "openai-responses"),
        "top_k": ("anthropic", "gemini"),
        "top_p": ("anthropic", "gemini", "openai", "openai-responses"),
    }
)
"""Each key, and the adapters (by entry-point name) that read it."""


class RuntimePolicyWarning(UserWarning):
    """A contract's ``runtime_policy`` holds a key no adapter here reads."""


def runtime_policy_warnings(
    policy: Mapping[str, object], *, source: str | None
) -> list[Diagnostic]:
    """A ``warning`` diagnostic per unknown key (each also a :class:`RuntimePolicyWarning`),
    naming the key and which adapters read which keys."""
    unknown = sorted(key for key in policy if key not in RUNTIME_POLICY_KEYS)
    if not unknown:
        return []
    known = "; ".join(
        f"{key} ({', '.join(readers)})" for key, readers in RUNTIME_POLICY_KEYS.items()
    )
    where = f"{source}: " if source is not None else ""
    found: list[Diagnostic] = []
    for key in unknown:
        message = (
            f"runtime_policy key {key!r} is read by no adapter in runport, so it is sent nowhere "
            f"(an adapter of your own may read it); the keys adapters read: {known}"
        )
        warnings.warn(f"{where}{message}", RuntimePolicyWarning, stacklevel=3)
        found.append(
            Diagnostic(
                code=ErrorCode.CONTRACT_INVALID,
                severity="warning",
                json_pointer="/runtime_policy/" + key.replace("~", "~0").replace("/", "~1"),
                message=message,
            )
        )
    return found
