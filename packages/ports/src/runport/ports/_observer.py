"""The run observer port: what the application tells whoever watches a run (docs/observability.md).

The application calls it at the few points where a run changes course; it never learns who
listens, so tracing (``runport.otel``'s ``RunTracer``), metrics or an audit log plug in without
the application importing any of them. Both classes do nothing by default: an implementation
overrides what it cares about, and a run without an observer pays one no-op call per point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from runport.contracts import AdapterDescriptor, PortError, Usage

CorrectionStage = Literal["output", "tool"]


class RunScope:
    """One run in progress, from ``RunObserver.run_started`` until ``succeeded`` or ``failed``.

    Every method is called on the run's own thread or task, in the order things happen, so an
    implementation may keep per-run state here without locks. Model turns are not reported:
    they are the adapter's calls, which a traced adapter records itself (nested under whatever
    this scope made current).
    """

    def retry(self, attempt: int, code: str, wait: float) -> None:
        """Attempt ``attempt`` of a model turn failed with ``code``; the run waits ``wait``
        seconds and tries again."""

    def correction(self, round: int, stage: CorrectionStage, details: Sequence[str]) -> None:
        """Correction round ``round`` (1-based) starts. ``stage`` ``"output"``: the answer
        failed the output schema and ``details`` are the diagnostics' codes; ``"tool"``: the
        model's tool calls were rejected and ``details`` are the rejected tools' names. Never
        text from the model, which may quote what the user wrote."""

    def tool_started(self, name: str, call_id: str) -> None:
        """The tool ``name`` is about to run for the model's call ``call_id``."""

    def tool_finished(self, name: str, call_id: str, error: str | None) -> None:
        """The tool returned (``error`` is ``None``) or raised (``error`` names the exception's
        class, module-qualified unless a builtin). Always follows its ``tool_started``."""

    def succeeded(self, usage: Usage, turns: int) -> None:
        """The run answered after ``turns`` model turns, ``usage`` summed over them."""

    def failed(self, code: str) -> None:
        """The run ended without an answer: ``code`` is the ``RunError``'s ``TQX_*`` code
        (``TQX_CALLER_STOPPED`` when the caller stopped it, its task's cancellation included),
        or the class of an exception the run did not expect."""


class RunObserver:
    """Told when a run starts; the ``RunScope`` it returns is told the rest.

    Passed as ``run(..., observer=...)`` (and to ``run_stream``, ``arun``, ``arun_stream``).
    ``run_started`` is called after the contract compiled and the adapter was checked, so a run
    that fails before any model turn is not observed. An observer may be shared by many runs,
    threads and tasks at once; per-run state belongs in the scope.
    """

    def run_started(
        self,
        contract_id: str,
        contract_version: str,
        descriptor: AdapterDescriptor,
        *,
        streamed: bool,
    ) -> RunScope:
        """A run of ``contract_id`` at ``contract_version`` on the adapter that ``descriptor``
        describes starts (``streamed`` for ``run_stream``/``arun_stream``)."""
        return _IGNORED


_IGNORED = RunScope()


def error_type(error: BaseException) -> str:
    """How an observer names a failure (OpenTelemetry's ``error.type``): a ``PortError``'s
    ``TQX_*`` code, else the exception's class, module-qualified unless it is a builtin."""
    if isinstance(error, PortError):
        return error.code
    kind = type(error)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"
