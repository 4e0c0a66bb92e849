from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from runport.contracts._parts import ContentPart, FilePart

_ID_PATTERN = r"^[A-Z][A-Z0-9_]*$"


def _is_empty(value: object) -> bool:
    return value is None


def _omitted(default: Any = None) -> Any:
    """An optional field that the model's own serialization leaves out when it is empty."""
    return Field(default=default, exclude_if=_is_empty)


def _none_if_false(value: Any) -> Any:
    return None if value is False else value


def _none_if_empty(value: Any) -> Any:
    return None if value == [] or value == "" else value


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AdapterDescriptor(_Wire):
    """Who produced a receipt. ``provider`` and ``model`` say which upstream answered, for
    telemetry (docs/observability.md); they are left out of the JSON when unset, so descriptors
    written before they existed keep their bytes and fingerprints."""

    id: Annotated[str, Field(min_length=1)]
    version: Annotated[str, Field(min_length=1)]
    capabilities: list[str] = Field(default_factory=list)
    provider: str | None = _omitted()
    model: str | None = _omitted()

    _empty = field_validator("provider", "model", mode="before")(_none_if_empty)


def _object_schema() -> dict[str, JsonValue]:
    return {"type": "object"}


class ToolSpec(_Wire):
    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    parameters: dict[str, JsonValue] = Field(default_factory=_object_schema)


class ToolCall(_Wire):
    """A call the model asked for. ``provider_metadata`` holds what the provider needs sent
    back with this call when a later turn repeats it (Gemini's ``thoughtSignature``), keyed
    by provider; it is opaque to runport and never part of what the call means."""

    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    arguments: JsonValue
    provider_metadata: dict[str, JsonValue] | None = _omitted()


class ReasoningPart(_Wire):
    """One reasoning block as the provider gave it: its text (empty for a redacted block) and
    what the provider wants back with it in a later turn (``provider_metadata``: a signature,
    redacted data, an encrypted item), kept opaque and never logged."""

    text: str = ""
    provider_metadata: dict[str, JsonValue] | None = Field(
        default=None, exclude_if=_is_empty, repr=False
    )
    """A signature or encrypted reasoning, kept opaque and left out of ``repr`` (and so out of
    tracebacks and test reports that show one)."""


class ServerToolCall(_Wire):
    """A tool the provider ran itself (web search, code execution, a URL fetch, file search,
    an MCP server the provider called), as announced: never a call the run executes. Also a
    ``StreamEvent``, sent when the provider announces it. ``provider_metadata`` holds what the
    provider wants back in a later turn (adr/0055-what-the-provider-did-itself.md), opaque."""

    kind: Literal["ServerToolCall"] = "ServerToolCall"
    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    input: JsonValue = None
    provider_metadata: dict[str, JsonValue] | None = Field(
        default=None, exclude_if=_is_empty, repr=False
    )


class ServerToolResult(_Wire):
    """What a tool the provider ran itself returned (``output``, as the provider gave it), or
    why it failed (``error``, the provider's error code); it answers the ``ServerToolCall``
    with the same ``call_id``."""

    kind: Literal["ServerToolResult"] = "ServerToolResult"
    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    output: JsonValue = None
    error: str | None = _omitted()
    provider_metadata: dict[str, JsonValue] | None = Field(
        default=None, exclude_if=_is_empty, repr=False
    )


ServerTool = Annotated[ServerToolCall | ServerToolResult, Field(discriminator="kind")]
"""One entry of a receipt's (and an assistant message's) ``server_tools``."""


class Message(_Wire):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | Annotated[list[ContentPart], Field(min_length=1)]
    """The message's text, or its parts in order (text, images, files). A contract with an
    image or file input makes a list; every other message keeps its string."""
    tool_calls: list[ToolCall] | None = _omitted()
    tool_call_id: str | None = _omitted()
    reasoning: list[ReasoningPart] | None = _omitted()
    """An assistant turn's reasoning, sent back to the provider that made it (left out when
    there is none, so messages without it keep their bytes and fingerprints)."""
    server_tools: list[ServerTool] | None = _omitted()
    """An assistant turn's server tool calls and results, in order, sent back to a provider
    that requires them (Anthropic); left out when there are none."""

    cache: Literal[True] | None = _omitted()
    """A prompt-cache breakpoint after this message (Anthropic ``cache_control``); left out
    when absent or false, so messages without one keep their bytes and fingerprints."""
    cache_ttl: Literal["5m", "1h"] | None = _omitted()
    """How long the breakpoint's cache entry lives, where the provider lets a request say;
    only with ``cache``."""

    _empty_calls = field_validator("tool_calls", "reasoning", "server_tools", mode="before")(
        _none_if_empty
    )
    _no_cache = field_validator("cache", mode="before")(_none_if_false)

    @model_validator(mode="after")
    def _ttl_needs_a_breakpoint(self) -> Message:
        if self.cache_ttl is not None and self.cache is None:
            raise ValueError("cache_ttl needs cache: true")
        return self


def _sorted_unique(value: Any) -> Any:
    if isinstance(value, list | tuple | set | frozenset):
        return sorted(set(value))
    return value


class CompiledInteraction(_Wire):
    compiler: str
    contract_id: str
    contract_version: str
    messages: list[Message]
    output_schema: dict[str, JsonValue]
    required_capabilities: list[str] = Field(default_factory=list)
    target_capabilities: list[str] = Field(default_factory=list)
    runtime_policy: dict[str, JsonValue] = Field(default_factory=dict)
    extensions: dict[str, JsonValue] = Field(default_factory=dict)
    tools: list[ToolSpec] | None = _omitted()

    _capabilities = field_validator("required_capabilities", "target_capabilities", mode="before")(
        _sorted_unique
    )
    _empty_tools = field_validator("tools", mode="before")(_none_if_empty)


class ExecutionRequest(_Wire):
    interaction: CompiledInteraction
    fixture_output: JsonValue = None


def _none_if_zero(value: Any) -> Any:
    return None if value == 0 else value


class Usage(_Wire):
    input_tokens: Annotated[int, Field(ge=0)] = 0
    output_tokens: Annotated[int, Field(ge=0)] = 0
    reasoning_tokens: Annotated[int, Field(ge=0)] | None = _omitted()
    """Of ``output_tokens``, those the model spent reasoning, where the provider says; left
    out when it does not, or says 0, so a non-reasoning model's receipts keep their shape."""

    cache_read_tokens: Annotated[int, Field(ge=0)] | None = _omitted()
    """Of ``input_tokens``, those read from the provider's prompt cache; left out when the
    provider does not say, or says 0, so receipts without caching keep their bytes."""
    cache_write_tokens: Annotated[int, Field(ge=0)] | None = _omitted()
    """Of ``input_tokens``, those written to the provider's prompt cache (Anthropic's
    ``cache_creation_input_tokens``); left out when absent or 0. ``input_tokens`` counts every
    input token, cached or not, for every provider (ADR 0051)."""

    _zero_counts = field_validator(
        "reasoning_tokens", "cache_read_tokens", "cache_write_tokens", mode="before"
    )(_none_if_zero)

    def __add__(self, other: Usage) -> Usage:
        reasoning = (self.reasoning_tokens or 0) + (other.reasoning_tokens or 0)
        read = (self.cache_read_tokens or 0) + (other.cache_read_tokens or 0)
        write = (self.cache_write_tokens or 0) + (other.cache_write_tokens or 0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=reasoning or None,
            cache_read_tokens=read or None,
            cache_write_tokens=write or None,
        )


Finish = Literal["stop", "length", "tool_calls", "content_filter", "pause", "error", "other"]
"""How a turn ended, the provider's finish reason normalised (docs/runs.md, "per finish")."""

FINISHES: frozenset[str] = frozenset(get_args(Finish))


class CitationSource(_Wire):
    """What a citation points at: a web page (``type: "url"``, its ``url`` and ``title``) or a
    document (``type: "document"``: one of the request's documents by ``document_index``, or a
    provider's file by ``file_id``/``filename``). A URL is the model's: shown as a link, never
    fetched by runport."""

    type: Literal["url", "document"]
    url: str | None = _omitted()
    title: str | None = _omitted()
    document_index: Annotated[int, Field(ge=0)] | None = _omitted()
    file_id: str | None = _omitted()
    filename: str | None = _omitted()


class Citation(_Wire):
    """A source the answer cites. ``start``/``end`` are character offsets into the turn's
    ``text`` (the cited span of the answer), where the provider says; ``cited_text`` the
    passage of the source it quotes, where the provider gives one."""

    kind: Literal["Citation"] = "Citation"
    source: CitationSource
    cited_text: str | None = _omitted()
    start: Annotated[int, Field(ge=0)] | None = _omitted()
    end: Annotated[int, Field(ge=0)] | None = _omitted()

    @model_validator(mode="after")
    def _a_span(self) -> Citation:
        if self.start is not None and self.end is not None and self.end < self.start:
            raise ValueError(f"a citation's end ({self.end}) is before its start ({self.start})")
        return self


class FileDelta(_Wire):
    """A file or image the model generated, as it arrives: ``data`` is base64 of the whole
    file, ``partial`` marks a preview (a Responses ``partial_image``) that a later whole file
    replaces. Every file that is not partial is kept in the receipt's ``files``."""

    kind: Literal["FileDelta"] = "FileDelta"
    media_type: Annotated[str, Field(min_length=1)]
    data: Annotated[str, Field(min_length=1)] = Field(repr=False)
    partial: bool = False


class ExecutionReceipt(_Wire):
    adapter: AdapterDescriptor
    request_fingerprint: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    output_fingerprint: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    output: JsonValue
    output_schema_valid: bool | None
    text: str | None = _omitted()
    tool_calls: list[ToolCall] | None = _omitted()
    finish_reason: str | None = _omitted()
    """The provider's own word for how the turn ended (``end_turn``, ``MAX_TOKENS``, …)."""
    usage: Usage | None = _omitted()
    reasoning: list[ReasoningPart] | None = _omitted()
    """The turn's reasoning blocks in order; never part of ``text`` or ``output``, and left out
    when the model gave none (every receipt without reasoning keeps its bytes)."""
    finish: Finish | None = None
    """``finish_reason`` normalised: what runs act on (a ``length`` turn is never acted on). A
    provider word no table knows is ``other``. Left out of the JSON when it is the same word
    as ``finish_reason`` (read back from it), so every receipt pinned before it keeps its
    bytes."""

    server_tools: list[ServerTool] | None = _omitted()
    """The tools the provider ran itself this turn, calls and results in arrival order; never
    calls the run executes. Left out when there are none."""
    citations: list[Citation] | None = _omitted()
    """The sources the answer cites, in arrival order; left out when there are none."""
    files: list[FilePart] | None = _omitted()
    """The files and images the model generated, whole, in order (fingerprinted by digest);
    left out when there are none."""
    provider_metadata: dict[str, JsonValue] | None = Field(
        default=None, exclude_if=_is_empty, repr=False
    )
    """What the provider sent that runport has no type for (a content block or output item
    of an unknown kind), kept verbatim by provider (adr/0054-nothing-a-provider-sends-is-
    dropped.md); left out when there is none."""

    _empty = field_validator(
        "text", "tool_calls", "reasoning", "server_tools", "citations", "files", mode="before"
    )(_none_if_empty)

    @model_validator(mode="after")
    def _finish_from_reason(self) -> ExecutionReceipt:
        reason = self.finish_reason
        if self.finish is None and reason in FINISHES:
            object.__setattr__(self, "finish", reason)
        return self

    # Unannotated return: pydantic then describes the serialized receipt by its fields (an
    # annotated one would make its serialization JSON Schema ``{}``).
    @model_serializer(mode="wrap")
    def _finish_once(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        dumped = handler(self)
        if isinstance(dumped, dict) and dumped.get("finish") in (None, self.finish_reason):
            dumped.pop("finish", None)
        return dumped


class Delta(_Wire):
    kind: Literal["Delta"] = "Delta"
    text: Annotated[str, Field(min_length=1)]


class ReasoningDelta(_Wire):
    """A piece of the model's reasoning, as it arrives: progress like ``Delta``, never part of
    the answer; the joined texts are the receipt's ``reasoning`` texts."""

    kind: Literal["ReasoningDelta"] = "ReasoningDelta"
    text: Annotated[str, Field(min_length=1)]


class ToolCallDelta(_Wire):
    kind: Literal["ToolCallDelta"] = "ToolCallDelta"
    index: Annotated[int, Field(ge=0)]
    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    arguments_fragment: str = ""


class Complete(_Wire):
    kind: Literal["Complete"] = "Complete"
    receipt: ExecutionReceipt


class Failed(_Wire):
    kind: Literal["Failed"] = "Failed"
    code: Annotated[str, Field(pattern=_ID_PATTERN)]
    message: str


ProgressEvent = (
    Delta
    | ReasoningDelta
    | ToolCallDelta
    | ServerToolCall
    | ServerToolResult
    | Citation
    | FileDelta
)
"""A turn's progress, every ``StreamEvent`` but the terminal ``Complete`` and ``Failed``: a
piece of the answer, the reasoning or a tool call's arguments, or what the provider did itself
(``ServerToolCall``, ``ServerToolResult``, ``Citation``, ``FileDelta``)."""

StreamEvent = Annotated[ProgressEvent | Complete | Failed, Field(discriminator="kind")]
"""What a sink receives: a turn's ``ProgressEvent``s, then one terminal."""


class Diagnostic(_Wire):
    code: Annotated[str, Field(pattern=_ID_PATTERN)]
    severity: Literal["error", "warning"] = "error"
    message: str
    json_pointer: str | None = _omitted()
    help: str | None = _omitted()


class ToolResult(_Wire):
    """A tool the model asked for has run (or was refused), before the next turn starts. Made
    by the application's run, never by an adapter; ``error`` is set (and ``output`` is null)
    when the tool raised or was refused."""

    kind: Literal["ToolResult"] = "ToolResult"
    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    output: JsonValue = None
    error: str | None = _omitted()


class ToolProgress(_Wire):
    """A tool that is a generator yielded ``data`` while it runs: shown at once, before its
    ``ToolResult`` (docs/runs.md, "Tool progress"). Made by the application's run, never by an
    adapter."""

    kind: Literal["ToolProgress"] = "ToolProgress"
    call_id: Annotated[str, Field(min_length=1)]
    data: JsonValue = None


class SubRunEvent(_Wire):
    """An event of a sub-run — a tool that is itself a run (``Tool.from_contract``) — in its
    parent's stream: ``call_id`` is the parent's call of that tool, ``event`` the sub-run's own
    (a ``SubRunEvent`` again when the sub-run has sub-runs, so the nesting is kept). Made by
    the application's run, never by an adapter."""

    kind: Literal["SubRunEvent"] = "SubRunEvent"
    call_id: Annotated[str, Field(min_length=1)]
    event: RunEvent


class OutputSnapshot(_Wire):
    """The structured answer parsed so far, after a ``Delta`` that changed it. ``completed``
    holds the JSON pointers of the subtrees that closed since the previous snapshot;
    ``problems`` a closed subtree that fails its part of the output schema, reported early
    (the receipt's verdict stays the authority)."""

    kind: Literal["OutputSnapshot"] = "OutputSnapshot"
    value: JsonValue = None
    completed: list[str] = Field(default_factory=list)
    problems: list[Diagnostic] = Field(default_factory=list)


class AnswerRejected(_Wire):
    """The turn that just completed gave an answer the contract rejects: ``diagnostics`` say
    why. Sent after that turn's ``Complete``; ``correcting`` is true when a correction round
    follows, false when the run ends with the rejection."""

    kind: Literal["AnswerRejected"] = "AnswerRejected"
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    correcting: bool = True


class ToolApprovalRequest(_Wire):
    """The model called a tool that needs a person's approval: the run pauses before running
    it, and goes on when the caller answers (docs/runs.md, "A person in the loop"). Made by the
    application's run, never by an adapter."""

    kind: Literal["ToolApprovalRequest"] = "ToolApprovalRequest"
    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


class ClientToolCall(_Wire):
    """The model called a tool the caller only declared and runs itself (a client tool, such
    as a frontend's): the run pauses, and goes on when the caller sends the call's result
    (docs/runs.md, "Client tools"). Made by the application's run, never by an adapter."""

    kind: Literal["ClientToolCall"] = "ClientToolCall"
    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


RunEvent = Annotated[
    ProgressEvent
    | Complete
    | Failed
    | ToolResult
    | ToolProgress
    | SubRunEvent
    | OutputSnapshot
    | AnswerRejected
    | ToolApprovalRequest
    | ClientToolCall,
    Field(discriminator="kind"),
]
"""What a run's caller receives: every turn's ``StreamEvent`` members, and between them what
the application adds: ``ToolResult`` (after ``ToolProgress`` from a tool that is a generator,
and ``SubRunEvent`` from a tool that is a run), ``OutputSnapshot``, ``AnswerRejected`` and,
when a run pauses, ``ToolApprovalRequest`` (for a person's decision) and ``ClientToolCall``
(for a client tool's result)."""

SubRunEvent.model_rebuild()


class OperationEnvelope(_Wire):
    api_version: Literal["runport/v1alpha1"] = "runport/v1alpha1"
    operation: str
    ok: bool
    result: ExecutionReceipt | None = _omitted()
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    fingerprints: dict[str, str] = Field(default_factory=dict)
    stream_events: list[StreamEvent] | None = _omitted()
