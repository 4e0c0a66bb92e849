"""``Fallback``: a composite adapter that moves to the next member only when that is honest."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TypeVar

from runport.application._relay import TurnWatch, arelay, failure_message, relay
from runport.application._version import VERSION
from runport.contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
)
from runport.ports import AsyncRuntimeAdapter, AsyncSink, PortError, RuntimeAdapter, Sink, deliver

A = TypeVar("A")

log = logging.getLogger("runport.application")

COMPOSITE = "composite"
"""The capability a composite adapter declares, so the conformance suite checks its rules."""


def composite_descriptor(members: Sequence[AdapterDescriptor]) -> AdapterDescriptor:
    """``fallback`` with the capabilities every member shares, plus ``composite``."""
    shared = set.intersection(*(set(member.capabilities) for member in members))
    return AdapterDescriptor(
        id="fallback", version=VERSION, capabilities=sorted(shared | {COMPOSITE})
    )


def moves_on(position: int, members: int, error: PortError, watch: TurnWatch | None) -> bool:
    """Whether a member's failure hands the call to the next member.

    Only a retryable failure, only while a next member exists, and, when streaming, only
    while nothing of the failed member reached the caller (the caller cannot un-see it)."""
    if position == members - 1 or not error.retryable:
        return False
    if watch is not None and (watch.shown or watch.stopped is not None):
        return False
    log.warning(
        "fallback member %d of %d failed with %s; moving to the next",
        position + 1,
        members,
        error.code,
    )
    return True


def final_failure(error: PortError, watch: TurnWatch) -> Failed:
    """The one ``Failed`` the caller sees when the fallback gives up."""
    return watch.held or Failed(code=error.code, message=failure_message(error))


def checked_members(adapters: Sequence[A], kind: type) -> tuple[A, ...]:
    if not adapters:
        raise ValueError("Fallback needs at least one adapter")
    for adapter in adapters:
        if not isinstance(adapter, kind):
            raise TypeError(f"a Fallback member must be a {kind.__name__}, not {adapter!r}")
    return tuple(adapters)


class Fallback(RuntimeAdapter):
    """Tries its members in order, moving on only when moving on is honest.

    A member that fails with a retryable code is replaced by the next one. When streaming, that
    is allowed only while nothing of the failed member has reached the caller: once a progress
    event was shown, the failure stands. A failed member's own ``Failed`` is never shown unless
    it is the call's end, so the caller sees exactly one terminal event. The descriptor
    declares ``composite``, so the conformance suite holds it to these rules.
    """

    def __init__(self, adapters: Sequence[RuntimeAdapter]) -> None:
        self.adapters = checked_members(adapters, RuntimeAdapter)

    def descriptor(self) -> AdapterDescriptor:
        return composite_descriptor([adapter.descriptor() for adapter in self.adapters])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        for position, adapter in enumerate(self.adapters):
            try:
                return adapter.execute(request)
            except PortError as error:
                if not moves_on(position, len(self.adapters), error, None):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        for position, adapter in enumerate(self.adapters):
            watch = TurnWatch()
            try:
                return adapter.execute_streaming(request, relay(watch, sink))
            except PortError as error:
                if error is watch.stopped:
                    raise  # the caller's sink raised it: not the member's failure
                if moves_on(position, len(self.adapters), error, watch):
                    continue
                sink(final_failure(error, watch))
                raise
        raise AssertionError("unreachable")  # pragma: no cover


class AsyncFallback(AsyncRuntimeAdapter):
    """``Fallback`` on the event loop, with the same rules and descriptor. Cancelling the
    call cancels the member in progress; no other member is tried."""

    def __init__(self, adapters: Sequence[AsyncRuntimeAdapter]) -> None:
        self.adapters = checked_members(adapters, AsyncRuntimeAdapter)

    def descriptor(self) -> AdapterDescriptor:
        return composite_descriptor([adapter.descriptor() for adapter in self.adapters])

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        for position, adapter in enumerate(self.adapters):
            try:
                return await adapter.execute(request)
            except PortError as error:
                if not moves_on(position, len(self.adapters), error, None):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        for position, adapter in enumerate(self.adapters):
            watch = TurnWatch()
            try:
                return await adapter.execute_streaming(request, arelay(watch, sink))
            except PortError as error:
                if error is watch.stopped:
                    raise
                if moves_on(position, len(self.adapters), error, watch):
                    continue
                await deliver(sink, final_failure(error, watch))
                raise
        raise AssertionError("unreachable")  # pragma: no cover
