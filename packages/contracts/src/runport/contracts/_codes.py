from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Stable error codes shared with the templiqx port, so hosts can key on them."""

    RUNTIME_TIMEOUT = "TQX_RUNTIME_TIMEOUT"
    RUNTIME_RATE_LIMITED = "TQX_RUNTIME_RATE_LIMITED"
    RUNTIME_UNAVAILABLE = "TQX_RUNTIME_UNAVAILABLE"
    RUNTIME_STREAM_TRUNCATED = "TQX_RUNTIME_STREAM_TRUNCATED"
    RUNTIME_RESPONSE_TOO_LARGE = "TQX_RUNTIME_RESPONSE_TOO_LARGE"
    RUNTIME_INVALID_RESPONSE = "TQX_RUNTIME_INVALID_RESPONSE"
    RUNTIME_PERMANENT = "TQX_RUNTIME_PERMANENT"
    RUNTIME_CAPABILITY_UNSUPPORTED = "TQX_RUNTIME_CAPABILITY_UNSUPPORTED"
    HOST_RETRY_EXHAUSTED = "TQX_HOST_RETRY_EXHAUSTED"
    OUTPUT_SCHEMA = "TQX_OUTPUT_SCHEMA"
    DATA_INVALID = "TQX_DATA_INVALID"
    CONTRACT_NOT_FOUND = "TQX_CONTRACT_NOT_FOUND"
    RUN_TURNS_EXHAUSTED = "TQX_RUN_TURNS_EXHAUSTED"
    RUN_CORRECTIONS_EXHAUSTED = "TQX_RUN_CORRECTIONS_EXHAUSTED"
    TOOL_FAILED = "TQX_TOOL_FAILED"
    CALLER_STOPPED = "TQX_CALLER_STOPPED"
    TOOL_CALLS_PENDING = "TQX_TOOL_CALLS_PENDING"
    VALUE_REQUIRED = "TQX_VALUE_REQUIRED"
    VALUE_SCHEMA = "TQX_VALUE_SCHEMA"
    VALUE_UNKNOWN = "TQX_VALUE_UNKNOWN"
    PARSE_YAML = "TQX_PARSE_YAML"
    CONTRACT_INVALID = "TQX_CONTRACT_INVALID"
    OUTPUT_SCHEMA_INVALID = "TQX_OUTPUT_SCHEMA_INVALID"
    ACCESS_DENIED = "TQX_ACCESS_DENIED"
    REQUEST_TOO_LARGE = "TQX_REQUEST_TOO_LARGE"
    RUN_NOT_FOUND = "TQX_RUN_NOT_FOUND"
    RUN_PRODUCER_LOST = "TQX_RUN_PRODUCER_LOST"
    EVENT_LOG_UNAVAILABLE = "TQX_EVENT_LOG_UNAVAILABLE"
    HISTORY_REPAIRED = "TQX_HISTORY_REPAIRED"
    CHAT_BUSY = "TQX_CHAT_BUSY"
    OUTPUT_TRUNCATED = "TQX_OUTPUT_TRUNCATED"
    OUTPUT_REFUSED = "TQX_OUTPUT_REFUSED"
    CONTINUATION_INVALID = "TQX_CONTINUATION_INVALID"
    APPROVALS_INVALID = "TQX_APPROVALS_INVALID"
    TOOL_NAME_CLASH = "TQX_TOOL_NAME_CLASH"
    MCP_SERVER_FAILED = "TQX_MCP_SERVER_FAILED"
    MCP_TOO_MANY_TOOLS = "TQX_MCP_TOO_MANY_TOOLS"
    RUN_DEADLINE = "TQX_RUN_DEADLINE"
    SUBRUN_TOO_DEEP = "TQX_SUBRUN_TOO_DEEP"

    @property
    def retryable(self) -> bool:
        """Whether a non-streamed call that failed with this code may be tried again."""
        return self in _RETRYABLE

    @property
    def meaning(self) -> str:
        """One sentence a host can show beside the code; docs/error-codes.md is built from it."""
        return _MEANINGS[self]


_RETRYABLE = frozenset(
    {
        ErrorCode.RUNTIME_TIMEOUT,
        ErrorCode.RUNTIME_RATE_LIMITED,
        ErrorCode.RUNTIME_UNAVAILABLE,
        ErrorCode.RUNTIME_STREAM_TRUNCATED,
    }
)

_MEANINGS: dict[ErrorCode, str] = {
    ErrorCode.RUNTIME_TIMEOUT: "Connecting to the upstream or reading from it took too long.",
    ErrorCode.RUNTIME_RATE_LIMITED: (
        "The upstream throttled the call; the error carries retry_after_ms when it said how long"
        " to wait."
    ),
    ErrorCode.RUNTIME_UNAVAILABLE: (
        "The upstream could not be reached or failed on its side (connection refused or reset,"
        " HTTP 5xx)."
    ),
    ErrorCode.RUNTIME_STREAM_TRUNCATED: (
        "The stream ended without its protocol's completion marker, so the answer may be cut short."
    ),
    ErrorCode.RUNTIME_RESPONSE_TOO_LARGE: (
        "The response passed max_response_bytes; the adapter stopped reading and closed it."
    ),
    ErrorCode.RUNTIME_INVALID_RESPONSE: (
        "The upstream sent something its protocol does not allow (a malformed frame or body)."
    ),
    ErrorCode.RUNTIME_PERMANENT: (
        "The upstream refused the request (an HTTP 4xx or error frame that retrying cannot fix)."
    ),
    ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED: (
        "The adapter lacks a capability the contract requires, or its provider cannot take a"
        " message part (a URL where it needs bytes, a media type it does not read); found"
        " before any call is made."
    ),
    ErrorCode.HOST_RETRY_EXHAUSTED: "The application spent its attempts on retryable failures.",
    ErrorCode.OUTPUT_SCHEMA: "The output does not satisfy the contract's output schema.",
    ErrorCode.DATA_INVALID: (
        "A request, fixture or argument the runtime cannot use (for example a scenario with no"
        " turn left)."
    ),
    ErrorCode.CONTRACT_NOT_FOUND: "A surface was asked for a contract it does not have.",
    ErrorCode.RUN_TURNS_EXHAUSTED: "A run spent max_turns without a final answer.",
    ErrorCode.RUN_CORRECTIONS_EXHAUSTED: (
        "A run spent max_corrections on rejected tool calls or invalid answers."
    ),
    ErrorCode.TOOL_FAILED: "A tool raised; its exception is chained as the cause.",
    ErrorCode.CALLER_STOPPED: (
        "The caller's sink raised and ended the run; the sink's exception is the cause."
    ),
    ErrorCode.TOOL_CALLS_PENDING: (
        "A warning: the turn ended asking for tools, which execute_contract does not run (use run)."
    ),
    ErrorCode.VALUE_REQUIRED: "A required input or context value is missing.",
    ErrorCode.VALUE_SCHEMA: "An input or context value does not satisfy its declared schema.",
    ErrorCode.VALUE_UNKNOWN: "An input or context value the contract does not declare.",
    ErrorCode.PARSE_YAML: "The contract (or document) is not well-formed YAML or JSON.",
    ErrorCode.CONTRACT_INVALID: "The contract's structure or one of its fields is wrong.",
    ErrorCode.OUTPUT_SCHEMA_INVALID: "The contract's output_schema is not a valid JSON Schema.",
    ErrorCode.ACCESS_DENIED: (
        "An HTTP surface refused the caller: no bearer token or a wrong one, a Host it does not"
        " answer for, or a state-changing request from a foreign Origin."
    ),
    ErrorCode.REQUEST_TOO_LARGE: (
        "A request body passed the surface's size bound, and was not read; or an image or file"
        " part passed MAX_PART_BYTES (or its provider's own bound), and nothing was sent."
    ),
    ErrorCode.RUN_NOT_FOUND: (
        "A resumable server holds no such run, or no longer holds the events asked for (the"
        " run finished longer ago than its retention)."
    ),
    ErrorCode.RUN_PRODUCER_LOST: (
        "The server process running a resumable run stopped (or lost its lease) before the"
        " run finished; its readers get this terminal within the lease time."
    ),
    ErrorCode.EVENT_LOG_UNAVAILABLE: (
        "A resumable server's event log (Redis) could not be reached; a run it held failed"
        " and the server stays up."
    ),
    ErrorCode.HISTORY_REPAIRED: (
        "A warning: the history given to one execution was changed so a model API accepts it (a"
        " tool call without a result got a neutral one; a result answering no call was dropped)."
    ),
    ErrorCode.CHAT_BUSY: (
        "A chat already has a run streaming: the server runs one at a time per chat, so a second"
        " request for it is refused until the first ends (or is stopped)."
    ),
    ErrorCode.OUTPUT_TRUNCATED: (
        "The model's turn was cut by the token limit (finish length), or paused by the provider"
        " where nothing continues it: its answer and tool calls are not used, and no correction"
        " round is spent; the cut turn's receipt is kept."
    ),
    ErrorCode.OUTPUT_REFUSED: (
        "The provider withheld the answer (finish content_filter: a content filter, a safety"
        " stop or a refusal); the turn's receipt is kept."
    ),
    ErrorCode.CONTINUATION_INVALID: (
        "A paused run's continuation was not sealed by this key (forged, changed, or sealed"
        " elsewhere), is malformed, has expired, was already resumed once, or belongs to"
        " another contract: nothing was run."
    ),
    ErrorCode.APPROVALS_INVALID: (
        "A paused run's approvals do not answer its pending calls: a decision for a call that"
        " is not pending, a pending call without one, a decision that is not true, false or a"
        " reason, approvals without a continuation, or an approved call whose tool the run was"
        " not given; nothing was run and the continuation is not spent."
    ),
    ErrorCode.TOOL_NAME_CLASH: (
        "Two tools given to one run share a name (two MCP servers', or an MCP server's and a"
        " local one): the model could not tell them apart; nothing was run."
    ),
    ErrorCode.MCP_SERVER_FAILED: (
        "An MCP server could not be started or reached, answered nothing in time, refused a"
        " listing or a call, or went away during a call; a call is never sent twice."
    ),
    ErrorCode.MCP_TOO_MANY_TOOLS: (
        "An MCP server lists more tools than mcp_tools keeps (max_tools): pick them with"
        " include=; none was offered."
    ),
    ErrorCode.RUN_DEADLINE: (
        "A run passed its deadline (seconds from its start): found before a model turn or a"
        " tool call, or between the values a generator tool yields, which is then closed."
    ),
    ErrorCode.SUBRUN_TOO_DEEP: (
        "A tool that is a run (Tool.from_contract) was called deeper in a chain of sub-runs"
        " than its max_depth: it ran nothing."
    ),
}
