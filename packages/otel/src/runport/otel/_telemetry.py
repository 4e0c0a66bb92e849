"""The span and metric logic of one traced call, written once for both kinds of adapter.

A ``Telemetry`` holds what is fixed for one wrapped adapter (its tracer, meter instruments and
the attributes its descriptor gives every call); ``Telemetry.call`` makes a ``CallTrace``, a
context manager the sync and async wrappers both enter around the inner adapter's call. The
wrappers differ only in how they call the inner adapter and wrap the sink.

The tracing pipeline is never allowed to break the call it records: whatever a span
processor, an exporter or a meter raises is caught (``Pipeline``), reported on the
``runport.otel`` logger, and the call returns, or raises, exactly what the adapter gave.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from contextvars import Token
from time import perf_counter
from types import TracebackType
from typing import Final, get_args

from opentelemetry import context, metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from runport.contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    ProgressEvent,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
    Usage,
    fingerprint,
)
from runport.otel._content import finish_word, input_messages, output_messages
from runport.ports import AsyncSink, PortError, Sink, deliver, distribution_version, error_type

SCOPE: Final = "runport.otel"
SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.37.0"

OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
REASONING_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
"""Of the output tokens, those spent reasoning (the GenAI conventions' name, added after the
1.37 schema this scope declares; a part of ``gen_ai.usage.output_tokens``, not beside it)."""
CACHE_READ_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
"""Of the input tokens, those read from and written to the provider's prompt cache (the GenAI
conventions' names; parts of ``gen_ai.usage.input_tokens``, not beside it; ADR 0051)."""
TOKEN_TYPE: Final = "gen_ai.token.type"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
ERROR_TYPE: Final = "error.type"
REQUEST_FINGERPRINT: Final = "runport.request_fingerprint"
OUTPUT_FINGERPRINT: Final = "runport.output_fingerprint"
CALLER_STOPPED: Final = "runport.caller_stopped"

# The run's spans (RunTracer).
AGENT_NAME: Final = "gen_ai.agent.name"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
CONTRACT_VERSION: Final = "runport.contract_version"
STREAMED: Final = "runport.streamed"
TURNS: Final = "runport.turns"
RETRIES: Final = "runport.retries"
CORRECTIONS: Final = "runport.corrections"

# What the provider did itself (adr/0055): counts on the call's span, an event per server tool.
SERVER_TOOLS: Final = "runport.server_tools"
CITATIONS: Final = "runport.citations"
FILES: Final = "runport.files"
SERVER_TOOL_CALL_EVENT: Final = "runport.server_tool.call"
SERVER_TOOL_RESULT_EVENT: Final = "runport.server_tool.result"
SERVER_TOOL_ERROR: Final = "runport.server_tool.error"

RETRY_EVENT: Final = "runport.retry"
CORRECTION_EVENT: Final = "runport.correction"

DURATION: Final = "gen_ai.client.operation.duration"
TOKEN_USAGE: Final = "gen_ai.client.token.usage"
TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"

# The bucket boundaries the semantic conventions advise for these instruments.
_SECONDS_BUCKETS: Final = [0.01 * 2**n for n in range(14)]
_TOKEN_BUCKETS: Final = [4.0**n for n in range(14)]

Attributes = dict[str, AttributeValue]

_CHUNKS: Final = get_args(ProgressEvent)
"""The events that are a chunk for ``time_to_first_chunk``: every progress event, reasoning
and what the provider did itself included — a model that thinks for twenty seconds first has
answered the silence when its first thought arrives, which is what the metric is for."""

log = logging.getLogger("runport.otel")


def cache_attributes(usage: Usage) -> dict[str, int]:
    """The usage's cache counts as span attributes, each only when the provider reported it."""
    attributes: dict[str, int] = {}
    if usage.cache_read_tokens is not None:
        attributes[CACHE_READ_TOKENS] = usage.cache_read_tokens
    if usage.cache_write_tokens is not None:
        attributes[CACHE_WRITE_TOKENS] = usage.cache_write_tokens
    return attributes


def provided_attributes(receipt: ExecutionReceipt) -> dict[str, int]:
    """How many server tools the provider ran, sources the answer cites and files the model
    generated, each only when there were any (spans of turns without them keep their
    attributes)."""
    counts = {
        SERVER_TOOLS: sum(isinstance(tool, ServerToolCall) for tool in receipt.server_tools or []),
        CITATIONS: len(receipt.citations or []),
        FILES: len(receipt.files or []),
    }
    return {key: count for key, count in counts.items() if count}


def add_server_tool_events(span: Span, receipt: ExecutionReceipt) -> None:
    """One span event per server tool call and result, in the receipt's order: the tool's
    name and call id (``gen_ai.tool.*``, type ``extension``: it ran at the provider, not in
    the run), a result's error code when it failed. Never its input or output: they are the
    model's and the web's content, captured only as messages."""
    for tool in receipt.server_tools or []:
        attributes: Attributes = {
            TOOL_NAME: tool.name,
            TOOL_CALL_ID: tool.call_id,
            TOOL_TYPE: "extension",
        }
        if isinstance(tool, ServerToolResult):
            if tool.error is not None:
                attributes[SERVER_TOOL_ERROR] = tool.error
            span.add_event(SERVER_TOOL_RESULT_EVENT, attributes)
        else:
            span.add_event(SERVER_TOOL_CALL_EVENT, attributes)


class Pipeline:
    """Where a failure of the OpenTelemetry pipeline goes instead of the traced call.

    The first failure is a warning with its traceback, once for each wrapped adapter or run
    tracer (a broken processor fails every call, and one report says so); later ones are
    debug records.
    """

    def __init__(self) -> None:
        self._reported = False
        self._lock = threading.Lock()

    def broke(self, error: Exception, doing: str) -> None:
        with self._lock:
            first, self._reported = not self._reported, True
        if first:
            log.warning(
                "OpenTelemetry raised %s while %s; the call goes on, and later failures of the "
                "pipeline are logged at debug level",
                type(error).__name__,
                doing,
                exc_info=error,
            )
        else:
            log.debug("OpenTelemetry raised %s while %s", type(error).__name__, doing)

    def start_span(
        self, tracer: trace.Tracer, name: str, kind: SpanKind, attributes: Attributes
    ) -> Span:
        """``tracer.start_span`` (a span processor's ``on_start`` runs here), or a span that
        records nothing when the pipeline raised."""
        try:
            return tracer.start_span(name, kind=kind, attributes=attributes)
        except Exception as error:
            self.broke(error, "starting a span")
            return INVALID_SPAN

    def attach(self, span: Span) -> Token[Context] | None:
        """Make ``span`` current; ``None`` when the context could not be changed."""
        try:
            return context.attach(trace.set_span_in_context(span))
        except Exception as error:
            self.broke(error, "making a span current")
            return None

    def end(self, span: Span, token: Token[Context] | None) -> None:
        """Leave ``span``'s context and end it (a span processor's ``on_end`` runs here)."""
        try:
            if token is not None:
                context.detach(token)
        except Exception as error:
            self.broke(error, "leaving a span's context")
        try:
            span.end()
        except Exception as error:
            self.broke(error, "ending a span")


class Telemetry:
    """What every traced call of one adapter shares: instruments and the descriptor's attributes.

    The descriptor is read once, when the adapter is wrapped: the port promises it is stable,
    and reading it per call would put its cost on every call.
    """

    def __init__(
        self,
        descriptor: AdapterDescriptor,
        *,
        tracer_provider: trace.TracerProvider | None,
        meter_provider: metrics.MeterProvider | None,
        capture_content: bool,
    ) -> None:
        version = distribution_version("runport-otel")
        self.tracer = trace.get_tracer(
            SCOPE, version, tracer_provider=tracer_provider, schema_url=SCHEMA_URL
        )
        meter = metrics.get_meter(
            SCOPE, version, meter_provider=meter_provider, schema_url=SCHEMA_URL
        )
        self.duration = meter.create_histogram(
            DURATION,
            unit="s",
            description="How long one call to the runtime took, end to end.",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )
        self.tokens = meter.create_histogram(
            TOKEN_USAGE,
            unit="{token}",
            description="Input and output tokens the runtime reported for one call.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.first_chunk = meter.create_histogram(
            TIME_TO_FIRST_CHUNK,
            unit="s",
            description="How long a streamed call took to deliver its first chunk.",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )
        self.capture_content = capture_content
        self.pipeline = Pipeline()
        self.span_name = "chat" if descriptor.model is None else f"chat {descriptor.model}"
        self.attributes: Attributes = {
            OPERATION: "chat",
            PROVIDER: descriptor.provider or descriptor.id,
        }
        if descriptor.model is not None:
            self.attributes[REQUEST_MODEL] = descriptor.model

        self.input_tokens: Attributes = {**self.attributes, TOKEN_TYPE: "input"}
        self.output_tokens: Attributes = {**self.attributes, TOKEN_TYPE: "output"}
        self.stopped: Attributes = {**self.attributes, CALLER_STOPPED: True}

    def call(self, request: ExecutionRequest, *, streamed: bool) -> CallTrace:
        return CallTrace(self, request, streamed=streamed)


class CallTrace:
    """One call in flight: its span, its clock, and whether the caller stopped it.

    Entered around the inner adapter's call, it makes the span current, so spans the adapter
    makes (its HTTP client's, say) nest under it, and ends the span however the call ends.
    """

    __slots__ = (
        "_first_chunk",
        "_request",
        "_started",
        "_streamed",
        "_telemetry",
        "_token",
        "sink_raised",
        "span",
    )

    def __init__(self, telemetry: Telemetry, request: ExecutionRequest, *, streamed: bool) -> None:
        self._telemetry = telemetry
        self._request = request
        self._streamed = streamed
        attributes = telemetry.attributes
        if telemetry.capture_content:
            attributes = {**attributes, INPUT_MESSAGES: input_messages(request)}
        self.span = telemetry.pipeline.start_span(
            telemetry.tracer, telemetry.span_name, SpanKind.CLIENT, attributes
        )
        self.sink_raised = False
        self._first_chunk: float | None = None
        self._started = perf_counter()
        self._token: Token[Context] | None = None

    def __enter__(self) -> CallTrace:
        self._token = self._telemetry.pipeline.attach(self.span)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        pipeline = self._telemetry.pipeline
        if error is not None:
            try:
                self.failed(error)
            except Exception as broken:
                pipeline.broke(broken, "recording a failed call")
        pipeline.end(self.span, self._token)

    def watch(self, sink: Sink) -> Sink:
        """``sink``, noting the first chunk's time and whether the sink raised (a caller stop)."""

        def watched(event: StreamEvent) -> None:
            if self._first_chunk is None and isinstance(event, _CHUNKS):
                self._first_chunk = perf_counter()
            try:
                sink(event)
            except BaseException:
                self.sink_raised = True
                raise

        return watched

    def watch_async(self, sink: AsyncSink) -> AsyncSink:
        """``watch`` for an async sink, which the adapter awaits when it returns an awaitable."""

        async def watched(event: StreamEvent) -> None:
            if self._first_chunk is None and isinstance(event, _CHUNKS):
                self._first_chunk = perf_counter()
            try:
                await deliver(sink, event)
            except BaseException:
                self.sink_raised = True
                raise

        return watched

    def succeeded(self, receipt: ExecutionReceipt) -> ExecutionReceipt:
        """Record the receipt, then return it as it is, whatever the pipeline did."""
        try:
            self._succeeded(receipt)
        except Exception as error:
            self._telemetry.pipeline.broke(error, "recording a call's receipt")
        return receipt

    def _succeeded(self, receipt: ExecutionReceipt) -> None:
        telemetry = self._telemetry
        attributes: Attributes = {
            REQUEST_FINGERPRINT: receipt.request_fingerprint,
            OUTPUT_FINGERPRINT: receipt.output_fingerprint,
        }
        finish = finish_word(receipt)
        if finish is not None:
            attributes[FINISH_REASONS] = [finish]
        usage = receipt.usage
        if usage is not None:
            attributes[INPUT_TOKENS] = usage.input_tokens
            attributes[OUTPUT_TOKENS] = usage.output_tokens
            if usage.reasoning_tokens is not None:
                attributes[REASONING_TOKENS] = usage.reasoning_tokens
            attributes.update(cache_attributes(usage))
        attributes.update(provided_attributes(receipt))
        if telemetry.capture_content:
            attributes[OUTPUT_MESSAGES] = output_messages(receipt)
        self.span.set_attributes(attributes)
        add_server_tool_events(self.span, receipt)
        self._record(telemetry.attributes)
        if usage is not None:
            telemetry.tokens.record(usage.input_tokens, telemetry.input_tokens)
            telemetry.tokens.record(usage.output_tokens, telemetry.output_tokens)

    def failed(self, error: BaseException) -> None:
        """A caller stop (the sink raised, or the calling task was cancelled) is not the
        upstream's failure: the status stays unset, and only ``runport.caller_stopped`` says so."""
        span = self.span
        span.set_attribute(REQUEST_FINGERPRINT, fingerprint(self._request.interaction))
        if self.sink_raised or isinstance(error, asyncio.CancelledError):
            span.set_attribute(CALLER_STOPPED, True)
            self._record(self._telemetry.stopped)
            return
        kind = error_type(error)
        span.set_attribute(ERROR_TYPE, kind)
        # A PortError's message is safe to show (it never holds keys or bodies) but may quote
        # the answer it could not use, so it is text, and shown only when text is captured.
        shown = error.message if isinstance(error, PortError) else kind
        span.set_status(
            Status(StatusCode.ERROR, shown if self._telemetry.capture_content else kind)
        )
        self._record({**self._telemetry.attributes, ERROR_TYPE: kind})

    def _record(self, attributes: Attributes) -> None:
        finished = perf_counter()
        self._telemetry.duration.record(finished - self._started, attributes)
        if self._streamed and self._first_chunk is not None:
            self._telemetry.first_chunk.record(self._first_chunk - self._started, attributes)
