"""Reasoning that travels through a browser and back: the provider's opaque metadata (an
Anthropic signature, encrypted reasoning) rides in a UI message part, sealed with the
server's key, so the next request can send it to the provider again — and a client cannot
slip reasoning of its own making in beside it (adr/0036). The seal is bound to the contract
and the chat it was minted in: reasoning carried into another contract's chat, or another
chat of the same contract, is as forged as reasoning made up (adr/0042)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from pydantic import JsonValue, TypeAdapter, ValidationError

from runport.contracts import ReasoningPart, canonical_json

PROVIDER_KEY = "runport"
"""The provider-metadata namespace runport's own entries live under, in both protocols."""

MIN_REASONING_KEY_BYTES = 32
"""The shortest key that may seal reasoning (as long as the HMAC-SHA256 it keys)."""

_PARTS: TypeAdapter[list[ReasoningPart]] = TypeAdapter(list[ReasoningPart])


class SealBroken(ValueError):
    """Reasoning metadata that was not sealed by this server, or was changed since."""


def check_reasoning_key(key: bytes | None) -> None:
    """Refuse (``ValueError``) a key too short to seal with: a guessable key would let a
    client forge reasoning that goes to the provider as the model's own."""
    if key is None:
        return
    if not isinstance(key, bytes):
        raise ValueError(f"a reasoning key is bytes, not {type(key).__name__}")
    if len(key) < MIN_REASONING_KEY_BYTES:
        raise ValueError(
            f"a reasoning key must be at least {MIN_REASONING_KEY_BYTES} bytes, not {len(key)}"
        )


def _seal(key: bytes, parts: JsonValue, contract_id: str, chat_id: str) -> str:
    # One canonical object: the blocks and where they were minted, so neither can be swapped
    # (the blocks alone, as sealed before adr/0042, never match).
    sealed = {"contract": contract_id, "chat": chat_id, "reasoning": parts}
    return hmac.new(key, canonical_json(sealed), hashlib.sha256).hexdigest()


def sealed_reasoning(
    parts: Sequence[ReasoningPart], key: bytes | None, *, contract_id: str, chat_id: str
) -> dict[str, JsonValue]:
    """A turn's reasoning blocks as a UI part's ``providerMetadata``: every block in order,
    its provider metadata included, and (with a key) the seal over them, bound to the
    contract and the chat the turn ran in."""
    value: JsonValue = [part.model_dump(mode="json") for part in parts]
    entry: dict[str, JsonValue] = {"reasoning": value}
    if key is not None:
        entry["seal"] = _seal(key, value, contract_id, chat_id)
    return {PROVIDER_KEY: entry}


def unsealed_reasoning(
    metadata: object, key: bytes, *, contract_id: str, chat_id: str
) -> list[ReasoningPart] | None:
    """The blocks a ``providerMetadata`` made by ``sealed_reasoning`` carries, ``None`` when
    it carries none; ``SealBroken`` when the seal is missing or does not match (another key,
    changed blocks, or sealed for another contract or chat)."""
    if not isinstance(metadata, dict) or PROVIDER_KEY not in metadata:
        return None
    entry = metadata[PROVIDER_KEY]
    if not isinstance(entry, dict) or set(entry) != {"reasoning", "seal"}:
        raise SealBroken("its runport provider metadata is not one this server wrote")
    value, given = entry["reasoning"], entry["seal"]
    expected = _seal(key, value, contract_id, chat_id)
    if not isinstance(given, str) or not hmac.compare_digest(given, expected):
        raise SealBroken(
            "its seal does not match: it was not written by this server for this contract's chat"
        )
    try:
        return _PARTS.validate_python(value)
    except ValidationError:
        raise SealBroken("its sealed blocks are not reasoning blocks") from None
