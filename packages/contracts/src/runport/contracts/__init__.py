"""Wire types, stable error codes, canonical JSON and fingerprints (docs/wire-types.md)."""

from runport.contracts._canonical import canonical_json, fingerprint
from runport.contracts._codes import ErrorCode
from runport.contracts._limits import MAX_INT_DIGITS, MAX_JSON_DEPTH
from runport.contracts._models import (
    AdapterDescriptor,
    CompiledInteraction,
    Complete,
    Delta,
    Diagnostic,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    Message,
    OperationEnvelope,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
)

__all__ = [
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "AdapterDescriptor",
    "CompiledInteraction",
    "Complete",
    "Delta",
    "Diagnostic",
    "ErrorCode",
    "ExecutionReceipt",
    "ExecutionRequest",
    "Failed",
    "Message",
    "OperationEnvelope",
    "ReasoningDelta",
    "ReasoningPart",
    "StreamEvent",
    "ToolCall",
    "ToolCallDelta",
    "ToolSpec",
    "Usage",
    "canonical_json",
    "fingerprint",
]
