"""The in-memory scenario, independent of the file format it came from (docs/scenarios.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from runport.contracts import (
    Citation,
    CitationSource,
    FileDelta,
    Finish,
    ServerToolCall,
    ServerToolResult,
    canonical_json,
)
from runport.core._document import JsonLimitError
from runport.core._receipt import parse_json_text
from runport.core._scenario._expectations import ScenarioExpectations, require_json

API_VERSION = "runport.mock/v1"
TEMPLIQX_API_VERSION = "templiqx.mock/v1alpha1"

TempliqxKind = Literal[
    "happy_path", "ambiguous", "missing", "invalid", "drafting", "failure", "document_warning"
]
CODE_PATTERN = r"^[A-Z][A-Z0-9_]*$"


class Value(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DeltaEvent(Value):
    """A piece of the turn's text, played as one ``Delta``."""

    kind: Literal["delta"] = "delta"
    text: Annotated[str, Field(min_length=1)]


class ReasoningDeltaEvent(Value):
    """A piece of the model's reasoning, played as one ``ReasoningDelta``.

    Consecutive pieces form one reasoning block of the receipt. A ``signature`` ends the block
    its piece belongs to (the piece is the block's last) and is kept in the block's
    ``provider_metadata`` as ``{"mock": {"signature": ...}}``; a ``delta`` or
    ``tool_call_delta`` ends the block too, while ``delay`` and ``usage`` do not (thinking may
    pause). The text is never part of the answer.
    """

    kind: Literal["reasoning_delta"] = "reasoning_delta"
    text: Annotated[str, Field(min_length=1)]
    signature: Annotated[str, Field(min_length=1)] | None = None


class ToolCallDeltaEvent(Value):
    """A piece of one tool call's arguments, played as one ``ToolCallDelta``.

    ``call_id`` and ``name`` are always filled in here (the file may omit them after a call's
    first fragment), because the wire repeats them on every fragment.
    """

    kind: Literal["tool_call_delta"] = "tool_call_delta"
    index: Annotated[int, Field(ge=0)]
    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    arguments_fragment: str = ""


class ServerToolCallEvent(Value):
    """A tool the provider ran itself is announced, played as one ``ServerToolCall``."""

    kind: Literal["server_tool_call"] = "server_tool_call"
    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    input: JsonValue = None
    provider_metadata: dict[str, JsonValue] | None = None
    """What the provider wants back with the call in a later turn (a recording keeps it)."""

    def played(self) -> ServerToolCall:
        return ServerToolCall(
            call_id=self.call_id,
            name=self.name,
            input=self.input,
            provider_metadata=self.provider_metadata or None,
        )


class ServerToolResultEvent(Value):
    """What a server tool announced earlier in the turn returned (or its ``error``), played as
    one ``ServerToolResult`` under the call's name."""

    kind: Literal["server_tool_result"] = "server_tool_result"
    call_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    output: JsonValue = None
    error: Annotated[str, Field(min_length=1)] | None = None
    provider_metadata: dict[str, JsonValue] | None = None

    def played(self) -> ServerToolResult:
        return ServerToolResult(
            call_id=self.call_id,
            name=self.name,
            output=self.output,
            error=self.error,
            provider_metadata=self.provider_metadata or None,
        )


class CitationEvent(Value):
    """A source the answer cites, played as one ``Citation``."""

    kind: Literal["citation"] = "citation"
    source: CitationSource
    cited_text: str | None = None
    start: Annotated[int, Field(ge=0)] | None = None
    end: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _a_citation(self) -> CitationEvent:
        self.played()  # the wire's own rules (an end before its start)
        return self

    def played(self) -> Citation:
        return Citation(
            source=self.source, cited_text=self.cited_text, start=self.start, end=self.end
        )


class FileDeltaEvent(Value):
    """A file the model generated (``data``: base64), played as one ``FileDelta``; a whole one
    (not ``partial``) is kept in the receipt's ``files``."""

    kind: Literal["file_delta"] = "file_delta"
    media_type: Annotated[str, Field(min_length=1)]
    data: Annotated[str, Field(min_length=1)]
    partial: bool = False

    def played(self) -> FileDelta:
        return FileDelta(media_type=self.media_type, data=self.data, partial=self.partial)


class DelayEvent(Value):
    """Advances the runtime's virtual clock; a scripted runtime never sleeps."""

    kind: Literal["delay"] = "delay"
    ms: Annotated[int, Field(gt=0)]


class UsageEvent(Value):
    """Token counts, summed over the turn into the receipt's ``usage`` (``reasoning_tokens``:
    of the output tokens, those spent reasoning; ``cache_read_tokens`` and
    ``cache_write_tokens``: of the input tokens, those read from and written to the prompt
    cache; each when stated)."""

    kind: Literal["usage"] = "usage"
    input_tokens: Annotated[int, Field(ge=0)]
    output_tokens: Annotated[int, Field(ge=0)]
    reasoning_tokens: Annotated[int, Field(ge=0)] | None = None
    cache_read_tokens: Annotated[int, Field(ge=0)] | None = None
    cache_write_tokens: Annotated[int, Field(ge=0)] | None = None


class FinishEvent(Value):
    """The successful terminal of a turn.

    ``output`` is explicit only when it was given (``has_output``): an explicit ``null`` is an
    answer, an absent output means "derive it". The difference lives in ``model_fields_set``,
    and equality takes it into account so two scenarios that play differently never compare
    equal.

    ``finish`` is the receipt's ``finish`` when ``finish_reason`` is a provider's own word
    (``{finish_reason: max_tokens, finish: length}``, as ``runport record`` writes a recorded
    turn); without it, a finish reason that is one of runport's words is its own finish and
    any other is ``other``.
    """

    kind: Literal["finish"] = "finish"
    finish_reason: Annotated[str, Field(min_length=1)] | None = None
    output: JsonValue = None
    finish: Finish | None = None

    _json_output = field_validator("output")(require_json)

    @property
    def has_output(self) -> bool:
        return "output" in self.model_fields_set

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FinishEvent):
            return NotImplemented
        return (
            self.finish_reason == other.finish_reason
            and self.finish == other.finish
            and self.has_output == other.has_output
            and canonical_json(self.output) == canonical_json(other.output)
        )

    def __hash__(self) -> int:
        return hash((self.finish_reason, self.finish, self.has_output, canonical_json(self.output)))


class FailEvent(Value):
    """The failing terminal of a turn: played as ``Failed`` and raised as ``PortError``."""

    kind: Literal["fail"] = "fail"
    code: Annotated[str, Field(pattern=CODE_PATTERN)]
    message: str
    retry_after_ms: Annotated[int, Field(ge=0)] | None = None


ScenarioEvent = Annotated[
    DeltaEvent
    | ReasoningDeltaEvent
    | ToolCallDeltaEvent
    | ServerToolCallEvent
    | ServerToolResultEvent
    | CitationEvent
    | FileDeltaEvent
    | DelayEvent
    | UsageEvent
    | FinishEvent
    | FailEvent,
    Field(discriminator="kind"),
]
"""One step of a turn, in play order."""

TERMINALS = (FinishEvent, FailEvent)


def _server_tools_pair(events: Sequence[object]) -> None:
    """A server tool result answers a call announced before it in the turn, once."""
    open_calls: dict[str, bool] = {}
    for event in events:
        if isinstance(event, ServerToolCallEvent):
            if event.call_id in open_calls:
                raise ValueError(f"server tool call {event.call_id!r} is announced twice")
            open_calls[event.call_id] = False
        elif isinstance(event, ServerToolResultEvent):
            answered = open_calls.get(event.call_id)
            if answered is None:
                raise ValueError(
                    f"server tool result {event.call_id!r}: no server tool call before it "
                    "has that id"
                )
            if answered:
                raise ValueError(f"server tool call {event.call_id!r} is answered twice")
            open_calls[event.call_id] = True


def agrees(output: JsonValue, texts: Sequence[str]) -> bool:
    """An explicit output must be what the deltas said: their text, or the JSON it parses to.

    Compared as canonical JSON, so ``1`` and ``1.0`` or ``true`` and ``1`` stay different.
    """
    if not texts:
        return True
    text = "".join(texts)
    wanted = canonical_json(output)
    if wanted == canonical_json(text):
        return True
    try:
        parsed_ok, parsed = parse_json_text(text)
    except JsonLimitError:
        return False  # an output within the bounds cannot equal JSON beyond them
    return parsed_ok and wanted == canonical_json(parsed)


class ScenarioTurn(Value):
    """What one model call plays: progress events, then exactly one terminal, last.

    ``fixture_output_first`` records the output priority of the format the turn came from.
    ``runport.mock/v1``: explicit ``output``, else the deltas (text/structured rule), else the
    request's ``fixture_output`` (only for a turn with no deltas and no tool calls), else null.
    ``templiqx.mock/v1alpha1``: explicit ``output``, else a non-null ``fixture_output``, else
    the deltas. ``tool_results`` are what the tools this turn calls give back, by call id, so a
    multi-turn scenario can be played end to end: a string is handed to the model as it is,
    any other JSON value as compact JSON.
    """

    events: tuple[ScenarioEvent, ...]
    fixture_output_first: bool = False
    tool_results: Mapping[str, JsonValue] = Field(default_factory=dict)

    _json_results = field_validator("tool_results")(require_json)

    @model_validator(mode="after")
    def _playable(self) -> ScenarioTurn:
        """The same rules the file formats enforce, for turns built in code."""
        if not self.events:
            raise ValueError("a turn needs at least one event")
        terminals = [i for i, event in enumerate(self.events) if isinstance(event, TERMINALS)]
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
        _server_tools_pair(self.events)
        unknown = unmade_calls(self.tool_results, {call.call_id for call in calls.values()})
        if unknown:
            raise ValueError(f"tool_results {unknown[0]!r}: this turn makes no call with that id")
        finish = self.events[-1]
        if isinstance(finish, FinishEvent) and finish.has_output and not self.fixture_output_first:
            texts = [event.text for event in self.events if isinstance(event, DeltaEvent)]
            if not agrees(finish.output, texts):
                raise ValueError("the explicit output disagrees with the turn's deltas")
        return self

    def __hash__(self) -> int:
        # tool_results is a mapping: hashed by its canonical JSON, as FinishEvent's output is.
        results = canonical_json(dict(self.tool_results))
        return hash((self.events, self.fixture_output_first, results))

    @property
    def terminal(self) -> FinishEvent | FailEvent:
        last = self.events[-1]
        assert isinstance(last, TERMINALS)
        return last


def unmade_calls(results: Mapping[str, object], call_ids: set[str]) -> list[str]:
    """The ``tool_results`` keys that name no call the turn makes, in the order given."""
    return [key for key in results if key not in call_ids]


class Scenario(Value):
    """A loaded scenario: what a scripted runtime plays, and what ``scenarios check`` expects.

    Never mutated once built, so one scenario can feed many runtimes. ``api_version`` names the
    file format it came from. ``input`` and ``expected_output`` are paths relative to the file
    (``source``) that ``scenarios check`` reads into the request (the inputs, and the request's
    ``fixture_output``); the runtime never opens them. ``expectations`` is what the file states
    the outcome will be. ``kind`` exists only in templiqx manifests.
    """

    api_version: Literal["runport.mock/v1", "templiqx.mock/v1alpha1"]
    id: Annotated[str, Field(min_length=1)]
    turns: Annotated[tuple[ScenarioTurn, ...], Field(min_length=1)]
    contract: str | None = None
    input: str | None = None
    expected_output: str | None = None
    kind: TempliqxKind | None = None
    expectations: ScenarioExpectations = ScenarioExpectations()
    source: str | None = None
