"""The real pipeline: spans and metrics exported over OTLP/HTTP to a receiver on 127.0.0.1, and
decoded with the OTLP protobuf definitions, as a collector or Langfuse would read them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from runport.mock import ScriptedRuntime
from runport.otel import Traced
from runport.ports import PortError

from .otel_doubles import ANSWER, FAILURE, OtlpReceiver, answered, decoded, make_request, scenario

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "otel_tracing.py"


def test_spans_and_metrics_arrive_over_otlp_http_with_their_names_and_attributes() -> None:
    with OtlpReceiver() as receiver:
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces"))
        )
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=f"{receiver.endpoint}/v1/metrics"),
            export_interval_millis=3_600_000,  # exported once, at shutdown
        )
        meter_provider = MeterProvider(metric_readers=[reader])
        adapter = Traced(
            ScriptedRuntime(scenario(ANSWER, FAILURE)),
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
        )
        receipt = adapter.execute_streaming(make_request(), lambda event: None)
        with pytest.raises(PortError):
            adapter.execute(make_request())
        tracer_provider.shutdown()
        meter_provider.shutdown()

    assert {arrival.headers["content-type"] for arrival in receiver.arrivals} == {
        "application/x-protobuf"
    }
    [(_, scope, ok), (_, _, failed)] = receiver.spans()
    assert scope.name == "runport.otel"
    assert (ok.name, ok.kind) == ("chat rivers", Span.SPAN_KIND_CLIENT)
    assert decoded(ok.attributes) == answered(receipt)
    assert ok.status.code == Status.STATUS_CODE_UNSET
    assert failed.status.code == Status.STATUS_CODE_ERROR
    assert decoded(failed.attributes)["error.type"] == "TQX_RUNTIME_UNAVAILABLE"

    metrics = receiver.metrics()
    assert set(metrics) == {
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk",
    }
    durations = metrics["gen_ai.client.operation.duration"]
    assert durations.unit == "s"
    by_error = {
        decoded(point.attributes).get("error.type"): point.count
        for point in durations.histogram.data_points
    }
    assert by_error == {None: 1, "TQX_RUNTIME_UNAVAILABLE": 1}
    tokens = {
        decoded(point.attributes)["gen_ai.token.type"]: point.sum
        for point in metrics["gen_ai.client.token.usage"].histogram.data_points
    }
    assert tokens == {"input": 12, "output": 4}


def test_the_example_exports_with_only_the_standard_environment_variables(
    tmp_path: Path,
) -> None:
    with OtlpReceiver() as receiver:
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith("OTEL_")
        }
        environment |= {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic cGs6c2s=",
            "OTEL_SERVICE_NAME": "haiku-service",
        }
        ran = subprocess.run(
            [sys.executable, EXAMPLE],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,
        )

    assert ran.returncode == 0, ran.stderr
    assert "nothing said is lost" in ran.stdout
    [(resource, _, span)] = receiver.spans()
    assert decoded(resource.attributes)["service.name"] == "haiku-service"
    assert span.name == "chat quickstart-haiku"
    fingerprint = decoded(span.attributes)["runport.output_fingerprint"]
    assert f"output fingerprint {fingerprint}" in ran.stdout
    assert {arrival.path for arrival in receiver.arrivals} == {"/v1/traces", "/v1/metrics"}
    assert {arrival.headers["authorization"] for arrival in receiver.arrivals} == {"Basic cGs6c2s="}
