"""OpenTelemetry for runport (docs/observability.md).

``Traced(adapter)`` wraps any runtime adapter, sync or async, and records each call as a GenAI
``chat`` span with the semantic conventions' attributes and metrics, plus runport's
fingerprints. It depends on ``opentelemetry-api`` only: without an SDK installed and
configured, every recording is a no-op. ``RunTracer`` is the run observer
(``run(..., observer=RunTracer())``): an ``invoke_agent`` span over each run, the turns' ``chat``
spans and an ``execute_tool`` span per tool call under it.
"""

from runport.otel._runs import RunTracer
from runport.otel._traced import AsyncTracedAdapter, Traced, TracedAdapter

__all__ = ["AsyncTracedAdapter", "RunTracer", "Traced", "TracedAdapter"]
