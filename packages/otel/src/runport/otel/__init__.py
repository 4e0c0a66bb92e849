"""OpenTelemetry for runport (docs/observability.md).

``Traced(adapter)`` wraps any runtime adapter, sync or async, and records each call as a GenAI
``chat`` span with the semantic conventions' attributes and metrics, plus runport's
fingerprints. It depends on ``opentelemetry-api`` only: without an SDK installed and
configured, every recording is a no-op.
"""

from runport.otel._traced import AsyncTracedAdapter, Traced, TracedAdapter

__all__ = ["AsyncTracedAdapter", "Traced", "TracedAdapter"]
