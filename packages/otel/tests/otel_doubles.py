"""What the otel tests share: an in-memory SDK pipeline, scripted scenarios and requests, an
async adapter that plays a scenario on the event loop, and a loopback OTLP/HTTP receiver."""

from __future__ import annotations

import asyncio
import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from runport.contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    ExecutionReceipt,
    ExecutionRequest,
    Message,
    StreamEvent,
)
from runport.core import Scenario, parse_scenario
from runport.mock import ScriptedRuntime
from runport.ports import AsyncRuntimeAdapter, AsyncSink, deliver

PROMPT = "Tell me about rivers, secretly."


@dataclass
class Recorded:
    """An SDK tracer and meter provider whose spans and metric points stay in memory."""

    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    @classmethod
    def start(cls) -> Recorded:
        spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
        reader = InMemoryMetricReader()
        return cls(spans, reader, tracer_provider, MeterProvider(metric_readers=[reader]))

    @property
    def providers(self) -> dict[str, Any]:
        return {"tracer_provider": self.tracer_provider, "meter_provider": self.meter_provider}

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()

    def only_span(self) -> ReadableSpan:
        [span] = self.spans.get_finished_spans()
        return span

    def assert_caller_stopped(self) -> None:
        """The one span, and the duration point, say the caller stopped the call; nothing
        says it failed."""
        span = self.only_span()
        assert span.status.status_code is StatusCode.UNSET
        assert span.attributes is not None
        assert span.attributes["runport.caller_stopped"] is True
        assert "error.type" not in span.attributes
        [duration] = self.points()["gen_ai.client.operation.duration"]
        assert (duration.attributes or {})["runport.caller_stopped"] is True
        assert "error.type" not in (duration.attributes or {})

    def points(self) -> dict[str, list[HistogramDataPoint]]:
        """Every histogram point recorded so far, by instrument name."""
        data = self.reader.get_metrics_data()
        found: dict[str, list[HistogramDataPoint]] = {}
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                assert scope.scope.name == "runport.otel"
                for metric in scope.metrics:
                    points = found.setdefault(metric.name, [])
                    for point in metric.data.data_points:
                        assert isinstance(point, HistogramDataPoint)
                        points.append(point)
        return found


def scenario(*turns: list[dict[str, Any]], id: str = "rivers") -> Scenario:
    return parse_scenario(
        {
            "api_version": "runport.mock/v1",
            "id": id,
            "turns": [{"events": events} for events in turns],
        }
    )


ANSWER = [
    {"kind": "delta", "text": "Rivers "},
    {"kind": "delta", "text": "run downhill."},
    {"kind": "usage", "input_tokens": 12, "output_tokens": 4},
    {"kind": "finish", "finish_reason": "stop"},
]
FAILURE = [
    {"kind": "delta", "text": "Rivers "},
    {"kind": "fail", "code": "TQX_RUNTIME_UNAVAILABLE", "message": "the upstream reset"},
]


def answered(receipt: ExecutionReceipt) -> dict[str, Any]:
    """The span attributes of a call that played ``ANSWER`` and returned ``receipt``."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "runport.mock",
        "gen_ai.request.model": "rivers",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 4,
        "runport.request_fingerprint": receipt.request_fingerprint,
        "runport.output_fingerprint": receipt.output_fingerprint,
    }


def make_request(prompt: str = PROMPT) -> ExecutionRequest:
    interaction = CompiledInteraction(
        compiler="test/0",
        contract_id="otel-test",
        contract_version="1.0.0",
        messages=[
            Message(role="system", content="Be brief."),
            Message(role="user", content=prompt),
        ],
        output_schema={"type": "string"},
    )
    return ExecutionRequest(interaction=interaction)


class AsyncScripted(AsyncRuntimeAdapter):
    """A scenario played on the event loop: each event is handed over with a yield to the loop
    between them, so a test can cancel the calling task mid-stream."""

    def __init__(self, scenario: Scenario) -> None:
        self._runtime = ScriptedRuntime(scenario)

    def descriptor(self) -> AdapterDescriptor:
        return self._runtime.descriptor()

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        await asyncio.sleep(0)
        return self._runtime.execute(request)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        events: list[StreamEvent] = []
        try:
            receipt = self._runtime.execute_streaming(request, events.append)
        finally:
            for event in events:
                await asyncio.sleep(0)
                await deliver(sink, event)
        return receipt


@dataclass(frozen=True)
class Arrival:
    path: str
    headers: dict[str, str]
    body: bytes


class OtlpReceiver:
    """A loopback OTLP/HTTP endpoint: it answers every export with success and keeps what
    arrived, so a test can decode it with the OTLP protobuf definitions."""

    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []
        arrivals = self.arrivals

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                headers = {key.lower(): value for key, value in self.headers.items()}
                arrivals.append(Arrival(self.path, headers, body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def spans(self) -> list[tuple[Any, Any, Any]]:
        """Every span that arrived, with its resource and scope: ``(resource, scope, span)``."""
        found = []
        for arrival in self.arrivals:
            if arrival.path == "/v1/traces":
                export = ExportTraceServiceRequest.FromString(arrival.body)
                for resource in export.resource_spans:
                    for scope in resource.scope_spans:
                        found += [(resource.resource, scope.scope, span) for span in scope.spans]
        return found

    def metrics(self) -> dict[str, Any]:
        """Every metric that arrived, by name."""
        found = {}
        for arrival in self.arrivals:
            if arrival.path == "/v1/metrics":
                export = ExportMetricsServiceRequest.FromString(arrival.body)
                for resource in export.resource_metrics:
                    for scope in resource.scope_metrics:
                        found.update({metric.name: metric for metric in scope.metrics})
        return found


def decoded(values: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` attributes as plain Python values."""
    result: dict[str, Any] = {}
    for item in values:
        kind = item.value.WhichOneof("value")
        value = getattr(item.value, kind)
        if kind == "array_value":
            value = tuple(getattr(v, v.WhichOneof("value")) for v in value.values)
        result[item.key] = value
    return result
