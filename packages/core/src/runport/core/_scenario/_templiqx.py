"""The ``templiqx.mock/v1alpha1`` manifest format (templiqx's conformance corpus), read unchanged
into a one-turn ``Scenario``.

The templiqx parser's rules hold: exactly one of ``steps`` (``request_received`` first,
``delay``, then ``runtime_success`` or ``runtime_failure`` last) or ``events`` (``start``,
``delta`` / ``reasoning`` / ``usage``, ``end``, ``finish``); ids unique. ``reasoning`` is not
model output and is dropped. templiqx gives the request's ``fixture_output`` priority over the
deltas, so such a turn carries ``fixture_output_first`` (see ``ScenarioTurn``). As in templiqx
(serde's ``Option``), an explicit ``output: null`` there means "no output given".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from runport.core._scenario._decoding import (
    Count,
    File,
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
    DocumentExpectation,
    EvidenceExpectation,
    ReceiptPayloadPolicy,
    ScenarioExpectations,
)
from runport.core._scenario._model import (
    TEMPLIQX_API_VERSION,
    TERMINALS,
    DelayEvent,
    DeltaEvent,
    FailEvent,
    FinishEvent,
    Scenario,
    ScenarioTurn,
    TempliqxKind,
    UsageEvent,
)


class _TempliqxFile(File):
    api_version: Literal["templiqx.mock/v1alpha1"]
    id: str
    contract: str
    kind: TempliqxKind
    input: str | None = None
    expected_output: str | None = None
    expected_output_fingerprint: Annotated[str, Field(pattern=FINGERPRINT_PATTERN)] | None = None
    expected_diagnostics: list[str] | None = None
    expected_status: Literal["success", "failure"] | None = None
    expected_failure: str | None = None
    receipt_payload_policy: ReceiptPayloadPolicy
    steps: list[Any] | None = None
    events: list[Any] | None = None
    evidence: list[EvidenceExpectation] | None = None
    document_expectation: DocumentExpectation | None = None
    golden_receipt_fingerprint: str | None = None


class _StepFile(File):
    """A templiqx step or event: every one has an ``id`` and a ``kind``."""

    id: str
    kind: str


class _RequestReceivedStep(_StepFile):
    kind: Literal["request_received"]


class _DelayStep(_StepFile):
    kind: Literal["delay"]
    delay_ms: Annotated[int, Field(gt=0)]


class _SuccessStep(_StepFile, OutputFields):
    kind: Literal["runtime_success"]
    output_schema_valid: bool | None = None


class _Failure(File):
    code: str
    retry_after_ms: Count | None = None
    detail: str

    _known_code = field_validator("code")(valid_code)


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


class _DeltaItem(_StepFile, TextFields):
    kind: Literal["delta"]


class _ReasoningItem(_StepFile, TextFields):
    kind: Literal["reasoning"]


class _UsageItem(_StepFile, UsageFields):
    kind: Literal["usage"]


class _EndItem(_StepFile):
    kind: Literal["end"]


class _FinishItem(_StepFile, OutputFields):
    kind: Literal["finish"]
    output_schema_valid: bool | None = None


_ITEMS: Mapping[str, type[_StepFile]] = {
    "start": _StartItem,
    "delta": _DeltaItem,
    "reasoning": _ReasoningItem,
    "usage": _UsageItem,
    "end": _EndItem,
    "finish": _FinishItem,
}


def parse_templiqx(data: Mapping[str, Any], where: Where) -> Scenario:
    top = check(_TempliqxFile, data, where)
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
        turn, stated = _templiqx_events(top.events, turn_where)
    elif "steps" in data:
        if not steps:
            raise where.error("field 'steps': a manifest needs at least one step")
        turn, stated = _templiqx_steps(steps, turn_where)
    else:
        raise where.error("a manifest needs exactly one of 'steps' and 'events'")
    return Scenario(
        api_version=TEMPLIQX_API_VERSION,
        id=top.id,
        turns=(turn,),
        contract=top.contract,
        input=top.input,
        expected_output=top.expected_output,
        kind=top.kind,
        expectations=ScenarioExpectations(
            status=top.expected_status,
            failure=top.expected_failure,
            diagnostics=(
                None if top.expected_diagnostics is None else tuple(top.expected_diagnostics)
            ),
            output_fingerprint=top.expected_output_fingerprint,
            output_schema_valid=stated,
            receipt_payload_policy=top.receipt_payload_policy,
            evidence=None if top.evidence is None else tuple(top.evidence),
            document=top.document_expectation,
            golden_receipt_fingerprint=top.golden_receipt_fingerprint,
        ),
        source=where.source,
    )


def _parse_items(
    items: Sequence[object],
    models: Mapping[str, type[_StepFile]],
    where: Where,
    noun: str,
    visit: Callable[[_StepFile, int, Where], None],
) -> None:
    """Validate each item's shape and id uniqueness, then hand it to ``visit`` in order."""
    ids: dict[str, int] = {}
    for number, parsed, at in decode_each(items, models, where, noun, f"a {noun}"):
        if not parsed.id.strip():
            raise at.error("field 'id' must be non-empty")
        if parsed.id in ids:
            raise at.error(f"field 'id': duplicate id {parsed.id!r} (also {noun} {ids[parsed.id]})")
        ids[parsed.id] = number
        visit(parsed, number, at)


def _templiqx_steps(steps: Sequence[object], where: Where) -> tuple[ScenarioTurn, bool | None]:
    """The manifest's one turn, and the ``output_schema_valid`` its success step states."""
    events: list[DelayEvent | FinishEvent | FailEvent] = []
    stated: list[bool | None] = [None]

    def visit(step: _StepFile, number: int, at: Where) -> None:
        if events and isinstance(events[-1], TERMINALS):
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
    if not events or not isinstance(events[-1], TERMINALS):
        raise where.error("the steps must end in runtime_success or runtime_failure")
    return ScenarioTurn(events=tuple(events), fixture_output_first=True), stated[0]


def _templiqx_finish(item: _SuccessStep | _FinishItem) -> FinishEvent:
    # serde reads `"output": null` into `None`: templiqx treats it as "no output given".
    if item.output is None:
        return FinishEvent()
    return FinishEvent(output=item.output)


def _templiqx_events(items: Sequence[object], where: Where) -> tuple[ScenarioTurn, bool | None]:
    """The manifest's one turn, and the ``output_schema_valid`` its finish event states."""
    events: list[DeltaEvent | UsageEvent | FinishEvent] = []
    phase = ["before_start"]  # before_start -> streaming -> ended -> finished
    stated: list[bool | None] = [None]

    def visit(item: _StepFile, number: int, at: Where) -> None:
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
    return ScenarioTurn(events=tuple(events), fixture_output_first=True), stated[0]
