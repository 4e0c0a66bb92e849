"""``Traced``: the decorator that puts a span and metrics around every call of an adapter.

Two classes, one per kind of port, because a wrapper must be the same kind as what it wraps
for the application and the conformance suite to accept it; everything they record is in
``_telemetry``.
"""

from __future__ import annotations

from typing import Generic, TypeVar, overload

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from runport.contracts import AdapterDescriptor, ExecutionReceipt, ExecutionRequest
from runport.otel._telemetry import Telemetry
from runport.ports import AsyncRuntimeAdapter, AsyncSink, RuntimeAdapter, Sink

Port = TypeVar("Port", RuntimeAdapter, AsyncRuntimeAdapter)


class _Decorator(Generic[Port]):
    """What both wrappers are besides their calls: the adapter they wrap, and its descriptor."""

    def __init__(self, wrapped: Port, telemetry: Telemetry) -> None:
        self._wrapped: Port = wrapped
        self._telemetry = telemetry

    @property
    def wrapped(self) -> Port:
        return self._wrapped

    def __repr__(self) -> str:
        return f"Traced({self._wrapped!r})"

    def descriptor(self) -> AdapterDescriptor:
        return self._wrapped.descriptor()


class TracedAdapter(_Decorator[RuntimeAdapter], RuntimeAdapter):
    """A ``RuntimeAdapter`` that records each call of ``wrapped`` (docs/observability.md).

    Events, receipts and exceptions pass through unchanged, in order, on the caller's thread.
    """

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        with self._telemetry.call(request, streamed=False) as call:
            return call.succeeded(self._wrapped.execute(request))

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        with self._telemetry.call(request, streamed=True) as call:
            return call.succeeded(self._wrapped.execute_streaming(request, call.watch(sink)))


class AsyncTracedAdapter(_Decorator[AsyncRuntimeAdapter], AsyncRuntimeAdapter):
    """``TracedAdapter``'s twin on the event loop; a cancelled call is recorded as a caller stop."""

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        with self._telemetry.call(request, streamed=False) as call:
            return call.succeeded(await self._wrapped.execute(request))

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        with self._telemetry.call(request, streamed=True) as call:
            watched = call.watch_async(sink)
            return call.succeeded(await self._wrapped.execute_streaming(request, watched))


@overload
def Traced(
    adapter: RuntimeAdapter,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool = False,
) -> TracedAdapter: ...


@overload
def Traced(
    adapter: AsyncRuntimeAdapter,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool = False,
) -> AsyncTracedAdapter: ...


def Traced(
    adapter: RuntimeAdapter | AsyncRuntimeAdapter,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool = False,
) -> TracedAdapter | AsyncTracedAdapter:
    """Wrap ``adapter`` so each call becomes one OpenTelemetry GenAI ``chat`` span plus metrics.

    The providers default to the global ones OpenTelemetry's SDK (or auto-instrumentation)
    installs, so an application that configured OpenTelemetry needs to pass nothing. Prompt
    and answer text are recorded only with ``capture_content=True``.
    """
    if not isinstance(capture_content, bool):
        raise TypeError(f"capture_content must be True or False, not {capture_content!r}")
    if not isinstance(adapter, RuntimeAdapter | AsyncRuntimeAdapter):
        raise TypeError(
            "Traced wraps a runport.ports.RuntimeAdapter or AsyncRuntimeAdapter, "
            f"not {type(adapter).__name__}"
        )
    telemetry = Telemetry(
        adapter.descriptor(),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
    )
    if isinstance(adapter, RuntimeAdapter):
        return TracedAdapter(adapter, telemetry)
    return AsyncTracedAdapter(adapter, telemetry)
