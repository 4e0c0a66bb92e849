"""The scenario format a scripted runtime plays (docs/scenarios.md).

A scenario is domain data, so it lives here in core rather than in the mock: the conformance
suite, ``runport scenarios check`` and ``runport.mock.ScriptedRuntime`` all read the same
``Scenario``. Two file formats load into it; both are read as YAML or JSON (by content), and
both are strict — an unknown field, kind or API version is an error, never ignored, because a
typo in a test fixture must not silently change what a test proves.

``runport.mock/v1``::

    api_version: runport.mock/v1
    id: greet
    contract: greet            # optional: the contract id `runport scenarios check` runs
    input: inputs/greet.json   # optional: the inputs file, relative to this file
    expect:                    # optional: what `runport scenarios check` verifies
      status: success          #   success | failure
      diagnostics: []          #   the diagnostic codes expected, e.g. [TQX_OUTPUT_SCHEMA]
      output_fingerprint: 66d6...   # 64 lower-case hex digits
      output_schema_valid: true
    turns:                     # one per model call, in order
      - events:
          - {kind: delta, text: "Hel"}
          - {kind: delta, text: "lo"}
          - {kind: delay, ms: 25}
          - {kind: usage, input_tokens: 5, output_tokens: 2}
          - {kind: finish, finish_reason: stop}          # may carry an explicit `output`
      - events:
          - {kind: tool_call_delta, index: 0, call_id: c1, name: add, arguments_fragment: "{"}
          - {kind: tool_call_delta, index: 0, arguments_fragment: "}"}
          - {kind: fail, code: TQX_RUNTIME_UNAVAILABLE, message: "reset", retry_after_ms: null}

Event kinds: ``delta{text}`` (non-empty), ``tool_call_delta{index, call_id?, name?,
arguments_fragment?}``, ``delay{ms > 0}`` (a virtual clock; nothing sleeps), ``usage{input_tokens,
output_tokens}`` (summed over the turn), ``finish{finish_reason?, output?}`` and ``fail{code,
message, retry_after_ms?}``. Every turn ends in exactly one terminal (``finish`` or ``fail``).
In ``tool_call_delta`` a call's first fragment must name the tool; ``call_id`` defaults to
``call_<index>`` (as docs/wire-types.md has adapters do for upstreams that send none); later
fragments of the same call may leave ``name``/``call_id`` out (they are filled in from the
first, and must agree when given) and must carry a non-empty fragment — the wire grammar of
``ToolCallDelta``. An explicit ``output`` must agree with the turn's deltas (equal their
joined text, or the JSON it parses to), so a scenario cannot claim an answer its stream never said.

``templiqx.mock/v1alpha1`` manifests (templiqx's conformance corpus) load unchanged as one turn,
with the templiqx parser's rules: exactly one of ``steps`` (``request_received`` first, ``delay``,
then ``runtime_success`` or ``runtime_failure`` last) or ``events`` (``start``, ``delta`` /
``reasoning`` / ``usage``, ``end``, ``finish``); ids unique. ``reasoning`` is not model output
and is dropped. templiqx gives the request's ``fixture_output`` priority over the deltas, so
such a turn carries ``fixture_output_first`` (see ``ScenarioTurn``). As in templiqx (serde's
``Option``), an explicit ``output: null`` there means "no output given".

Anything refused raises ``ScenarioError`` (code ``TQX_DATA_INVALID``) naming the file, the turn
and event index and the offending kind or field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
    model_validator,
)

from runport.contracts import ErrorCode, canonical_json
from runport.core._receipt import parse_json_text
from runport.core._yaml import load_yaml

__all__ = [
    "API_VERSION",
    "TEMPLIQX_API_VERSION",
    "DelayEvent",
    "DeltaEvent",
    "DocumentExpectation",
    "EvidenceExpectation",
    "FailEvent",
    "FinishEvent",
    "Scenario",
    "ScenarioError",
    "ScenarioEvent",
    "ScenarioExpectations",
    "ScenarioTurn",
    "ToolCallDeltaEvent",
    "UsageEvent",
    "load_scenario",
    "parse_scenario",
]

API_VERSION: Final = "runport.mock/v1"
TEMPLIQX_API_VERSION: Final = "templiqx.mock/v1alpha1"

TempliqxKind = Literal[
    "happy_path", "ambiguous", "missing", "invalid", "drafting", "failure", "document_warning"
]
ReceiptPayloadPolicy = Literal["fingerprints_only", "no_successful_receipt"]

_FINGERPRINT_PATTERN = r"^[0-9a-f]{64}$"
_CODE_PATTERN = r"^[A-Z][A-Z0-9_]*$"


class ScenarioError(Exception):
    """A scenario file or mapping that cannot be played.

    ``code`` is always ``TQX_DATA_INVALID`` (docs/wire-types.md: a fixture a runtime cannot
    use), so a surface can report it like any other runport failure; ``source`` is the file,
    when known.
    """

    code: Final = ErrorCode.DATA_INVALID.value

    def __init__(self, message: str, *, source: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source


# --------------------------------------------------------------------------------------------
# The normalized, in-memory form (independent of the file format)
# --------------------------------------------------------------------------------------------


class _Value(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _require_json(value: JsonValue) -> JsonValue:
    """Refuse NaN and the infinities: YAML can spell them, JSON cannot, fingerprints need JSON."""
    canonical_json(value)
    return value


class DeltaEvent(_Value):
    """A piece of the turn's text, played as one ``Delta``."""

    kind: Literal["delta"] = "delta"
    text: Annotated[str, Field(min_length=1)]


class ToolCallDeltaEvent(_Value):
    """A piece of one tool call's arguments, played as one ``ToolCallDelta``.

    ``call_id`` and ``name`` are always filled in here (the file may omit them after a call's
    first fragment), because the wire repeats them on every fragment.
    """

    kind: Literal["tool_call_delta"] = "tool_call_delta"
    index: Annotated[int, Field(ge=0)]
    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    arguments_fragment: str = ""


class DelayEvent(_Value):
    """Advances the runtime's virtual clock; a scripted runtime never sleeps."""

    kind: Literal["delay"] = "delay"
    ms: Annotated[int, Field(gt=0)]


class UsageEvent(_Value):
    """Token counts, summed over the turn into the receipt's ``usage``."""

    kind: Literal["usage"] = "usage"
    input_tokens: Annotated[int, Field(ge=0)]
    output_tokens: Annotated[int, Field(ge=0)]


class FinishEvent(_Value):
    """The successful terminal of a turn.

    ``output`` is explicit only when it was given (``has_output``): an explicit ``null`` is an
    answer, an absent output means "derive it". The difference lives in ``model_fields_set``,
    and equality takes it into account so two scenarios that play differently never compare
    equal.
    """

    kind: Literal["finish"] = "finish"
    finish_reason: Annotated[str, Field(min_length=1)] | None = None
    output: JsonValue = None

    _json_output = field_validator("output")(_require_json)

    @property
    def has_output(self) -> bool:
        return "output" in self.model_fields_set

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FinishEvent):
            return NotImplemented
        return (
            self.finish_reason == other.finish_reason
            and self.has_output == other.has_output
            and canonical_json(self.output) == canonical_json(other.output)
        )

    def __hash__(self) -> int:
        return hash((self.finish_reason, self.has_output, canonical_json(self.output)))


class FailEvent(_Value):
    """The failing terminal of a turn: played as ``Failed`` and raised as ``PortError``."""

    kind: Literal["fail"] = "fail"
    code: Annotated[str, Field(pattern=_CODE_PATTERN)]
    message: str
    retry_after_ms: Annotated[int, Field(ge=0)] | None = None


ScenarioEvent = Annotated[
    DeltaEvent | ToolCallDeltaEvent | DelayEvent | UsageEvent | FinishEvent | FailEvent,
    Field(discriminator="kind"),
]
"""One step of a turn, in play order."""

_TERMINALS = (FinishEvent, FailEvent)


def _agrees(output: JsonValue, texts: Sequence[str]) -> bool:
    """An explicit output must be what the deltas said: their text, or the JSON it parses to.

    Compared as canonical JSON, so ``1`` and ``1.0`` or ``true`` and ``1`` stay different.
    """
    if not texts:
        return True
    text = "".join(texts)
    wanted = canonical_json(output)
    if wanted == canonical_json(text):
        return True
    parsed_ok, parsed = parse_json_text(text)
    return parsed_ok and wanted == canonical_json(parsed)


class ScenarioTurn(_Value):
    """What one model call plays: progress events, then exactly one terminal, last.

    ``fixture_output_first`` records the output priority of the format the turn came from.
    ``runport.mock/v1``: explicit ``output``, else the deltas (text/structured rule), else the
    request's ``fixture_output`` (only for a turn with no deltas and no tool calls), else null.
    ``templiqx.mock/v1alpha1``: explicit ``output``, else a non-null ``fixture_output``, else
    the deltas. ``output_schema_valid`` is what the file *states* the validity will be — an
    expectation for ``runport scenarios check``; the runtime always computes validity itself.
    """

    events: tuple[ScenarioEvent, ...]
    fixture_output_first: bool = False
    output_schema_valid: bool | None = None

    @model_validator(mode="after")
    def _playable(self) -> ScenarioTurn:
        """The same rules the file formats enforce, for turns built in code."""
        if not self.events:
            raise ValueError("a turn needs at least one event")
        terminals = [i for i, event in enumerate(self.events) if isinstance(event, _TERMINALS)]
        if terminals != [len(self.events) - 1]:
            raise ValueError("a turn ends in exactly one terminal event (finish or fail), last")
        calls: dict[int, ToolCallDeltaEvent] = {}
        for event in self.events:
            if not isinstance(event, ToolCallDeltaEvent):
                continue
            first = calls.get(event.index)
            if first is None:
                if any(other.call_id == event.call_id for other in calls.values()):
                    raise ValueError(f"two tool calls share the call_id {event.call_id!r}")
                calls[event.index] = event
            elif (first.call_id, first.name) != (event.call_id, event.name):
                raise ValueError(f"tool call {event.index} changes its call_id or name")
            elif not event.arguments_fragment:
                raise ValueError(f"only the first fragment of tool call {event.index} may be empty")
        finish = self.events[-1]
        if isinstance(finish, FinishEvent) and finish.has_output and not self.fixture_output_first:
            texts = [event.text for event in self.events if isinstance(event, DeltaEvent)]
            if not _agrees(finish.output, texts):
                raise ValueError("the explicit output disagrees with the turn's deltas")
        return self

    @property
    def terminal(self) -> FinishEvent | FailEvent:
        last = self.events[-1]
        assert isinstance(last, _TERMINALS)
        return last


class EvidenceExpectation(_Value):
    """A templiqx payload-free evidence expectation, kept as-is."""

    document_id: str
    fragment_id: str
    quote_sha256: str


class DocumentExpectation(_Value):
    """A templiqx document expectation, kept as-is."""

    status: str = ""
    unresolved_references: Annotated[int, Field(ge=0)] = 0


class ScenarioExpectations(_Value):
    """What ``runport scenarios check`` verifies, gathered from either format's fields.

    Each is ``None`` when the file does not state it (nothing to check).
    """

    status: Literal["success", "failure"] | None = None
    failure: str | None = None
    diagnostics: tuple[str, ...] | None = None
    output_fingerprint: str | None = None
    output_schema_valid: bool | None = None


class Scenario(_Value):
    """A loaded scenario: what a scripted runtime plays, plus what ``scenarios check`` expects.

    Never mutated once built, so one scenario can feed many runtimes. ``api_version`` names the
    file format it came from. ``input`` and ``expected_output`` are paths relative to the file
    (``source``); the runtime never opens them. The ``expected_*`` fields are ``None`` when the
    file does not state them. ``kind``, ``receipt_payload_policy``, ``evidence``,
    ``document_expectation`` and ``golden_receipt_fingerprint`` exist only in templiqx manifests.
    """

    api_version: Literal["runport.mock/v1", "templiqx.mock/v1alpha1"]
    id: Annotated[str, Field(min_length=1)]
    turns: Annotated[tuple[ScenarioTurn, ...], Field(min_length=1)]
    contract: str | None = None
    input: str | None = None
    expected_output: str | None = None
    expected_status: Literal["success", "failure"] | None = None
    expected_failure: str | None = None
    expected_diagnostics: tuple[str, ...] | None = None
    expected_output_fingerprint: Annotated[str, Field(pattern=_FINGERPRINT_PATTERN)] | None = None
    expected_output_schema_valid: bool | None = None
    kind: TempliqxKind | None = None
    receipt_payload_policy: ReceiptPayloadPolicy | None = None
    evidence: tuple[EvidenceExpectation, ...] | None = None
    document_expectation: DocumentExpectation | None = None
    golden_receipt_fingerprint: str | None = None
    source: str | None = None

    @property
    def expectations(self) -> ScenarioExpectations:
        """The ``expected_*`` fields as one value, the shape ``scenarios check`` compares."""
        return ScenarioExpectations(
            status=self.expected_status,
            failure=self.expected_failure,
            diagnostics=self.expected_diagnostics,
            output_fingerprint=self.expected_output_fingerprint,
            output_schema_valid=self.expected_output_schema_valid,
        )


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read a scenario file (JSON or YAML, told apart by content) and validate it.

    JSON is read with JSON's own rules first (no YAML surprises such as ``2024-01-01`` becoming a
    date); anything else is read as YAML. Duplicate keys are refused in both.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(f"{source}: cannot read the scenario: {error}", source=source) from None
    return parse_scenario(_decode(text, source), source=source)


def parse_scenario(data: object, *, source: str | None = None) -> Scenario:
    """Validate an already-decoded scenario mapping (either format) and normalize it."""
    where = _Where(source)
    if not isinstance(data, Mapping):
        raise where.error(f"a scenario is a mapping, not {_type_name(data)}")
    api_version = data.get("api_version")
    if api_version == API_VERSION:
        return _parse_mock_v1(data, where)
    if api_version == TEMPLIQX_API_VERSION:
        return _parse_templiqx(data, where)
    if "api_version" not in data:
        raise where.error("missing field 'api_version'")
    raise where.error(
        f"unknown api_version {api_version!r} (expected {API_VERSION!r} or "
        f"{TEMPLIQX_API_VERSION!r})"
    )


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


class _NotJsonError(ValueError):
    """Valid JSON syntax that JSON still refuses (duplicate keys, NaN): not retried as YAML."""


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _NotJsonError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _refuse_constant(name: str) -> Any:
    raise _NotJsonError(f"{name} is not JSON")


def _decode(text: str, source: str) -> object:
    try:
        return json.loads(
            text, object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant
        )
    except _NotJsonError as error:
        raise ScenarioError(f"{source}: malformed JSON: {error}", source=source) from None
    except ValueError as error:
        json_problem = str(error)
    try:
        return load_yaml(text)
    except yaml.YAMLError as error:
        if text.lstrip().startswith(("{", "[")):
            # Meant as JSON: JSON's own complaint is the useful one.
            raise ScenarioError(
                f"{source}: malformed JSON: {json_problem}", source=source
            ) from None
        raise ScenarioError(f"{source}: malformed YAML: {error}", source=source) from None


class _Where:
    """Builds error messages that name the file, turn, event and kind."""

    def __init__(self, source: str | None, place: str = "") -> None:
        self.source = source
        self.place = place

    def at(self, place: str) -> _Where:
        return _Where(self.source, f"{self.place}, {place}" if self.place else place)

    def error(self, problem: str) -> ScenarioError:
        prefix = self.source or "<scenario>"
        if self.place:
            prefix = f"{prefix}: {self.place}"
        return ScenarioError(f"{prefix}: {problem}", source=self.source)


_M = TypeVar("_M", bound=BaseModel)


def _describe(error: ValidationError) -> str:
    problems: list[str] = []
    for detail in error.errors(include_url=False):
        loc = ".".join(str(part) for part in detail["loc"])
        kind = detail["type"]
        if kind == "extra_forbidden":
            problems.append(f"unknown field {loc!r}")
        elif kind == "missing":
            problems.append(f"missing field {loc!r}")
        else:
            message = str(detail["msg"]).removeprefix("Value error, ")
            problems.append(f"field {loc!r}: {message}" if loc else message)
    return "; ".join(problems)


def _check(model: type[_M], data: object, where: _Where) -> _M:
    if not isinstance(data, Mapping):
        raise where.error(f"expected a mapping, not {_type_name(data)}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise where.error(_describe(error)) from None


def _kind_of(data: object, kinds: Mapping[str, object], where: _Where, noun: str) -> str:
    if not isinstance(data, Mapping):
        raise where.error(f"{noun} is a mapping, not {_type_name(data)}")
    kind = data.get("kind")
    if "kind" not in data:
        raise where.error("missing field 'kind'")
    if not isinstance(kind, str) or kind not in kinds:
        raise where.error(f"unknown kind {kind!r} (expected one of {', '.join(kinds)})")
    return kind


class _File(BaseModel):
    """A file-level shape: strict types (``true`` is not ``1``), unknown fields refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


_NonEmpty = Annotated[str, Field(min_length=1)]


def _valid_code(code: str) -> str:
    if code not in ErrorCode._value2member_map_:
        raise ValueError(f"unknown error code {code!r}")
    return code


# ---- runport.mock/v1 ------------------------------------------------------------------------


class _Expect(_File):
    status: Literal["success", "failure"] | None = None
    diagnostics: list[Annotated[str, Field(pattern=_CODE_PATTERN)]] | None = None
    output_fingerprint: Annotated[str, Field(pattern=_FINGERPRINT_PATTERN)] | None = None
    output_schema_valid: bool | None = None


class _MockFile(_File):
    api_version: Literal["runport.mock/v1"]
    id: _NonEmpty
    contract: _NonEmpty | None = None
    input: _NonEmpty | None = None
    expect: _Expect | None = None
    turns: list[Any]


class _TurnFile(_File):
    events: list[Any]


class _DeltaFile(_File):
    kind: Literal["delta"]
    text: _NonEmpty


class _ToolCallDeltaFile(_File):
    kind: Literal["tool_call_delta"]
    index: Annotated[int, Field(ge=0)]
    call_id: _NonEmpty | None = None
    name: _NonEmpty | None = None
    arguments_fragment: str = ""


class _DelayFile(_File):
    kind: Literal["delay"]
    ms: Annotated[int, Field(gt=0)]


class _UsageFile(_File):
    kind: Literal["usage"]
    input_tokens: Annotated[int, Field(ge=0)]
    output_tokens: Annotated[int, Field(ge=0)]


class _FinishFile(_File):
    kind: Literal["finish"]
    finish_reason: _NonEmpty | None = None
    output: JsonValue = None

    _json_output = field_validator("output")(_require_json)


class _FailFile(_File):
    kind: Literal["fail"]
    code: str
    message: str
    retry_after_ms: Annotated[int, Field(ge=0)] | None = None

    _known_code = field_validator("code")(_valid_code)


_MOCK_EVENTS: Mapping[str, type[_File]] = {
    "delta": _DeltaFile,
    "tool_call_delta": _ToolCallDeltaFile,
    "delay": _DelayFile,
    "usage": _UsageFile,
    "finish": _FinishFile,
    "fail": _FailFile,
}


def _parse_mock_v1(data: Mapping[str, Any], where: _Where) -> Scenario:
    top = _check(_MockFile, data, where)
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
        expected_status=expect.status,
        expected_diagnostics=None if expect.diagnostics is None else tuple(expect.diagnostics),
        expected_output_fingerprint=expect.output_fingerprint,
        expected_output_schema_valid=expect.output_schema_valid,
        source=where.source,
    )


class _CallState:
    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.name = name


def _mock_turn(data: object, where: _Where) -> ScenarioTurn:
    turn = _check(_TurnFile, data, where)
    if not turn.events:
        raise where.error("field 'events': a turn needs at least one event")
    events: list[
        DeltaEvent | ToolCallDeltaEvent | DelayEvent | UsageEvent | FinishEvent | FailEvent
    ]
    events = []
    calls: dict[int, _CallState] = {}
    texts: list[str] = []
    last = len(turn.events) - 1
    for number, item in enumerate(turn.events):
        kind = _kind_of(item, _MOCK_EVENTS, where.at(f"event {number}"), "an event")
        at = where.at(f"event {number} ({kind})")
        parsed = _check(_MOCK_EVENTS[kind], item, at)
        if isinstance(parsed, _FinishFile | _FailFile) and number != last:
            raise at.error("a terminal event (finish or fail) must be the last event of its turn")
        if isinstance(parsed, _DeltaFile):
            texts.append(parsed.text)
            events.append(DeltaEvent(text=parsed.text))
        elif isinstance(parsed, _ToolCallDeltaFile):
            events.append(_tool_call(parsed, calls, at))
        elif isinstance(parsed, _DelayFile):
            events.append(DelayEvent(ms=parsed.ms))
        elif isinstance(parsed, _UsageFile):
            events.append(
                UsageEvent(input_tokens=parsed.input_tokens, output_tokens=parsed.output_tokens)
            )
        elif isinstance(parsed, _FinishFile):
            if "output" in parsed.model_fields_set:
                _check_agreement(parsed.output, texts, at)
                events.append(FinishEvent(finish_reason=parsed.finish_reason, output=parsed.output))
            else:
                events.append(FinishEvent(finish_reason=parsed.finish_reason))
        else:
            assert isinstance(parsed, _FailFile)
            events.append(
                FailEvent(
                    code=parsed.code, message=parsed.message, retry_after_ms=parsed.retry_after_ms
                )
            )
    if not isinstance(events[-1], _TERMINALS):
        raise where.at(f"event {last} ({events[-1].kind})").error(
            "a turn must end in a terminal event (finish or fail); this one has none"
        )
    return ScenarioTurn(events=tuple(events))


def _tool_call(
    parsed: _ToolCallDeltaFile, calls: dict[int, _CallState], at: _Where
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


def _check_agreement(output: JsonValue, texts: Sequence[str], at: _Where) -> None:
    if _agrees(output, texts):
        return
    text = "".join(texts)
    shown = text if len(text) <= 80 else text[:77] + "..."
    raise at.error(
        f"field 'output' disagrees with the turn's deltas (joined text {shown!r}): it must equal "
        "that text or the JSON it parses to"
    )


# ---- templiqx.mock/v1alpha1 -----------------------------------------------------------------


class _Evidence(_File):
    document_id: str
    fragment_id: str
    quote_sha256: str


class _DocumentExpectation(_File):
    status: str = ""
    unresolved_references: Annotated[int, Field(ge=0)] = 0


class _TempliqxFile(_File):
    api_version: Literal["templiqx.mock/v1alpha1"]
    id: str
    contract: str
    kind: TempliqxKind
    input: str | None = None
    expected_output: str | None = None
    expected_output_fingerprint: Annotated[str, Field(pattern=_FINGERPRINT_PATTERN)] | None = None
    expected_diagnostics: list[str] | None = None
    expected_status: Literal["success", "failure"] | None = None
    expected_failure: str | None = None
    receipt_payload_policy: ReceiptPayloadPolicy
    steps: list[Any] | None = None
    events: list[Any] | None = None
    evidence: list[_Evidence] | None = None
    document_expectation: _DocumentExpectation | None = None
    golden_receipt_fingerprint: str | None = None


class _StepFile(_File):
    """A templiqx step or event: every one has an ``id`` and a ``kind``."""

    id: str
    kind: str


class _RequestReceivedStep(_StepFile):
    kind: Literal["request_received"]


class _DelayStep(_StepFile):
    kind: Literal["delay"]
    delay_ms: Annotated[int, Field(gt=0)]


class _SuccessStep(_StepFile):
    kind: Literal["runtime_success"]
    output: JsonValue = None
    output_schema_valid: bool | None = None

    _json_output = field_validator("output")(_require_json)


class _Failure(_File):
    code: str
    retry_after_ms: Annotated[int, Field(ge=0)] | None = None
    detail: str

    _known_code = field_validator("code")(_valid_code)


class _FailureStep(_StepFile):
    kind: Literal["runtime_failure"]
    failure: _Failure


_STEPS: Mapping[str, type[_StepFile]] = {
    "request_received": _RequestReceivedStep,
    "delay": _DelayStep,
    "runtime_success": _SuccessStep,
    "runtime_failure": _FailureStep,
}


class _StartItem(_StepFile):
    kind: Literal["start"]


class _DeltaItem(_StepFile):
    kind: Literal["delta"]
    text: _NonEmpty


class _ReasoningItem(_StepFile):
    kind: Literal["reasoning"]
    text: _NonEmpty


class _UsageItem(_StepFile):
    kind: Literal["usage"]
    input_tokens: Annotated[int, Field(ge=0)]
    output_tokens: Annotated[int, Field(ge=0)]


class _EndItem(_StepFile):
    kind: Literal["end"]


class _FinishItem(_StepFile):
    kind: Literal["finish"]
    output: JsonValue = None
    output_schema_valid: bool | None = None

    _json_output = field_validator("output")(_require_json)


_ITEMS: Mapping[str, type[_StepFile]] = {
    "start": _StartItem,
    "delta": _DeltaItem,
    "reasoning": _ReasoningItem,
    "usage": _UsageItem,
    "end": _EndItem,
    "finish": _FinishItem,
}


def _parse_templiqx(data: Mapping[str, Any], where: _Where) -> Scenario:
    top = _check(_TempliqxFile, data, where)
    if not top.id.strip():
        raise where.error("field 'id' must be non-empty")
    if not top.contract.strip():
        raise where.error("field 'contract' must be non-empty")
    steps = top.steps or []
    turn_where = where.at("turn 0")
    if steps and top.events is not None:
        raise where.error("a manifest has exactly one of 'steps' and 'events', not both")
    if top.events is not None:
        if not top.events:
            raise where.error("field 'events': a manifest's events cannot be empty")
        turn = _templiqx_events(top.events, turn_where)
    elif "steps" in data:
        if not steps:
            raise where.error("field 'steps': a manifest needs at least one step")
        turn = _templiqx_steps(steps, turn_where)
    else:
        raise where.error("a manifest needs exactly one of 'steps' and 'events'")
    return Scenario(
        api_version=TEMPLIQX_API_VERSION,
        id=top.id,
        turns=(turn,),
        contract=top.contract,
        input=top.input,
        expected_output=top.expected_output,
        expected_status=top.expected_status,
        expected_failure=top.expected_failure,
        expected_diagnostics=(
            None if top.expected_diagnostics is None else tuple(top.expected_diagnostics)
        ),
        expected_output_fingerprint=top.expected_output_fingerprint,
        expected_output_schema_valid=turn.output_schema_valid,
        kind=top.kind,
        receipt_payload_policy=top.receipt_payload_policy,
        evidence=(
            None
            if top.evidence is None
            else tuple(EvidenceExpectation(**item.model_dump()) for item in top.evidence)
        ),
        document_expectation=(
            None
            if top.document_expectation is None
            else DocumentExpectation(**top.document_expectation.model_dump())
        ),
        golden_receipt_fingerprint=top.golden_receipt_fingerprint,
        source=where.source,
    )


def _parse_items(
    items: Sequence[object],
    models: Mapping[str, type[_StepFile]],
    where: _Where,
    noun: str,
    visit: Callable[[_StepFile, int, _Where], None],
) -> None:
    """Validate each item's shape and id uniqueness, then hand it to ``visit`` in order."""
    ids: dict[str, int] = {}
    for number, item in enumerate(items):
        kind = _kind_of(item, models, where.at(f"{noun} {number}"), f"a {noun}")
        at = where.at(f"{noun} {number} ({kind})")
        parsed = _check(models[kind], item, at)
        if not parsed.id.strip():
            raise at.error("field 'id' must be non-empty")
        if parsed.id in ids:
            raise at.error(f"field 'id': duplicate id {parsed.id!r} (also {noun} {ids[parsed.id]})")
        ids[parsed.id] = number
        visit(parsed, number, at)


def _templiqx_steps(steps: Sequence[object], where: _Where) -> ScenarioTurn:
    events: list[DelayEvent | FinishEvent | FailEvent] = []
    stated: list[bool | None] = [None]

    def visit(step: _StepFile, number: int, at: _Where) -> None:
        if events and isinstance(events[-1], _TERMINALS):
            raise at.error("no step may follow runtime_success or runtime_failure")
        if isinstance(step, _RequestReceivedStep):
            if number != 0:
                raise at.error("request_received must be the first step")
            return
        if number == 0:
            raise at.error(f"{step.kind} cannot come before request_received (the first step)")
        if isinstance(step, _DelayStep):
            events.append(DelayEvent(ms=step.delay_ms))
        elif isinstance(step, _SuccessStep):
            stated[0] = step.output_schema_valid
            events.append(_templiqx_finish(step))
        else:
            assert isinstance(step, _FailureStep)
            failure = step.failure
            events.append(
                FailEvent(
                    code=failure.code,
                    message=failure.detail,
                    retry_after_ms=failure.retry_after_ms,
                )
            )

    _parse_items(steps, _STEPS, where, "step", visit)
    if not events or not isinstance(events[-1], _TERMINALS):
        raise where.error("the steps must end in runtime_success or runtime_failure")
    return ScenarioTurn(
        events=tuple(events), fixture_output_first=True, output_schema_valid=stated[0]
    )


def _templiqx_finish(item: _SuccessStep | _FinishItem) -> FinishEvent:
    # serde reads `"output": null` into `None`: templiqx treats it as "no output given".
    if item.output is None:
        return FinishEvent()
    return FinishEvent(output=item.output)


def _templiqx_events(items: Sequence[object], where: _Where) -> ScenarioTurn:
    events: list[DeltaEvent | UsageEvent | FinishEvent] = []
    phase = ["before_start"]  # before_start -> streaming -> ended -> finished
    stated: list[bool | None] = [None]

    def visit(item: _StepFile, number: int, at: _Where) -> None:
        state = phase[0]
        if state == "finished":
            raise at.error("no event may follow finish")
        if isinstance(item, _StartItem):
            if state != "before_start":
                raise at.error("start must be first and unique")
            phase[0] = "streaming"
        elif state == "before_start":
            raise at.error(f"{item.kind} cannot come before start (the first event)")
        elif isinstance(item, _DeltaItem | _ReasoningItem | _UsageItem):
            if state != "streaming":
                raise at.error(f"{item.kind} must come between start and end")
            if isinstance(item, _DeltaItem):
                events.append(DeltaEvent(text=item.text))
            elif isinstance(item, _UsageItem):
                events.append(
                    UsageEvent(input_tokens=item.input_tokens, output_tokens=item.output_tokens)
                )
            # reasoning is not model output: it is checked, not played.
        elif isinstance(item, _EndItem):
            if state != "streaming":
                raise at.error("end must come once, after start")
            phase[0] = "ended"
        else:
            assert isinstance(item, _FinishItem)
            if state != "ended":
                raise at.error("finish must come after end")
            stated[0] = item.output_schema_valid
            events.append(_templiqx_finish(item))
            phase[0] = "finished"

    _parse_items(items, _ITEMS, where, "event", visit)
    if phase[0] != "finished":
        missing = {"streaming": "end and finish", "ended": "finish"}.get(phase[0], "start")
        raise where.error(f"the events must contain start, end and finish; missing {missing}")
    return ScenarioTurn(
        events=tuple(events), fixture_output_first=True, output_schema_valid=stated[0]
    )
