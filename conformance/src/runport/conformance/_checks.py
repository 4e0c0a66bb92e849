"""The checks themselves, apart from any test class: what makes one call's events and receipt
break a law item.

The standard tests (sync and async) and ``check_stream`` — the function an author calls in
their own tests — all judge with these, so a check is written once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from pydantic import TypeAdapter

from runport.conformance._cases import Case, Thought, schema_accepts
from runport.contracts import (
    Complete,
    ExecutionReceipt,
    Failed,
    ProgressEvent,
    StreamEvent,
    ToolCallDelta,
)
from runport.core import StreamAssembler, StreamGrammarError
from runport.ports import PortError

if TYPE_CHECKING:
    from runport.conformance._observe import Outcome

__all__ = [
    "EVENT_ADAPTER",
    "EVENT_KEYS",
    "EVENT_REQUIRED_KEYS",
    "StreamViolation",
    "check_stream",
    "clip",
    "diff",
    "dump",
    "grammar_problem",
    "index_problem",
    "leaks",
    "opaque_leaks",
    "opaque_values",
    "provided_problems",
    "reasoning_problems",
    "receipt_problems",
    "reported_chain",
    "validity",
]

EVENT_ADAPTER: Final[TypeAdapter[StreamEvent]] = TypeAdapter(StreamEvent)
EVENT_KEYS: Final = {
    "Delta": {"kind", "text"},
    "ReasoningDelta": {"kind", "text"},
    "ToolCallDelta": {"kind", "index", "call_id", "name", "arguments_fragment"},
    "ServerToolCall": {"kind", "call_id", "name", "input", "provider_metadata"},
    "ServerToolResult": {"kind", "call_id", "name", "output", "error", "provider_metadata"},
    "Citation": {"kind", "source", "cited_text", "start", "end"},
    "FileDelta": {"kind", "media_type", "data", "partial"},
    "Complete": {"kind", "receipt"},
    "Failed": {"kind", "code", "message"},
}
"""The keys each event serializes: all of them, or (what the provider did itself, whose
optional fields are left out when empty) at least those of ``EVENT_REQUIRED_KEYS``."""
EVENT_REQUIRED_KEYS: Final = {
    **EVENT_KEYS,
    "ServerToolCall": {"kind", "call_id", "name", "input"},
    "ServerToolResult": {"kind", "call_id", "name", "output"},
    "Citation": {"kind", "source"},
}


_STREAM_EVENTS: Final = ProgressEvent | Complete | Failed


class StreamViolation(AssertionError):
    """The first way a stream breaks the streaming law, as ``check_stream`` found it.

    ``law`` is the law item (1 grammar, 2 same result, 3 assembly, 5 failure projection),
    ``index`` the position of the offending event (``None`` when the stream as a whole is at
    fault, e.g. it has no terminal event), ``problem`` the reason in words.
    """

    def __init__(self, law: int, index: int | None, problem: str) -> None:
        where = "" if index is None else f" at event #{index}"
        super().__init__(f"law {law}{where}: {problem}")
        self.law = law
        self.index = index
        self.problem = problem


def check_stream(
    events: Sequence[StreamEvent],
    receipt: ExecutionReceipt | None = None,
    *,
    error: BaseException | None = None,
) -> None:
    """Check one streamed call's events against the streaming law (docs/conformance.md).

    ``events`` is everything the sink received; ``receipt`` what the call returned, or
    ``error`` what it raised (give at most one). Checks law 1 (progress, then exactly one
    terminal, then nothing), law 2 (``Complete.receipt`` is the returned receipt), law 3 (the
    progress assembles into the receipt's text and tool calls) and law 5 (a raised
    ``PortError``'s code is the ``Failed`` event's). Returns nothing when the stream keeps the
    law; raises ``StreamViolation`` naming the first violation otherwise.
    """
    if receipt is not None and error is not None:
        raise ValueError("check_stream: give the receipt or the error a call ended with, not both")
    assembler = StreamAssembler()
    for index, event in enumerate(events):
        if not isinstance(event, _STREAM_EVENTS):
            raise StreamViolation(1, index, f"a {type(event).__name__} is not a StreamEvent")
        try:
            assembler.feed(event)
        except StreamGrammarError as grammar:
            raise StreamViolation(1, index, str(grammar)) from None
    terminal = assembler.terminal
    if terminal is None:
        raise StreamViolation(1, None, "no terminal event (Complete or Failed) was sent")
    last = len(events) - 1
    if error is not None:
        if not isinstance(terminal, Failed):
            raise StreamViolation(1, last, "the call raised but its terminal event is Complete")
        if isinstance(error, PortError) and terminal.code != error.code:
            raise StreamViolation(
                5, last, f"Failed.code is {terminal.code}, the raised PortError's is {error.code}"
            )
        return
    if receipt is None:
        return
    if not isinstance(terminal, Complete):
        raise StreamViolation(1, last, "the call returned a receipt but its terminal is Failed")
    problems = diff(dump(terminal.receipt), dump(receipt))
    if problems:
        raise StreamViolation(
            2, last, "Complete.receipt differs from the returned receipt: " + "; ".join(problems)
        )
    problems = assembler.assembly_problems(receipt)
    if problems:
        raise StreamViolation(3, None, "; ".join(problems))
    at, problem = index_problem(events)
    if problem is not None:
        raise StreamViolation(3, at, problem)


def index_problem(events: Sequence[StreamEvent]) -> tuple[int | None, str | None]:
    """Where a ``ToolCallDelta.index`` is not the call's position in the turn, and why: a
    turn's calls are numbered 0, 1, … (their places in ``receipt.tool_calls``), whatever the
    wire numbers — a content block's or an output item's index counts other blocks too."""
    indices = sorted({event.index for event in events if isinstance(event, ToolCallDelta)})
    if indices == list(range(len(indices))):
        return None, None
    wrong = next(number for place, number in enumerate(indices) if number != place)
    at = next(
        place
        for place, event in enumerate(events)
        if isinstance(event, ToolCallDelta) and event.index == wrong
    )
    return at, (
        f"tool-call index {wrong} is not the call's position in the turn: the turn's "
        f"{len(indices)} call(s) are numbered 0 to {len(indices) - 1}, their places in "
        f"receipt.tool_calls (ToolCallDelta.index is not a content block's or an output "
        f"item's index); seen {indices}"
    )


def grammar_problem(outcome: Outcome) -> str | None:
    """Why the events of one observed call break law 1 (or the port's calling rules)."""
    if outcome.hung:
        return outcome.ending()
    if outcome.foreign_threads:
        return "the sink was called on a thread other than the caller's"
    try:
        check_stream(outcome.events)
    except StreamViolation as violation:
        where = "" if violation.index is None else f"event #{violation.index}: "
        return where + violation.problem
    terminal = outcome.terminals[0]
    if outcome.error is None and not isinstance(terminal, Complete):
        return "the call returned a receipt but its terminal event is Failed"
    if isinstance(outcome.error, PortError) and not isinstance(terminal, Failed):
        return "the call raised a PortError but its terminal event is Complete"
    if outcome.unexpected() is not None:
        return "the call raised an exception that is not a PortError"
    return None


def diff(seen: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """The keys on which two JSON objects differ, each with both values (clipped)."""
    problems = []
    for key in sorted(set(seen) | set(expected)):
        one, other = seen.get(key, "<absent>"), expected.get(key, "<absent>")
        if json.dumps(one, sort_keys=True) != json.dumps(other, sort_keys=True):
            problems.append(f"{key}: {clip(one)} != expected {clip(other)}")
    return problems


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {text for item in value.values() for text in _strings(item)}
    if isinstance(value, list):
        return {text for item in value for text in _strings(item)}
    return set()


def opaque_values(case: Case) -> list[str]:
    """The case's reasoning signatures and redacted data: opaque values the provider sent that
    a later turn sends back (kept in the receipt, shown nowhere else)."""
    return [
        value
        for step in case.steps
        if isinstance(step, Thought)
        for value in (step.signature, step.redacted)
        if value
    ]


def reasoning_problems(seen: Any, expected: Any, opaque: Sequence[str]) -> list[str]:
    """How a receipt's ``reasoning`` falls short of what the protocol played: the same parts
    with the same texts, each part's ``provider_metadata`` holding the opaque values its block
    came with (``opaque``: signatures, redacted data) — what a later turn must send back.
    Anything else in ``provider_metadata`` is the adapter's own business."""
    seen_parts = seen if isinstance(seen, list) else []
    expected_parts = expected if isinstance(expected, list) else []
    texts = [part.get("text") for part in seen_parts]
    wanted = [part.get("text") for part in expected_parts]
    if texts != wanted:
        return [f"reasoning: the parts' texts are {clip(texts)}, the upstream's {clip(wanted)}"]
    problems = []
    for number, (mine, theirs) in enumerate(zip(seen_parts, expected_parts, strict=True)):
        needed = sorted(_strings(theirs.get("provider_metadata")) & set(opaque))
        kept = _strings(mine.get("provider_metadata"))
        missing = [value for value in needed if value not in kept]
        if missing:
            problems.append(
                f"reasoning part #{number}: provider_metadata lacks {clip(missing)}, which "
                "the upstream sent with the block (a signature or redacted data: a later turn "
                f"must send it back); it holds {clip(mine.get('provider_metadata'))}"
            )
    return problems


def receipt_problems(
    seen: dict[str, Any], expected: dict[str, Any], opaque: Sequence[str]
) -> list[str]:
    """``diff`` of two receipts as JSON, reasoning judged by ``reasoning_problems``, what the
    provider did itself by ``provided_problems`` first (a server tool's ``provider_metadata``
    is the protocol's business, as a reasoning block's is)."""
    mine, theirs = dict(seen), dict(expected)
    if mine.get("server_tools"):
        mine["server_tools"] = [
            {key: value for key, value in tool.items() if key != "provider_metadata"}
            for tool in mine["server_tools"]
        ]
    problems = provided_problems(mine, theirs) + diff(
        {key: value for key, value in mine.items() if key != "reasoning"},
        {key: value for key, value in theirs.items() if key != "reasoning"},
    )
    return problems + reasoning_problems(mine.get("reasoning"), theirs.get("reasoning"), opaque)


def provided_problems(seen: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """What the provider did itself, lost in a way a run would act on wrongly, named: the
    sources an answer cited dropped, or a tool the provider ran itself reported as a call for
    the run to make (a run would execute it a second time)."""
    problems: list[str] = []
    cited = expected.get("citations") or []
    if cited and not seen.get("citations"):
        problems.append(
            f"citations dropped: the upstream cited {len(cited)} source(s), the receipt has none"
        )
    ran = {tool["name"] for tool in expected.get("server_tools") or []}
    called = sorted(ran & {call.get("name") for call in seen.get("tool_calls") or []})
    if called:
        problems.append(
            f"a server tool turned into a client call: {', '.join(called)} ran at the provider "
            "(ServerToolCall, receipt.server_tools), but the receipt asks the run to call it"
        )
    return problems


def clip(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def dump(receipt: ExecutionReceipt) -> dict[str, Any]:
    return receipt.model_dump(mode="json")


def validity(receipt: ExecutionReceipt, schema: dict[str, Any]) -> bool | None:
    """``output_schema_valid`` recomputed from the receipt itself (docs/wire-types.md)."""
    if receipt.tool_calls:
        return None
    if schema.get("type") != "string" and receipt.text is not None:
        try:
            json.loads(receipt.text)
        except ValueError:
            return False
    return schema_accepts(schema, receipt.output)


def reported_chain(error: BaseException | None) -> list[BaseException]:
    """The exceptions a traceback of ``error`` shows, in the order Python reports them from the
    raised one: its ``__cause__`` when set, else its ``__context__`` unless
    ``__suppress_context__`` (``raise … from None``) hides it — never more than eight."""
    chain: list[BaseException] = []
    while error is not None and len(chain) < 8 and all(error is not seen for seen in chain):
        chain.append(error)
        if error.__cause__ is not None:
            error = error.__cause__
        elif error.__suppress_context__:
            error = None
        else:
            error = error.__context__
    return chain


def _error_places(outcome: Outcome, *, details: bool) -> list[tuple[str, str]]:
    """Each exception of the reported chain (``reported_chain``) as (where, its texts)."""
    places = []
    for depth, error in enumerate(reported_chain(outcome.error)):
        where = "the raised exception" if depth == 0 else f"its cause/context #{depth}"
        where += f" ({type(error).__name__})"
        texts = [str(error), repr(error), *(repr(arg) for arg in error.args)]
        if details:
            texts += [str(getattr(error, name, "")) for name in ("message", "detail")]
        places.append((where, "\n".join(texts)))
    return places


def leaks(outcome: Outcome, secrets: Sequence[str]) -> list[str]:
    """Where a planted secret shows up in what the caller can see (law 10)."""
    places: list[tuple[str, str]] = []
    for index, event in enumerate([*outcome.events, *outcome.after_stop]):
        places.append((f"event #{index} ({event.kind})", event.model_dump_json()))
    if outcome.receipt is not None:
        places.append(("the returned receipt", outcome.receipt.model_dump_json()))
    places += _error_places(outcome, details=True)
    for index, line in enumerate(outcome.logs):
        places.append((f"log record #{index}", line))
    found = []
    for secret, label in zip(
        secrets, ("the API key", "the provider's response body"), strict=False
    ):
        found += [f"{label} appears in {where}" for where, text in places if secret in text]
    return found


def opaque_leaks(outcome: Outcome, opaque: Sequence[str]) -> list[str]:
    """Where a signature or a redacted block's data shows up other than in the receipt
    (which keeps them, to send back): progress events, errors, log records (law 10)."""
    places: list[tuple[str, str]] = []
    for index, event in enumerate([*outcome.events, *outcome.after_stop]):
        if not isinstance(event, Complete):
            places.append((f"event #{index} ({event.kind})", event.model_dump_json()))
    places += _error_places(outcome, details=False)
    for index, line in enumerate(outcome.logs):
        places.append((f"log record #{index}", line))
    return [
        f"a reasoning signature or redacted data appears in {where}"
        for where, text in places
        if any(secret in text for secret in opaque)
    ]
