"""The runtime port: ``RuntimeAdapter``, ``PortError``, ``Sink``, and the limits every adapter
obeys (docs/streaming-law.md); and the run observer port, ``RunObserver`` / ``RunScope``
(docs/observability.md)."""

from runport.contracts import PortError
from runport.ports._adapter import RuntimeAdapter, Sink
from runport.ports._async import (
    TERMINAL_GRACE_S,
    AsyncRuntimeAdapter,
    AsyncSink,
    deliver,
    deliver_terminal,
)
from runport.ports._limits import (
    DEFAULT_DEADLINE_S,
    DEFAULT_MAX_RESPONSE_BYTES,
    check_byte_count,
    check_seconds,
    deadline_for,
    distribution_version,
    max_response_bytes_for,
)
from runport.ports._observer import CorrectionStage, RunObserver, RunScope, error_type
from runport.ports._settle import asettle_call, settle_call

__all__ = [
    "DEFAULT_DEADLINE_S",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "TERMINAL_GRACE_S",
    "AsyncRuntimeAdapter",
    "AsyncSink",
    "CorrectionStage",
    "PortError",
    "RunObserver",
    "RunScope",
    "RuntimeAdapter",
    "Sink",
    "asettle_call",
    "check_byte_count",
    "check_seconds",
    "deadline_for",
    "deliver",
    "deliver_terminal",
    "distribution_version",
    "error_type",
    "max_response_bytes_for",
    "settle_call",
]
