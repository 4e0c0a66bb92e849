"""The standard test on how a turn ended and what it cost: the receipt's ``finish`` (the
provider's finish reason normalised, adr/0050-a-turn-s-end-decides-what-a-run-does.md) and its
prompt-cache counts (adr/0051-cache-tokens-and-cache-breakpoints.md), streamed and not.

A run decides what to do with a turn by its ``finish``: it never executes the calls of a turn
cut by the token limit, never sends a cut or refused answer to a correction round, and
continues a paused turn. An adapter that reports a cut turn as ``stop`` makes a run act on
half an answer; one that drops the cache counts makes every bill wrong. Both are caught here
by name, beside the field-by-field receipt comparison.
"""

from __future__ import annotations

from typing import Final

from runport.conformance._base import ConformanceBase, over
from runport.conformance._cases import Case
from runport.conformance._harness import Harness
from runport.conformance._observe import broken
from runport.contracts import ExecutionReceipt

__all__ = ["TurnEndTests", "select_turn_ends"]

CHECK: Final = "turn end and cost"

PASSED_OFF: Final = {
    "length": "a turn cut by the token limit passed off as complete",
    "content_filter": "a refused turn passed off as an answer",
    "pause": "a paused turn passed off as final",
    "tool_calls": "a turn that made calls reported as a plain answer",
}
"""What it means when an adapter reports another ``finish`` than the one a turn ended with."""


def select_turn_ends(case: Case) -> bool:
    """The played cases whose end is not a plain ``stop``, or whose usage counts the cache."""
    return not case.fails and (
        case.expected_finish not in (None, "stop") or any(case.cache_counts())
    )


def turn_end_problems(case: Case, receipt: ExecutionReceipt) -> list[str]:
    """How ``receipt`` misreports the way ``case`` ended or what it cost (none when right)."""
    problems: list[str] = []
    want = case.expected_finish
    if want is not None and receipt.finish != want:
        problem = (
            f"finish is {receipt.finish!r} (finish_reason {receipt.finish_reason!r}); the "
            f"upstream ended the turn {case.finish_reason!r}, which is {want!r}"
        )
        if want in PASSED_OFF:
            problem += f": {PASSED_OFF[want]}"
        problems.append(problem)
    usage = receipt.usage
    got = (0, 0) if usage is None else (usage.cache_read_tokens or 0, usage.cache_write_tokens or 0)
    read, write = case.cache_counts()
    if got != (read, write):
        problem = (
            f"usage has cache_read_tokens {got[0]} and cache_write_tokens {got[1]}; the "
            f"upstream reported {read} read and {write} written"
        )
        if got == (0, 0):
            problem += ": cache counts dropped"
        problems.append(problem)
    return problems


class TurnEndTests(ConformanceBase):
    """How a turn ended and what it cost (see the module's docstring)."""

    @over(select_turn_ends)
    def test_turn_end_and_cache_counts(self, case: Case, conformance_harness: Harness) -> None:
        """The receipt's ``finish`` is the turn's end in runport's words (a cut turn
        ``length``, a refusal ``content_filter``, a pause ``pause``, a turn with calls
        ``tool_calls``) and its usage keeps the cache reads and writes the upstream reported,
        streamed and not."""
        _, played = self._both_ways(conformance_harness, case)
        for mode, outcome in played:
            if outcome.receipt is None:
                broken(CHECK, case.name, f"{mode} returned no receipt", outcome=outcome)
            problems = turn_end_problems(case, outcome.receipt)
            if problems:
                broken(CHECK, case.name, f"{mode}: " + "; ".join(problems))
