"""``RunTracer``: the run observer that makes an ``invoke_agent`` span of each run.

The application reports a run through ``runport.ports.RunObserver`` and never imports
OpenTelemetry; this is the one implementation that turns those reports into spans. The run's
span is current while the run lasts, so the ``chat`` span a ``Traced`` adapter makes for each
model turn nests under it, and so does the ``execute_tool`` span of each tool call.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import Token

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from runport.contracts import AdapterDescriptor, ErrorCode, Usage
from runport.otel._telemetry import (
    AGENT_NAME,
    CALLER_STOPPED,
    CONTRACT_VERSION,
    CORRECTION_EVENT,
    CORRECTIONS,
    ERROR_TYPE,
    INPUT_TOKENS,
    OPERATION,
    OUTPUT_TOKENS,
    PROVIDER,
    REASONING_TOKENS,
    REQUEST_MODEL,
    RETRIES,
    RETRY_EVENT,
    SCHEMA_URL,
    SCOPE,
    STREAMED,
    TOOL_CALL_ID,
    TOOL_NAME,
    TOOL_TYPE,
    TURNS,
    Attributes,
    Pipeline,
    cache_attributes,
)
from runport.ports import CorrectionStage, RunObserver, RunScope, distribution_version


class RunTracer(RunObserver):
    """Records each run it observes as an ``invoke_agent {contract_id}`` span
    (docs/observability.md); pass it as ``run(..., observer=RunTracer())``.

    One tracer serves any number of runs, threads and tasks: the span of a run lives in the
    scope ``run_started`` returns. Without ``tracer_provider`` it uses the global one, a no-op
    until an SDK is configured.
    """

    def __init__(self, *, tracer_provider: TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer(
            SCOPE,
            distribution_version("runport-otel"),
            tracer_provider=tracer_provider,
            schema_url=SCHEMA_URL,
        )
        self._pipeline = Pipeline()

    def run_started(
        self,
        contract_id: str,
        contract_version: str,
        descriptor: AdapterDescriptor,
        *,
        streamed: bool,
    ) -> RunScope:
        attributes: Attributes = {
            OPERATION: "invoke_agent",
            AGENT_NAME: contract_id,
            PROVIDER: descriptor.provider or descriptor.id,
            CONTRACT_VERSION: contract_version,
            STREAMED: streamed,
        }
        if descriptor.model is not None:
            attributes[REQUEST_MODEL] = descriptor.model
        span = self._pipeline.start_span(
            self._tracer, f"invoke_agent {contract_id}", SpanKind.INTERNAL, attributes
        )
        return _RunSpan(self._tracer, span, self._pipeline)


class _RunSpan(RunScope):
    """One run's span, current from ``run_started`` until the run ends; a tool's span is
    current while the tool runs. Both are entered and left on the run's thread or task.

    Nothing the pipeline raises reaches the run: ``Pipeline`` catches and reports it."""

    def __init__(self, tracer: Tracer, span: Span, pipeline: Pipeline) -> None:
        self._tracer = tracer
        self._span = span
        self._pipeline = pipeline
        self._token = pipeline.attach(span)
        self._tool: tuple[Span, Token[Context] | None] | None = None
        self._retries = 0

    def retry(self, attempt: int, code: str, wait: float) -> None:
        self._retries += 1
        try:
            self._retried(attempt, code, wait)
        except Exception as error:
            self._pipeline.broke(error, "recording a retry")

    def _retried(self, attempt: int, code: str, wait: float) -> None:
        self._span.add_event(
            RETRY_EVENT,
            {"runport.retry.attempt": attempt, ERROR_TYPE: code, "runport.retry.wait": wait},
        )

    def correction(self, round: int, stage: CorrectionStage, details: Sequence[str]) -> None:
        try:
            self._corrected(round, stage, details)
        except Exception as error:
            self._pipeline.broke(error, "recording a correction")

    def _corrected(self, round: int, stage: CorrectionStage, details: Sequence[str]) -> None:
        self._span.add_event(
            CORRECTION_EVENT,
            {
                "runport.correction.round": round,
                "runport.correction.stage": stage,
                "runport.correction.details": list(details),
            },
        )
        self._span.set_attribute(CORRECTIONS, round)

    def tool_started(self, name: str, call_id: str) -> None:
        span = self._pipeline.start_span(
            self._tracer,
            f"execute_tool {name}",
            SpanKind.INTERNAL,
            {
                OPERATION: "execute_tool",
                TOOL_NAME: name,
                TOOL_CALL_ID: call_id,
                TOOL_TYPE: "function",
            },
        )
        self._tool = (span, self._pipeline.attach(span))

    def tool_finished(self, name: str, call_id: str, error: str | None) -> None:
        assert self._tool is not None
        span, token = self._tool
        self._tool = None
        if error is not None:
            try:
                span.set_attribute(ERROR_TYPE, error)
                span.set_status(Status(StatusCode.ERROR, error))
            except Exception as broken:
                self._pipeline.broke(broken, "recording a tool's failure")
        self._pipeline.end(span, token)

    def succeeded(self, usage: Usage, turns: int) -> None:
        try:
            attributes: dict[str, int] = {
                INPUT_TOKENS: usage.input_tokens,
                OUTPUT_TOKENS: usage.output_tokens,
                TURNS: turns,
            }
            if usage.reasoning_tokens is not None:
                attributes[REASONING_TOKENS] = usage.reasoning_tokens
            attributes.update(cache_attributes(usage))
            self._span.set_attributes(attributes)
        except Exception as error:
            self._pipeline.broke(error, "recording a run's result")
        self._end()

    def failed(self, code: str) -> None:
        """A caller stop is not the run's failure: like a ``chat`` span's, the status stays
        unset and ``runport.caller_stopped`` says what happened."""
        try:
            if code == ErrorCode.CALLER_STOPPED:
                self._span.set_attribute(CALLER_STOPPED, True)
            else:
                self._span.set_attribute(ERROR_TYPE, code)
                self._span.set_status(Status(StatusCode.ERROR, code))
        except Exception as error:
            self._pipeline.broke(error, "recording a run's failure")
        self._end()

    def _end(self) -> None:
        try:
            self._span.set_attribute(RETRIES, self._retries)
        except Exception as error:
            self._pipeline.broke(error, "recording a run's retries")
        self._pipeline.end(self._span, self._token)
