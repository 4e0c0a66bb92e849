"""Send a traced call to any OTLP endpoint — Jaeger, Langfuse, an OpenTelemetry Collector —
configured by the standard OTEL_* environment variables alone (docs/observability.md).

    OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 OTEL_SERVICE_NAME=haiku \\
        python3 -m uv run --all-packages python examples/otel_tracing.py

It plays the quickstart's scripted runtime, so it needs no model and no API key: swap in a
real adapter and the spans name its provider and model instead.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from runport.contracts import Delta, ExecutionRequest, StreamEvent
from runport.core import compile_contract, load_contract
from runport.mock import ScriptedRuntime
from runport.otel import Traced

QUICKSTART = Path(__file__).parent / "quickstart"


def configure() -> tuple[TracerProvider, MeterProvider]:
    """The SDK set up once, at start-up, the way any OpenTelemetry application does it.

    The exporters and ``Resource.create()`` read the OTEL_* variables themselves (endpoint,
    headers, service name, resource attributes); ``OTEL_METRICS_EXPORTER=none`` turns metrics
    off for backends that take traces only, as Langfuse does.
    """
    resource = Resource.create()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    readers = []
    if os.environ.get("OTEL_METRICS_EXPORTER", "otlp") != "none":
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    metrics.set_meter_provider(meter_provider)
    return tracer_provider, meter_provider


def show(event: StreamEvent) -> None:
    if isinstance(event, Delta):
        sys.stdout.write(event.text)
        sys.stdout.flush()


def main() -> None:
    tracer_provider, meter_provider = configure()
    contract = load_contract(QUICKSTART / "contract.yaml")
    inputs = json.loads((QUICKSTART / "input.json").read_text(encoding="utf-8"))["inputs"]
    request = ExecutionRequest(interaction=compile_contract(contract, inputs=inputs))
    # No providers passed: Traced uses the global ones configure() installed.
    runtime = Traced(ScriptedRuntime.from_scenario(QUICKSTART / "scenario.yaml"))
    receipt = runtime.execute_streaming(request, show)
    print(f"\noutput fingerprint {receipt.output_fingerprint}")
    # Shutting down flushes what the batch processor and the metric reader still hold.
    tracer_provider.shutdown()
    meter_provider.shutdown()


if __name__ == "__main__":
    main()
