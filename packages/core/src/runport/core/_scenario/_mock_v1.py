"""The ``runport.mock/v1`` file format: turns of events, read into a ``Scenario``.

::

    api_version: runport.mock/v1
    id: greet
    contract: greet            # optional: the contract id `runport scenarios check` runs
    input: inputs/greet.json   # optional: the inputs file, relative to this file
    expect:                    # optional: what `runport scenarios check` verifies
      status: success          #   success | failure
      diagnostics: []          #   the diagnostic codes expected, e.g. [TQX_OUTPUT_SCHEMA]
      output_fingerprint: 66d6...   # 64 lower-case hex digits
      output_schema_valid: true
      reasoning: [...]         #   each reasoning block's text, of the last turn
      parts: [{kind: image, media_type: image/png, sha256: ...}]  # the request's parts
    turns:                     # one per model call, in order
      - events:
          - {kind: tool_call_delta, index: 0, call_id: c1, name: add, arguments_fragment: "{}"}
          - {kind: finish, finish_reason: tool_calls}
        tool_results: {c1: 3}  # optional: what each of this turn's tool calls gives back
      - events:
          - {kind: reasoning_delta, text: "The user greets; "}
          - {kind: reasoning_delta, text: "answer in kind.", signature: sig-1}
          - {kind: delta, text: "Hel"}
          - {kind: delay, ms: 25}
          - {kind: usage, input_tokens: 5, output_tokens: 2}
          - {kind: finish, finish_reason: stop}          # may carry an explicit `output`

Event kinds: ``delta{text}`` (non-empty), ``reasoning_delta{text, signature?}`` (non-empty
text; a signature ends its block), ``tool_call_delta{index, call_id?, name?,
arguments_fragment?}``, what the provider did itself — ``server_tool_call{call_id, name,
input?, provider_metadata?}``, ``server_tool_result{call_id, output?, error?,
provider_metadata?}`` (answering a call announced before it, once; ``provider_metadata`` is
what the provider wants back in a later turn, as a recording keeps it),
``citation{source, cited_text?, start?, end?}``, ``file_delta{media_type, data, partial?}``
—, ``delay{ms > 0}`` (a virtual clock; nothing sleeps),
``usage{input_tokens, output_tokens, reasoning_tokens?, cache_read_tokens?,
cache_write_tokens?}`` (summed over the turn; the cache counts are parts of
``input_tokens``), ``finish{finish_reason?, finish?, output?}`` (``finish_reason`` any word:
one of runport's own, such as ``length`` or ``pause``, is the receipt's ``finish`` too, any
other is ``other`` unless ``finish`` names runport's word for it) and ``fail{code, message,
retry_after_ms?}``. Every turn ends in exactly one terminal (``finish`` or ``fail``).
In ``tool_call_delta`` a call's first fragment must name the tool; ``call_id`` defaults to
``call_<index>`` (as docs/wire-types.md has adapters do for upstreams that send none); later
fragments of the same call may leave ``name``/``call_id`` out (they are filled in from the
first, and must agree when given) and must carry a non-empty fragment — the wire grammar of
``ToolCallDelta``. An explicit ``output`` must agree with the turn's deltas (equal their
joined text, or the JSON it parses to), so a scenario cannot claim an answer its stream never
said. A ``tool_results`` key must be the call id of one of the turn's own tool calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, ValidationError, field_validator

from runport.contracts import Finish
from runport.core._scenario._decoding import (
    Count,
    File,
    NonEmpty,
    OutputFields,
    TextFields,
    UsageFields,
    Where,
    check,
    decode_each,
    valid_code,
)
from runport.core._scenario._expectations import (
    FINGERPRINT_PATTERN,
    PartDigest,
    ScenarioExpectations,
    require_json,
)
from runport.core._scenario._model import (
    API_VERSION,
    CODE_PATTERN,
    TERMINALS,
    CitationEvent,
    DelayEvent,
    DeltaEvent,
    FailEvent,
    FileDeltaEvent,
    FinishEvent,
    ReasoningDeltaEvent,
    Scenario,
    ScenarioEvent,
    ScenarioTurn,
    ServerToolCallEvent,
    ServerToolResultEvent,
    ToolCallDeltaEvent,
    UsageEvent,
    agrees,
    unmade_calls,
)


class _PartFile(File):
    kind: Literal["image", "file"]
    media_type: NonEmpty
    sha256: Annotated[str, Field(pattern=FINGERPRINT_PATTERN)] | None = None
    url: NonEmpty | None = None

    def digest(self) -> PartDigest:
        if (self.sha256 is None) == (self.url is None):
            raise ValueError("an expected part states exactly one of sha256 and url")
        return (self.kind, self.media_type, self.sha256 or self.url or "")


class _Expect(File):
    status: Literal["success", "failure"] | None = None
    diagnostics: list[Annotated[str, Field(pattern=CODE_PATTERN)]] | None = None
    output_fingerprint: Annotated[str, Field(pattern=FINGERPRINT_PATTERN)] | None = None
    output_schema_valid: bool | None = None
    reasoning: list[str] | None = None
    parts: list[_PartFile] | None = None


class _MockFile(File):
    api_version: Literal["runport.mock/v1"]
    id: NonEmpty
    contract: NonEmpty | None = None
    input: NonEmpty | None = None
    expect: _Expect | None = None
    turns: list[Any]


class _TurnFile(File):
    events: list[Any]
    tool_results: dict[str, JsonValue] | None = None

    _json_results = field_validator("tool_results")(require_json)


class _DeltaFile(TextFields):
    kind: Literal["delta"]


class _ReasoningDeltaFile(TextFields):
    kind: Literal["reasoning_delta"]
    signature: NonEmpty | None = None


class _ToolCallDeltaFile(File):
    kind: Literal["tool_call_delta"]
    index: Count
    call_id: NonEmpty | None = None
    name: NonEmpty | None = None
    arguments_fragment: str = ""


class _ServerToolCallFile(File):
    kind: Literal["server_tool_call"]
    call_id: NonEmpty
    name: NonEmpty
    input: JsonValue = None
    provider_metadata: dict[str, JsonValue] | None = None


class _ServerToolResultFile(File):
    kind: Literal["server_tool_result"]
    call_id: NonEmpty
    output: JsonValue = None
    error: NonEmpty | None = None
    provider_metadata: dict[str, JsonValue] | None = None


class _CitationFile(File):
    kind: Literal["citation"]
    source: dict[str, JsonValue]
    cited_text: str | None = None
    start: Count | None = None
    end: Count | None = None


class _FileDeltaFile(File):
    kind: Literal["file_delta"]
    media_type: NonEmpty
    data: NonEmpty
    partial: bool = False


class _DelayFile(File):
    kind: Literal["delay"]
    ms: Annotated[int, Field(gt=0)]


class _UsageFile(UsageFields):
    kind: Literal["usage"]
    reasoning_tokens: Count | None = None
    cache_read_tokens: Count | None = None
    cache_write_tokens: Count | None = None


class _FinishFile(OutputFields):
    kind: Literal["finish"]
    finish_reason: NonEmpty | None = None
    finish: Finish | None = None


class _FailFile(File):
    kind: Literal["fail"]
    code: str
    message: str
    retry_after_ms: Count | None = None

    _known_code = field_validator("code")(valid_code)


_MOCK_EVENTS: Mapping[str, type[File]] = {
    "delta": _DeltaFile,
    "reasoning_delta": _ReasoningDeltaFile,
    "tool_call_delta": _ToolCallDeltaFile,
    "server_tool_call": _ServerToolCallFile,
    "server_tool_result": _ServerToolResultFile,
    "citation": _CitationFile,
    "file_delta": _FileDeltaFile,
    "delay": _DelayFile,
    "usage": _UsageFile,
    "finish": _FinishFile,
    "fail": _FailFile,
}


def _digests(parts: list[_PartFile], where: Where) -> tuple[PartDigest, ...]:
    try:
        return tuple(part.digest() for part in parts)
    except ValueError as error:
        raise where.error(f"field 'expect.parts': {error}") from None


def parse_mock_v1(data: Mapping[str, Any], where: Where) -> Scenario:
    top = check(_MockFile, data, where)
    if not top.turns:
        raise where.error("field 'turns': a scenario needs at least one turn")
    turns = tuple(
        _mock_turn(turn, where.at(f"turn {number}")) for number, turn in enumerate(top.turns)
    )
    expect = top.expect or _Expect()
    return Scenario(
        api_version=API_VERSION,
        id=top.id,
        turns=turns,
        contract=top.contract,
        input=top.input,
        expectations=ScenarioExpectations(
            status=expect.status,
            diagnostics=None if expect.diagnostics is None else tuple(expect.diagnostics),
            output_fingerprint=expect.output_fingerprint,
            output_schema_valid=expect.output_schema_valid,
            reasoning=None if expect.reasoning is None else tuple(expect.reasoning),
            parts=None if expect.parts is None else _digests(expect.parts, where),
        ),
        source=where.source,
    )


def _server_tool(
    parsed: _ServerToolCallFile | _ServerToolResultFile, names: dict[str, str], at: Where
) -> ServerToolCallEvent | ServerToolResultEvent:
    """A server tool call, or the result of one announced before it (named as its call)."""
    if isinstance(parsed, _ServerToolCallFile):
        if parsed.call_id in names:
            raise at.error(f"server tool call {parsed.call_id!r} is announced twice")
        names[parsed.call_id] = parsed.name
        return ServerToolCallEvent(
            call_id=parsed.call_id,
            name=parsed.name,
            input=parsed.input,
            provider_metadata=parsed.provider_metadata,
        )
    name = names.pop(parsed.call_id, None)
    if name is None:
        raise at.error(
            f"no server tool call before this result has call_id {parsed.call_id!r} "
            "(or it was answered already)"
        )
    return ServerToolResultEvent(
        call_id=parsed.call_id,
        name=name,
        output=parsed.output,
        error=parsed.error,
        provider_metadata=parsed.provider_metadata,
    )


def _provided(parsed: _CitationFile | _FileDeltaFile, at: Where) -> CitationEvent | FileDeltaEvent:
    try:
        if isinstance(parsed, _CitationFile):
            return CitationEvent.model_validate(parsed.model_dump(exclude={"kind"}))
        return FileDeltaEvent.model_validate(parsed.model_dump(exclude={"kind"}))
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise at.error(f"field {where!r}: {problem['msg']}") from None


class _CallState:
    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.name = name


def _mock_turn(data: object, where: Where) -> ScenarioTurn:
    turn = check(_TurnFile, data, where)
    if not turn.events:
        raise where.error("field 'events': a turn needs at least one event")
    events: list[ScenarioEvent] = []
    calls: dict[int, _CallState] = {}
    server_calls: dict[str, str] = {}
    texts: list[str] = []
    last = len(turn.events) - 1
    for number, parsed, at in decode_each(turn.events, _MOCK_EVENTS, where, "event", "an event"):
        if isinstance(parsed, _FinishFile | _FailFile) and number != last:
            raise at.error("a terminal event (finish or fail) must be the last event of its turn")
        if isinstance(parsed, _DeltaFile):
            texts.append(parsed.text)
            events.append(DeltaEvent(text=parsed.text))
        elif isinstance(parsed, _ReasoningDeltaFile):
            events.append(ReasoningDeltaEvent(text=parsed.text, signature=parsed.signature))
        elif isinstance(parsed, _ToolCallDeltaFile):
            events.append(_tool_call(parsed, calls, at))
        elif isinstance(parsed, _DelayFile):
            events.append(DelayEvent(ms=parsed.ms))
        elif isinstance(parsed, _ServerToolCallFile | _ServerToolResultFile):
            events.append(_server_tool(parsed, server_calls, at))
        elif isinstance(parsed, _CitationFile | _FileDeltaFile):
            events.append(_provided(parsed, at))
        elif isinstance(parsed, _UsageFile):
            events.append(
                UsageEvent(
                    input_tokens=parsed.input_tokens,
                    output_tokens=parsed.output_tokens,
                    reasoning_tokens=parsed.reasoning_tokens,
                    cache_read_tokens=parsed.cache_read_tokens,
                    cache_write_tokens=parsed.cache_write_tokens,
                )
            )
        elif isinstance(parsed, _FinishFile):
            if "output" in parsed.model_fields_set:
                _check_agreement(parsed.output, texts, at)
                events.append(
                    FinishEvent(
                        finish_reason=parsed.finish_reason,
                        finish=parsed.finish,
                        output=parsed.output,
                    )
                )
            else:
                events.append(FinishEvent(finish_reason=parsed.finish_reason, finish=parsed.finish))
        else:
            assert isinstance(parsed, _FailFile)
            events.append(
                FailEvent(
                    code=parsed.code, message=parsed.message, retry_after_ms=parsed.retry_after_ms
                )
            )
    if not isinstance(events[-1], TERMINALS):
        raise where.at(f"event {last} ({events[-1].kind})").error(
            "a turn must end in a terminal event (finish or fail); this one has none"
        )
    results = turn.tool_results or {}
    unknown = unmade_calls(results, {call.call_id for call in calls.values()})
    if unknown:
        made = ", ".join(repr(call.call_id) for call in calls.values()) or "none"
        raise where.error(
            f"field 'tool_results': key {unknown[0]!r} is not the call id of one of this "
            f"turn's tool calls (its calls: {made})"
        )
    return ScenarioTurn(events=tuple(events), tool_results=results)


def _tool_call(
    parsed: _ToolCallDeltaFile, calls: dict[int, _CallState], at: Where
) -> ToolCallDeltaEvent:
    call = calls.get(parsed.index)
    if call is None:
        if parsed.name is None:
            raise at.error(
                f"missing field 'name': the first fragment of tool call {parsed.index} must "
                "name the tool"
            )
        call_id = parsed.call_id or f"call_{parsed.index}"
        for other_index, other in calls.items():
            if other.call_id == call_id:
                raise at.error(
                    f"field 'call_id': {call_id!r} is already the id of tool call {other_index}"
                )
        call = calls[parsed.index] = _CallState(call_id, parsed.name)
    else:
        if parsed.name is not None and parsed.name != call.name:
            raise at.error(
                f"field 'name': {parsed.name!r} differs from tool call {parsed.index}'s "
                f"first fragment ({call.name!r})"
            )
        if parsed.call_id is not None and parsed.call_id != call.call_id:
            raise at.error(
                f"field 'call_id': {parsed.call_id!r} differs from tool call {parsed.index}'s "
                f"first fragment ({call.call_id!r})"
            )
        if not parsed.arguments_fragment:
            raise at.error(
                f"field 'arguments_fragment': only the first fragment of tool call "
                f"{parsed.index} may be empty"
            )
    return ToolCallDeltaEvent(
        index=parsed.index,
        call_id=call.call_id,
        name=call.name,
        arguments_fragment=parsed.arguments_fragment,
    )


def _check_agreement(output: JsonValue, texts: Sequence[str], at: Where) -> None:
    if agrees(output, texts):
        return
    text = "".join(texts)
    shown = text if len(text) <= 80 else text[:77] + "..."
    raise at.error(
        f"field 'output' disagrees with the turn's deltas (joined text {shown!r}): it must equal "
        "that text or the JSON it parses to"
    )
