"""``assert_streamed``: what a stream said, checked in one call (no pytest here)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, JsonValue

from runport.contracts import (
    Complete,
    Delta,
    Failed,
    ProgressEvent,
    ReasoningDelta,
    ToolCall,
)

__all__ = ["assert_streamed"]

_NOT_GIVEN: Any = object()


def assert_streamed(
    events: Iterable[BaseModel],
    *,
    text: str | None = _NOT_GIVEN,
    tool_calls: Sequence[str | tuple[str, JsonValue]] | None = _NOT_GIVEN,
    reasoning: str | None = _NOT_GIVEN,
    failed: str | None = None,
) -> None:
    """Check the events a sink or ``on_event`` received, from one call or a whole run.

    Always: every turn's progress (``Delta``, ``ReasoningDelta``, ``ToolCallDelta``, what the
    provider did itself) ends in exactly one terminal; each ``Complete``'s receipt text is what
    its turn's deltas joined to; the stream ends in ``Complete`` — or, with ``failed=CODE``, in
    a ``Failed`` with that code. Then, each only when given: ``text``, every ``Delta`` joined;
    ``reasoning``, every ``ReasoningDelta`` joined; ``tool_calls``, the calls of every receipt
    in order, each a name or a ``(name, arguments)`` pair. Raises ``AssertionError`` saying
    what differs.
    """
    seen = list(events)
    turn_text: list[str] = []
    in_turn = False
    terminals: list[Complete | Failed] = []
    calls: list[ToolCall] = []
    for position, event in enumerate(seen):
        if isinstance(event, ProgressEvent):
            in_turn = True
            if isinstance(event, Delta):
                turn_text.append(event.text)
        elif isinstance(event, Complete | Failed):
            if isinstance(event, Complete):
                streamed = "".join(turn_text)
                receipt = event.receipt
                if receipt.text is not None and receipt.text != streamed:
                    raise AssertionError(
                        f"event {position}: the receipt's text {receipt.text!r} is not what its "
                        f"turn streamed, {streamed!r}"
                    )
                calls.extend(receipt.tool_calls or ())
            terminals.append(event)
            turn_text, in_turn = [], False
    if not terminals:
        raise AssertionError(f"no terminal event (Complete or Failed) in {_kinds(seen)}")
    if in_turn:
        raise AssertionError(f"progress after the last terminal event: {_kinds(seen)}")
    last = terminals[-1]
    if failed is None and isinstance(last, Failed):
        raise AssertionError(f"the stream failed: {last.code}: {last.message}")
    if failed is not None and not (isinstance(last, Failed) and last.code == failed):
        ended = f"{last.code}: {last.message}" if isinstance(last, Failed) else "Complete"
        raise AssertionError(f"expected the stream to fail with {failed}, it ended in {ended}")
    if text is not _NOT_GIVEN:
        _same("text", "".join(e.text for e in seen if isinstance(e, Delta)), text)
    if reasoning is not _NOT_GIVEN:
        joined = "".join(e.text for e in seen if isinstance(e, ReasoningDelta))
        _same("reasoning", joined, reasoning)
    if tool_calls is not _NOT_GIVEN:
        wanted = list(tool_calls or ())
        made = [
            c.name if isinstance(want, str) else (c.name, c.arguments)
            for c, want in zip(calls, wanted, strict=False)
        ]
        if len(calls) != len(wanted) or made != [
            w if isinstance(w, str) else tuple(w) for w in wanted
        ]:
            shown = [(c.name, c.arguments) for c in calls]
            raise AssertionError(f"tool calls: streamed {shown}, expected {wanted}")


def _same(what: str, streamed: str, expected: str | None) -> None:
    if streamed != (expected or ""):
        raise AssertionError(f"{what}: streamed {streamed!r}, expected {expected!r}")


def _kinds(events: Sequence[BaseModel]) -> list[str]:
    return [str(getattr(event, "kind", type(event).__name__)) for event in events]
