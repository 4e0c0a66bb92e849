from __future__ import annotations

from collections.abc import Sequence

from runport.application._version import VERSION
from runport.contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
)
from runport.ports import PortError, RuntimeAdapter, Sink


class Fallback(RuntimeAdapter):
    """Tries its members in order, moving on only when moving on is honest.

    A member that fails with a retryable code is replaced by the next one. When streaming, that
    is allowed only while nothing of the failed member has reached the caller: once a progress
    event was shown, the failure stands (the caller cannot un-see fragments). The failed
    member's own ``Failed`` is then swallowed, so the caller sees exactly one terminal event.
    """

    def __init__(self, adapters: Sequence[RuntimeAdapter]) -> None:
        if not adapters:
            raise ValueError("Fallback needs at least one adapter")
        self.adapters = tuple(adapters)

    def descriptor(self) -> AdapterDescriptor:
        shared = set.intersection(*(set(a.descriptor().capabilities) for a in self.adapters))
        return AdapterDescriptor(id="fallback", version=VERSION, capabilities=sorted(shared))

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        last = len(self.adapters) - 1
        for position, adapter in enumerate(self.adapters):
            try:
                return adapter.execute(request)
            except PortError as error:
                if position == last or not error.retryable:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        last = len(self.adapters) - 1
        for position, adapter in enumerate(self.adapters):
            member = _MemberSink(sink)
            try:
                return adapter.execute_streaming(request, member)
            except PortError as error:
                if error is member.raised:
                    raise  # the caller's sink raised it: not the member's failure
                if position < last and error.retryable and not member.shown:
                    continue
                sink(member.failed or Failed(code=error.code, message=error.message))
                raise
        raise AssertionError("unreachable")  # pragma: no cover


class _MemberSink:
    """Forwards one member's events, holding back its ``Failed`` until the fallback decides
    whether the caller should see it."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.shown = False
        self.failed: Failed | None = None
        self.raised: BaseException | None = None

    def __call__(self, event: StreamEvent) -> None:
        if isinstance(event, Failed):
            self.failed = self.failed or event
            return
        if event.kind != "Complete":
            self.shown = True
        try:
            self.sink(event)
        except BaseException as error:
            self.raised = error
            raise
