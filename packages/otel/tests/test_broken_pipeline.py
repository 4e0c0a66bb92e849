"""A tracing pipeline that raises never breaks the call it records (issue 22, item 12).

The real SDK, with a span processor that raises in ``on_start`` or ``on_end`` and a meter whose
every measurement raises: each traced call — sync and async, streamed and not, succeeding or
failing — returns the receipt (or raises the error) the bare adapter gives, and the breakage is
one warning on the ``runport.otel`` logger however many calls meet it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics._internal.exemplar import ExemplarFilter
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.types import Attributes

from runport.application import arun_stream, run
from runport.contracts import ExecutionReceipt, StreamEvent
from runport.core import parse_contract
from runport.mock import ScriptedRuntime
from runport.otel import RunTracer, Traced
from runport.ports import AsyncRuntimeAdapter, PortError, RuntimeAdapter

from .otel_doubles import ANSWER, FAILURE, AsyncScripted, make_request, scenario


class Broken(RuntimeError):
    """What the pipeline raises."""


class RaisingProcessor(SpanProcessor):
    def __init__(self, where: str) -> None:
        self.where = where

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.where == "on_start":
            raise Broken("on_start")

    def on_end(self, span: ReadableSpan) -> None:
        if self.where == "on_end":
            raise Broken("on_end")


class RaisingFilter(ExemplarFilter):
    """Consulted on every measurement, so every ``record`` raises."""

    def should_sample(
        self,
        value: float,
        time_unix_nano: int,
        attributes: Attributes,
        context: Context,
    ) -> bool:
        raise Broken("record")


def providers(where: str) -> dict[str, Any]:
    """An SDK pipeline broken at ``where``; the spans that do end are kept in memory."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    reader = InMemoryMetricReader()
    if where == "meter":
        meter_provider = MeterProvider(metric_readers=[reader], exemplar_filter=RaisingFilter())
    else:
        tracer_provider.add_span_processor(RaisingProcessor(where))
        meter_provider = MeterProvider(metric_readers=[reader])
    return {"tracer_provider": tracer_provider, "meter_provider": meter_provider}


@pytest.fixture
def warnings(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG, logger="runport.otel"):
        yield caplog


def warned(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "runport.otel" and r.levelno >= logging.WARNING]


def call(adapter: RuntimeAdapter | AsyncRuntimeAdapter, streamed: bool) -> Any:
    """The call's receipt and events, or its ``PortError``'s code and events."""
    events: list[StreamEvent] = []
    request = make_request()

    async def acall(inner: AsyncRuntimeAdapter) -> ExecutionReceipt:
        if streamed:
            return await inner.execute_streaming(request, events.append)
        return await inner.execute(request)

    try:
        if isinstance(adapter, RuntimeAdapter):
            receipt = (
                adapter.execute_streaming(request, events.append)
                if streamed
                else adapter.execute(request)
            )
        else:
            receipt = asyncio.run(acall(adapter))
    except PortError as error:
        return error.code, events
    return receipt, events


WHERE = ["on_start", "on_end", "meter"]
KINDS = ["sync", "async"]


def bare(kind: str, turn: list[dict[str, Any]]) -> RuntimeAdapter | AsyncRuntimeAdapter:
    played = scenario(turn, turn)
    return ScriptedRuntime(played) if kind == "sync" else AsyncScripted(played)


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "unstreamed"])
@pytest.mark.parametrize("turn", [ANSWER, FAILURE], ids=["answer", "failure"])
def test_a_raising_pipeline_leaves_the_call_as_the_bare_adapter_gives_it(
    where: str,
    kind: str,
    streamed: bool,
    turn: list[dict[str, Any]],
    warnings: pytest.LogCaptureFixture,
) -> None:
    expected = call(bare(kind, turn), streamed)
    traced = Traced(bare(kind, turn), **providers(where))
    assert call(traced, streamed) == expected
    assert call(traced, streamed) == expected  # a second call meets the same breakage
    (warning,) = warned(warnings)
    assert "OpenTelemetry raised Broken" in warning.getMessage()
    assert warning.exc_info is not None


CONTRACT = parse_contract(
    {
        "api_version": "runport/v1alpha1",
        "id": "rivers",
        "version": "1.0.0",
        "messages": [{"role": "user", "content": [{"kind": "text", "value": "Rivers?"}]}],
        "output_schema": {"type": "string"},
    }
)


@pytest.mark.parametrize("where", ["on_start", "on_end"])
def test_a_raising_pipeline_leaves_a_traced_run_as_it_is(
    where: str, warnings: pytest.LogCaptureFixture
) -> None:
    tracing = providers(where)
    observer = RunTracer(tracer_provider=tracing["tracer_provider"])
    result = run(CONTRACT, Traced(ScriptedRuntime(scenario(ANSWER)), **tracing), observer=observer)
    assert result.output == "Rivers run downhill."
    seen: list[StreamEvent] = []
    aresult = asyncio.run(
        arun_stream(
            CONTRACT,
            Traced(AsyncScripted(scenario(ANSWER)), **tracing),
            on_event=seen.append,
            observer=observer,
        )
    )
    assert aresult.output == "Rivers run downhill."
    assert [event.kind for event in seen][-1] == "Complete"
    assert len(warned(warnings)) == 3  # once for the run tracer, once for each wrapped adapter
