from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    PortError,
    StreamEvent,
)

Sink = Callable[[StreamEvent], None]
"""Receives every event of a streamed call, on the caller's thread, in order."""


class RuntimeAdapter(ABC):
    """The runtime port (docs/streaming-law.md): synchronous, safe to share between threads.

    ``execute_streaming`` has a default for adapters that cannot stream: it calls ``execute``
    and sends one terminal event — ``Complete`` with the receipt, or ``Failed`` with the
    ``PortError``'s code before re-raising it. An exception raised by the sink propagates
    unchanged.
    """

    @abstractmethod
    def descriptor(self) -> AdapterDescriptor: ...

    @abstractmethod
    def execute(self, request: ExecutionRequest) -> ExecutionReceipt: ...

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        try:
            receipt = self.execute(request)
        except PortError as error:
            sink(Failed(code=error.code, message=error.message))
            raise
        sink(Complete(receipt=receipt))
        return receipt
