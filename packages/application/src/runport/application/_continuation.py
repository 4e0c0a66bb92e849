"""A paused run's continuation: everything the run needs to go on, sealed so that only a
holder of the key could have written it (adr/0059).

The token is ``rp1.<body>.<mac>``: the body is the paused state as JSON (base64url), the mac
HMAC-SHA256 under the key over a purpose tag and those bytes, so a continuation is never
mistaken for another sealed thing under the same key (a reasoning seal, adr/0042). Nothing of
the run stays in memory: any process with the key opens it. Only the ids of continuations
already resumed are remembered, each until it expires, by a ``ContinuationLedger``, so one
continuation goes on once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runport.contracts import (
    ClientToolCall,
    CompiledInteraction,
    ExecutionReceipt,
    ToolApprovalRequest,
)

__all__ = [
    "MIN_CONTINUATION_KEY_BYTES",
    "ContinuationInvalid",
    "ContinuationLedger",
    "ContinuationSeal",
    "MemoryContinuationLedger",
    "PausedState",
]

MIN_CONTINUATION_KEY_BYTES = 32
"""The shortest key that may seal a continuation (as long as the HMAC-SHA256 it keys)."""

_PREFIX = "rp1"
_PURPOSE = b"runport/continuation/v1\x00"
DEFAULT_TTL_S = 86_400.0


class ContinuationInvalid(ValueError):
    """A continuation this seal does not open: forged, changed, sealed under another key,
    malformed, expired, already resumed, or minted for another contract."""


class PausedState(BaseModel):
    """What a continuation carries: the run as it stood when it paused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1] = 1
    id: str = Field(min_length=16)
    contract_id: str
    expires: float
    interaction: CompiledInteraction
    """The compiled contract, its ``messages`` the whole conversation so far (the paused
    turn's assistant message and the tool messages of the calls already answered included)."""
    receipts: list[ExecutionReceipt]
    warnings: list[str] = Field(default_factory=list)
    corrections: int = Field(ge=0)
    pending: list[Annotated[ToolApprovalRequest | ClientToolCall, Field(discriminator="kind")]] = (
        Field(min_length=1)
    )


@runtime_checkable
class ContinuationLedger(Protocol):
    """Where the ids of resumed continuations are kept until they expire, so a continuation
    goes on at most once. Servers behind one balancer share one (their event log's store)."""

    def spend(self, continuation_id: str, expires: float) -> bool:
        """Record ``continuation_id`` as resumed; ``False`` when it already was."""
        ...


class MemoryContinuationLedger:
    """A ``ContinuationLedger`` in this process's memory: each id kept until ``expires`` (by
    the seal's clock), so it holds at most the continuations of one ``ttl``."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._spent: dict[str, float] = {}
        self._lock = threading.Lock()

    def spend(self, continuation_id: str, expires: float) -> bool:
        with self._lock:
            now = self._clock()
            for stale in [key for key, until in self._spent.items() if until <= now]:
                del self._spent[stale]
            if continuation_id in self._spent:
                return False
            self._spent[continuation_id] = expires
            return True

    def __len__(self) -> int:
        return len(self._spent)


class ContinuationSeal:
    """Seals paused runs' continuations and opens them again.

    ``key``: at least 32 bytes, shared by every process that may resume a run (a server
    passes the key it seals reasoning with, ``--reasoning-key-file``); ``None`` draws a random
    key, so only this seal opens what it sealed. ``ttl``: seconds a continuation stays good
    (a day). ``ledger``: where resumed continuations are remembered (by default this
    process's memory, one record for every seal on the wall clock). ``clock``: seconds since
    the epoch (``time.time``).
    """

    def __init__(
        self,
        key: bytes | None = None,
        *,
        ttl: float = DEFAULT_TTL_S,
        ledger: ContinuationLedger | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if key is None:
            key = secrets.token_bytes(MIN_CONTINUATION_KEY_BYTES)
        if not isinstance(key, bytes):
            raise TypeError(f"a continuation key is bytes, not {type(key).__name__}")
        if len(key) < MIN_CONTINUATION_KEY_BYTES:
            raise ValueError(
                f"a continuation key must be at least {MIN_CONTINUATION_KEY_BYTES} bytes, "
                f"not {len(key)}"
            )
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
            raise ValueError(f"ttl must be a number of seconds > 0, not {ttl!r}")
        if ledger is not None and not isinstance(ledger, ContinuationLedger):
            raise TypeError(f"ledger must be a ContinuationLedger, not {ledger!r}")
        self._key = key
        self.ttl = float(ttl)
        self.clock = clock
        if ledger is None:
            # One record per process for every seal on the wall clock, so a seal made per
            # request still refuses a replay; a seal on its own clock keeps its own.
            ledger = _process_ledger() if clock is time.time else MemoryContinuationLedger(clock)
        self.ledger: ContinuationLedger = ledger

    def __repr__(self) -> str:
        return f"ContinuationSeal(ttl={self.ttl:g})"  # never the key

    def new_id(self) -> str:
        return secrets.token_hex(16)

    def expiry(self) -> float:
        return self.clock() + self.ttl

    def seal(self, state: PausedState) -> str:
        body = state.model_dump_json().encode("utf-8")
        return ".".join((_PREFIX, _b64(body), _b64(self._mac(body))))

    def open(self, token: object, contract_id: str) -> PausedState:
        """The state ``token`` carries, checked: sealed by this key, unchanged, unexpired and
        minted for ``contract_id`` (``ContinuationInvalid`` otherwise). Not yet spent: see
        ``spend``."""
        if not isinstance(token, str):
            raise ContinuationInvalid(f"a continuation is a string, not {type(token).__name__}")
        pieces = token.split(".")
        if len(pieces) != 3 or pieces[0] != _PREFIX:
            raise ContinuationInvalid("it is not a runport continuation")
        try:
            body, mac = _unb64(pieces[1]), _unb64(pieces[2])
        except ValueError:
            raise ContinuationInvalid("it is not a runport continuation") from None
        if not hmac.compare_digest(mac, self._mac(body)):
            raise ContinuationInvalid("its seal does not match: it was not sealed by this key")
        try:
            state = PausedState.model_validate_json(body)
        except ValidationError:
            raise ContinuationInvalid("its sealed state is not a paused run") from None
        if state.contract_id != contract_id:
            raise ContinuationInvalid(
                f"it was minted for contract {state.contract_id!r}, not {contract_id!r}"
            )
        if self.clock() >= state.expires:
            raise ContinuationInvalid("it has expired")
        return state

    def spend(self, state: PausedState) -> None:
        """Mark ``state`` resumed (``ContinuationInvalid`` when it already was)."""
        if not self.ledger.spend(state.id, state.expires):
            raise ContinuationInvalid("it was already resumed once")

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._key, _PURPOSE + body, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """Strict: only the one spelling ``_b64`` writes decodes (no padding, no stray or
    non-canonical characters), so a token has one form."""
    try:
        data = base64.b64decode(
            (text + "=" * (-len(text) % 4)).translate(_FROM_URLSAFE), validate=True
        )
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None
    if _b64(data) != text:
        raise ValueError("not base64url")
    return data


_FROM_URLSAFE = str.maketrans("-_", "+/")


_DEFAULT: ContinuationSeal | None = None
_LEDGER: MemoryContinuationLedger | None = None
_DEFAULT_LOCK = threading.Lock()


def _process_ledger() -> MemoryContinuationLedger:
    global _LEDGER
    with _DEFAULT_LOCK:
        if _LEDGER is None:
            _LEDGER = MemoryContinuationLedger()
        return _LEDGER


def default_seal() -> ContinuationSeal:
    """This process's seal: a random key drawn once, so a run paused here resumes here."""
    global _DEFAULT
    if _DEFAULT is None:
        seal = ContinuationSeal()
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = seal
    return _DEFAULT
