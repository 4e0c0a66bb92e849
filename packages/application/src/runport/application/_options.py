"""The keywords every run function takes, declared once (docs/runs.md)."""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from pydantic import JsonValue

from runport.application._continuation import ContinuationSeal, default_seal
from runport.application._tools import ClientToolError, Tool
from runport.contracts import Message
from runport.ports import RunObserver

ToolLike = Tool | Callable[..., Any]
Sleep = Callable[[float], Awaitable[None] | None]
Decision = bool | str
"""A person's answer to a ``ToolApprovalRequest``: ``True`` runs the call, ``False`` or a
reason (a string) denies it."""
ClientResult = JsonValue | ClientToolError
"""What a client tool returned, for a ``ClientToolCall``: a string (sent to the model as-is)
or any JSON value (sent as compact JSON), as a function tool's result is; or a
``ClientToolError`` when it failed."""

_UNOBSERVED = RunObserver()


class RunOptions(TypedDict, total=False):
    """What ``run``, ``run_stream``, ``arun`` and ``arun_stream`` accept besides the contract,
    the adapter, inputs and context — one keyword set, so the four cannot drift apart.

    ``tools``: implementations by name (and extra tools to offer). ``history``: an earlier
    conversation, repaired first. ``max_turns`` (8), ``max_corrections`` (2): the budgets.
    ``max_attempts`` (3): calls per model turn when a retryable failure comes before anything
    reached the caller. ``max_retry_wait`` (60 s): the longest ``Retry-After`` honoured; a
    longer one returns the failure at once. ``sleep``: how a retry waits, in seconds
    (``time.sleep``; ``asyncio.sleep`` for the async functions; may return an awaitable).
    ``random``: the jitter source, a float in [0, 1) (``random.random``). ``observer``: a
    ``runport.ports.RunObserver`` told when the run starts, retries, corrects, runs a tool and
    ends (``runport.otel.RunTracer`` makes spans of it; docs/observability.md).

    A person in the loop (docs/runs.md): ``continuation`` (a paused ``RunResult``'s) and
    ``approvals`` (``{call_id: True | False | "reason"}``, one per pending
    ``ToolApprovalRequest``) resume a paused run, ``tool_results`` (``{call_id: result}``, one
    per pending ``ClientToolCall``) giving it what the client tools (``Tool.client``)
    returned; ``continuation_seal`` (a ``ContinuationSeal``) seals and opens continuations
    (this process's own random key unless given).

    ``deadline`` (none): seconds the run may take from its start, read from ``clock``
    (``time.monotonic``); past it the run ends ``TQX_RUN_DEADLINE`` — found before a model
    turn or a tool call, and between the values a generator tool yields (docs/runs.md, "Tool
    progress"). A turn or a plain tool already running is not interrupted.
    """

    tools: Sequence[ToolLike]
    history: Sequence[Message] | None
    max_turns: int
    max_corrections: int
    max_attempts: int
    max_retry_wait: float
    sleep: Sleep
    random: Callable[[], float]
    observer: RunObserver
    continuation: str | None
    approvals: Mapping[str, Decision] | None
    tool_results: Mapping[str, ClientResult] | None
    continuation_seal: ContinuationSeal
    deadline: float | None
    clock: Callable[[], float]


@dataclass(frozen=True)
class Settings:
    """``RunOptions`` with its defaults applied and its values checked."""

    tools: Sequence[ToolLike] = ()
    history: Sequence[Message] | None = None
    max_turns: int = 8
    max_corrections: int = 2
    max_attempts: int = 3
    max_retry_wait: float = 60.0
    sleep: Sleep | None = None
    random: Callable[[], float] = random.random
    observer: RunObserver = _UNOBSERVED
    continuation: str | None = None
    approvals: Mapping[str, Decision] | None = None
    tool_results: Mapping[str, ClientResult] | None = None
    continuation_seal: ContinuationSeal | None = None
    deadline: float | None = None
    clock: Callable[[], float] = time.monotonic

    @property
    def seal(self) -> ContinuationSeal:
        return self.continuation_seal or default_seal()

    def __post_init__(self) -> None:
        for name, least in (("max_turns", 1), ("max_corrections", 0), ("max_attempts", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} must be an integer of at least {least}, not {value!r}")
        wait = self.max_retry_wait
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not wait >= 0:
            raise ValueError(f"max_retry_wait must be a number of seconds >= 0, not {wait!r}")
        limit = self.deadline
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int | float) or not limit > 0
        ):
            raise ValueError(f"deadline must be a number of seconds > 0, not {limit!r}")
        if not isinstance(self.observer, RunObserver):
            raise TypeError(f"observer must be a runport.ports.RunObserver, not {self.observer!r}")
        seal = self.continuation_seal
        if seal is not None and not isinstance(seal, ContinuationSeal):
            raise TypeError(f"continuation_seal must be a ContinuationSeal, not {seal!r}")


def settings(options: RunOptions) -> Settings:
    """Apply the defaults; an unknown keyword is a ``TypeError`` naming it."""
    unknown = sorted(set(options) - set(RunOptions.__annotations__))
    if unknown:
        raise TypeError(f"unexpected run option(s): {', '.join(unknown)}")
    return Settings(**options)
