"""The streaming law, item by item: one standard test per law item (docs/streaming-law.md),
each parametrized over the cases it applies to, plus the up-front check that the adapter
honours ``upstream.read_timeout`` (without it, every stall case would wait on the adapter's
own, much longer, timeout)."""

from __future__ import annotations

from typing import Any, Final

import pytest

from runport.conformance._base import (
    ConformanceBase,
    over,
    select_all,
    select_failing,
    select_succeeding,
)
from runport.conformance._caller_stops import after_stop, served_again, stop_plan
from runport.conformance._cases import (
    CASES,
    CASES_BY_NAME,
    ENDINGS,
    Case,
    follow_up_case,
    sentinel_case,
)
from runport.conformance._checks import (
    diff,
    dump,
    grammar_problem,
    index_problem,
    leaks,
    opaque_leaks,
    opaque_values,
)
from runport.conformance._composite import check_composite
from runport.conformance._harness import Harness, protocol_of
from runport.conformance._observe import Outcome, broken
from runport.conformance._upstream import ScriptedUpstream
from runport.contracts import Complete, ExecutionReceipt, ExecutionRequest, Failed, Message
from runport.core import StreamAssembler, StreamGrammarError
from runport.ports import PortError

__all__ = ["LawTests"]

TIMEOUT: Final = "TQX_RUNTIME_TIMEOUT"
STALL_CASE: Final = CASES_BY_NAME["stall_after_deltas"]
SENT_BACK: Final = "reasoning sent back"
TOOL_RESULT: Final = '{"temperature_c": 21}'


def next_turn(case: Case, receipt: ExecutionReceipt) -> ExecutionRequest:
    """The request of a tool run's next turn: the case's messages, the assistant turn the
    receipt describes (its reasoning included, to be sent back), and each call's result."""
    request = case.request()
    interaction = request.interaction
    assistant = Message(
        role="assistant",
        content=receipt.text or "",
        tool_calls=receipt.tool_calls,
        reasoning=receipt.reasoning,
    )
    results = [
        Message(role="tool", tool_call_id=call.call_id, content=TOOL_RESULT)
        for call in receipt.tool_calls or []
    ]
    messages = [*interaction.messages, assistant, *results]
    return request.model_copy(
        update={"interaction": interaction.model_copy(update={"messages": messages})}
    )


def _judge_ending(case: Case, outcome: Outcome, expected: list[Any]) -> None:
    """Law 9 on a stream that ends with its finish reason or its marker, not both."""
    truncated = "TQX_RUNTIME_STREAM_TRUNCATED"
    receipt = outcome.receipt
    error = outcome.error
    if case.ending == "finish_only":
        if receipt is None:
            broken(
                9,
                case.name,
                f"the upstream sent finish_reason {case.finish_reason!r}, then ended the body "
                "cleanly without [DONE], as servers that send none do: that is a whole answer, "
                "and the call should complete",
                outcome=outcome,
            )
    elif receipt is None and not (isinstance(error, PortError) and error.code == truncated):
        broken(
            9,
            case.name,
            "the upstream sent [DONE] with no finish_reason: the call should complete (with no "
            f"finish_reason) or, if the client cannot see [DONE], fail with {truncated}",
            outcome=outcome,
        )
    if receipt is not None:
        said = case.finish_reason
        if receipt.finish_reason != said or receipt.finish != case.expected_finish:
            broken(
                9,
                case.name,
                f"receipt.finish_reason is {receipt.finish_reason!r} and receipt.finish "
                f"{receipt.finish!r}; the upstream's finish_reason was {said!r}"
                + (" (it sent none: an adapter does not invent one)" if said is None else ""),
                outcome=outcome,
            )
        if receipt.text != case.answer():
            broken(
                9,
                case.name,
                f"receipt.text is {receipt.text!r}, the upstream answered {case.answer()!r}",
                outcome=outcome,
            )
    if outcome.progress != expected:
        broken(
            9,
            case.name,
            "the progress events differ from what the upstream sent",
            seen=outcome.progress,
            expected=expected,
        )


class LawTests(ConformanceBase):
    """The law items' standard tests (see ``RuntimeAdapterConformance``)."""

    def test_read_timeout_is_passed_on(self, conformance_harness: Harness) -> None:
        """Up front: a stalled upstream ends the call soon after ``upstream.read_timeout``.
        An adapter built without it fails here once, naming the keyword, and the stall
        cases skip instead of each waiting on the adapter's own timeout."""
        protocol = protocol_of(type(self))
        if protocol is None or protocol.in_process:
            pytest.skip("only an HTTP upstream can stall on the wire")
        h = conformance_harness
        upstream = h.upstream([STALL_CASE], pacing="off", strict=True)
        adapter = h.adapter(upstream)
        outcome = h.stream(adapter, upstream, STALL_CASE.request())  # fails on an outlived stall
        if not isinstance(outcome.error, PortError):
            broken(5, STALL_CASE.name, "a stalled call did not fail", outcome=outcome)

    @over(select_all)
    def test_law_1_grammar(self, case: Case, conformance_harness: Harness) -> None:
        """Progress events, then exactly one terminal matching how the call ended, then
        nothing."""
        outcome = self._played(conformance_harness, case).streamed
        problem = grammar_problem(outcome)
        if problem:
            broken(1, case.name, problem, seen=outcome.events, outcome=outcome)
        if case.fails and not outcome.error:
            broken(1, case.name, "a failing upstream ended in Complete", outcome=outcome)
        if not case.fails and outcome.error:
            broken(1, case.name, "a succeeding upstream ended in Failed", outcome=outcome)

    @over(select_succeeding)
    def test_law_2_same_result(self, case: Case, conformance_harness: Harness) -> None:
        """``Complete.receipt`` is the returned receipt, and ``execute`` and
        ``execute_streaming`` (two fresh adapters, same upstream content) agree."""
        h = conformance_harness
        upstream = h.upstream([case, case])
        plain_adapter, streaming_adapter = h.adapter(upstream), h.adapter(upstream)
        self._requires(case)
        request = case.request()
        plain = h.execute(plain_adapter, request, upstream=upstream)
        streamed = h.stream(streaming_adapter, upstream, request)
        for outcome, mode in ((plain, "execute"), (streamed, "execute_streaming")):
            if outcome.receipt is None or outcome.error is not None:
                broken(2, case.name, f"{mode} did not return a receipt", outcome=outcome)
        assert plain.receipt is not None
        assert streamed.receipt is not None
        terminal = streamed.events[-1] if streamed.events else None
        if not isinstance(terminal, Complete):
            broken(2, case.name, "the stream did not end in Complete", outcome=streamed)
        problems = diff(dump(terminal.receipt), dump(streamed.receipt))
        if problems:
            broken(
                2,
                case.name,
                "Complete.receipt differs from the receipt execute_streaming returned: "
                + "; ".join(problems),
            )
        problems = diff(dump(streamed.receipt), dump(plain.receipt))
        if problems:
            broken(
                2,
                case.name,
                "execute_streaming and execute returned different receipts "
                "(streamed vs plain): " + "; ".join(problems),
            )

    @over(select_succeeding)
    def test_law_3_assembly(self, case: Case, conformance_harness: Harness) -> None:
        """Joined deltas are the receipt's text; joined fragments per index are its tool
        calls' arguments, with the same name and call_id, in index order."""
        outcome = self._played(conformance_harness, case).streamed
        if not self.supports_streaming:
            pytest.skip("law 3: supports_streaming is false, so no progress is sent to assemble")
        if outcome.receipt is None:
            broken(3, case.name, "the call did not return a receipt", outcome=outcome)
        assembler = StreamAssembler()
        for index, event in enumerate(outcome.progress):
            try:
                assembler.feed(event)
            except StreamGrammarError as error:
                broken(3, case.name, f"event #{index}: {error}", seen=outcome.events)
        problems = assembler.assembly_problems(outcome.receipt)
        if problems:
            broken(
                3,
                case.name,
                "what was streamed is not what the receipt says: " + "; ".join(problems),
                seen=outcome.events,
                expected=[*case.progress(), "Complete"],
            )
        at, problem = index_problem(outcome.progress)
        if problem is not None:
            broken(3, case.name, f"event #{at}: {problem}", seen=outcome.events)
        answer = case.answer()
        if case.reasons and (assembler.text != answer or outcome.receipt.text != answer):
            broken(
                3,
                case.name,
                f"reasoning entered the answer: the joined Delta text is {assembler.text!r} and "
                f"receipt.text {outcome.receipt.text!r}, the upstream answered {answer!r} "
                "(reasoning goes in ReasoningDelta and receipt.reasoning only)",
                seen=outcome.events,
                expected=[*case.progress(), "Complete"],
            )

    @over(select_all)
    def test_law_4_order_and_promptness(self, case: Case, conformance_harness: Harness) -> None:
        """Progress events in upstream order, each delivered before the upstream sends the
        next frame (an HTTP upstream withholds it until the sink has seen the
        event; a scripted runtime has no frames to withhold, so only order is checked)."""
        h = conformance_harness
        upstream = h.upstream([case], pacing="every", strict=True)
        adapter = h.adapter(upstream)
        self._requires(case)
        outcome = h.stream(adapter, upstream, case.request())  # fails on a held-back frame
        if outcome.hung:
            broken(4, case.name, "the call never returned", outcome=outcome)
        if outcome.foreign_threads:
            broken(4, case.name, "the sink was called on a thread other than the caller's")
        expected = list(self._expected(case))
        seen = outcome.progress
        if isinstance(upstream, ScriptedUpstream) and upstream.requests:
            stalled = case.fault is not None and case.fault.kind == "stall"
            timed_out = isinstance(outcome.error, PortError) and outcome.error.code == TIMEOUT
            if timed_out and not stalled:
                broken(
                    4,
                    case.name,
                    "not prompt: the upstream withheld each next frame until the sink had seen "
                    "the previous frame's event, and the call timed out waiting — the adapter "
                    "waited for more input before delivering what it had (it buffers)",
                    seen=seen,
                    expected=expected,
                    outcome=outcome,
                )
        if case.prefix_only:
            if seen != expected[: len(seen)]:
                broken(
                    4,
                    case.name,
                    "the progress sent before the bound tripped is not a prefix of the upstream's",
                    seen=seen,
                    expected=expected,
                    outcome=outcome,
                )
        elif seen != expected:
            broken(
                4,
                case.name,
                "progress events differ from the upstream's, in content or order",
                seen=seen,
                expected=expected,
                outcome=outcome,
            )

    @over(select_failing)
    def test_law_5_failure_projection(self, case: Case, conformance_harness: Harness) -> None:
        """A failure sends one ``Failed`` whose code is the raised ``PortError``'s (and the
        code the upstream's fault maps to), with ``retry_after_ms`` carried, and keeps the
        deltas already sent."""
        assert case.fault is not None
        h = conformance_harness
        upstream = h.upstream([case])
        adapter = h.adapter(upstream)
        self._requires(case)
        outcome = h.stream(adapter, upstream, case.request())
        error = outcome.error
        if not isinstance(error, PortError):
            broken(5, case.name, "the call did not raise a PortError", outcome=outcome)
        failed = [event for event in outcome.events if isinstance(event, Failed)]
        if len(failed) != 1:
            broken(
                5,
                case.name,
                f"expected one Failed event, got {len(failed)}",
                seen=outcome.events,
                outcome=outcome,
            )
        want = str(case.fault.code)
        if failed[0].code != error.code:
            broken(
                5,
                case.name,
                f"Failed.code {failed[0].code} differs from the raised PortError's {error.code}",
            )
        if error.code != want:
            broken(5, case.name, f"the fault should map to {want}", outcome=outcome)
        if error.retry_after_ms != case.fault.retry_after_ms:
            broken(
                5,
                case.name,
                f"retry_after_ms is {error.retry_after_ms}, the upstream said "
                f"{case.fault.retry_after_ms}",
            )
        expected = list(self._expected(case))
        seen = outcome.progress
        if seen != (expected[: len(seen)] if case.prefix_only else expected):
            broken(
                5,
                case.name,
                "the progress sent before the failure is not what the upstream sent",
                seen=seen,
                expected=expected,
            )

    @over(select_all)
    def test_law_6_caller_stop(self, case: Case, conformance_harness: Harness) -> None:
        """The sink raises at each position in turn: that same exception comes back, nothing
        more is sent, the HTTP response is closed, and the adapter serves the next call."""
        h = conformance_harness
        probe, positions, upstream, adapter = stop_plan(self, 6, case, h)
        previous = None
        for position in positions:
            before = len(upstream.requests) if isinstance(upstream, ScriptedUpstream) else 0
            outcome = h.stream(adapter, upstream, case.request(), raise_at=position)
            where = f"the sink raised at event #{position} ({probe.events[position].kind})"
            if outcome.hung:
                broken(6, case.name, f"{where}; the call never returned")
            served_again(6, case, probe, outcome, where, previous)
            if outcome.error is not outcome.stop:
                chain = outcome.error
                wrapped = chain is not None and outcome.stop in (
                    chain.__cause__,
                    chain.__context__,
                )
                what = (
                    "it was wrapped in " + type(chain).__name__
                    if wrapped and chain is not None
                    else "the call " + outcome.ending()
                )
                broken(
                    6,
                    case.name,
                    f"{where}, but that exception did not propagate unchanged: {what}",
                )
            if outcome.after_stop:
                broken(
                    6,
                    case.name,
                    f"{where}; the adapter sent more after it",
                    seen=outcome.after_stop,
                    expected=[],
                )
            after_stop(
                6, case, h, upstream, adapter, before, where, resume=position == positions[-1]
            )
            previous = where

    @over(select_failing)
    def test_law_7_single_attempt(self, case: Case, conformance_harness: Harness) -> None:
        """One upstream request per call, streamed or not, whatever the failure (a
        ``scenario`` adapter that retried would have consumed the next turn). A composite
        (capability ``composite``) may try another member instead, under the composite rules
        (``check_composite``)."""
        h = conformance_harness
        sentinel = sentinel_case()
        upstream = h.upstream([case, sentinel, case, sentinel])
        adapter = h.adapter(upstream)
        self._requires(case)
        if self.is_composite:
            check_composite(self, case, h, upstream, adapter)
            return
        request = case.request()
        for mode in ("execute_streaming", "execute"):
            if mode == "execute":
                outcome = h.execute(adapter, request, upstream=upstream)
            else:
                outcome = h.stream(adapter, upstream, request)
            if isinstance(upstream, ScriptedUpstream):
                made = len(outcome.requests)
                if made != 1:
                    broken(7, case.name, f"{mode} made {made} upstream requests", outcome=outcome)
            if not isinstance(outcome.error, PortError):
                broken(7, case.name, f"{mode} did not fail with a PortError", outcome=outcome)
            after = h.execute(adapter, sentinel.request(), upstream=upstream)
            if after.receipt is None or after.receipt.text != "sentinel":
                broken(
                    7,
                    case.name,
                    f"after {mode}, the next call did not get the next scripted turn: the "
                    "adapter made more than one attempt",
                    outcome=after,
                )

    @over(lambda case: case.prefix_only)
    def test_law_8_bounds(self, case: Case, conformance_harness: Harness) -> None:
        """Past the request's ``max_response_bytes`` the call fails with
        ``TQX_RUNTIME_RESPONSE_TOO_LARGE`` (streamed and not) and the upstream is closed. An
        unstreamed body is counted as it is read: the upstream sends twice the bound, then
        holds the rest until the client closes (a client that buffers the whole body first,
        as an SDK does, waits for it)."""
        h = conformance_harness
        upstream = h.upstream([case, case], pacing="every")
        adapter = h.adapter(upstream)
        self._requires(case)
        want = "TQX_RUNTIME_RESPONSE_TOO_LARGE"
        streamed = h.stream(adapter, upstream, case.request())
        plain = h.execute(adapter, case.request(), upstream=upstream)
        for outcome, mode in ((streamed, "execute_streaming"), (plain, "execute")):
            if not isinstance(outcome.error, PortError) or outcome.error.code != want:
                broken(8, case.name, f"{mode} should fail with {want}", outcome=outcome)
        terminal = streamed.terminals[-1] if streamed.terminals else None
        if not isinstance(terminal, Failed) or terminal.code != want:
            broken(8, case.name, f"the stream should end in Failed({want})", outcome=streamed)
        if isinstance(upstream, ScriptedUpstream):
            record = upstream.requests[0].settle()
            if record.ended_early and record.client_closed is False:
                broken(8, case.name, "the adapter failed but left the connection open")
            unstreamed = [r for r in plain.requests if not r.stream]
            if unstreamed and unstreamed[0].settle().read_on is not None:
                broken(
                    8,
                    case.name,
                    f"execute read past max_response_bytes ({case.max_response_bytes}) without "
                    f"stopping: {unstreamed[0].read_on}",
                    outcome=plain,
                )

    @over(
        lambda case: (
            case.ending is not None or (case.fault is not None and case.fault.kind == "eof")
        ),
        catalogue=(*CASES, *ENDINGS),
    )
    def test_law_9_truncation(self, case: Case, conformance_harness: Harness) -> None:
        """A stream that ends without the protocol's completion marker fails with
        ``TQX_RUNTIME_STREAM_TRUNCATED`` — never a short ``Complete``. Where the finish
        reason and the marker are apart (chat completions' ``finish_reason`` and
        ``[DONE]``), a stream with only one of them is judged by what every client can see,
        the finish reason: after one, a clean end is a whole answer; a ``[DONE]`` without one
        is whole with no finish reason, or truncated to a client that cannot see ``[DONE]``
        (an SDK swallows it) — never given a finish reason the upstream did not send."""
        if case.ending is None:  # an eof case: law 1 played it already
            outcome = self._played(conformance_harness, case).streamed
        else:  # played by this law alone, streamed only
            h = conformance_harness
            upstream = h.upstream([case])
            adapter = h.adapter(upstream)
            self._requires(case)
            outcome = h.stream(adapter, upstream, case.request())
        want = "TQX_RUNTIME_STREAM_TRUNCATED"
        if case.ending is not None:
            _judge_ending(case, outcome, list(self._expected(case)))
            return
        if outcome.receipt is not None or any(
            isinstance(event, Complete) for event in outcome.events
        ):
            broken(9, case.name, "a truncated stream was passed off as complete", outcome=outcome)
        if not isinstance(outcome.error, PortError) or outcome.error.code != want:
            broken(9, case.name, f"the call should fail with {want}", outcome=outcome)
        if outcome.progress != list(self._expected(case)):
            broken(
                9,
                case.name,
                "the deltas received before the truncation were not all delivered",
                seen=outcome.progress,
                expected=self._expected(case),
            )

    @over(select_all)
    def test_law_10_no_secrets(self, case: Case, conformance_harness: Harness) -> None:
        """The planted API key, and what the upstream planted in its error bodies beyond the
        provider's own message, appear in no event, receipt, log record or exception as
        Python reports it, streamed or not (docs/upstream-safety.md: the message may)."""
        upstream, played = self._both_ways(conformance_harness, case)
        opaque = opaque_values(case)
        for mode, outcome in played:
            found = leaks(outcome, upstream.secrets)
            if opaque:
                found += opaque_leaks(outcome, opaque)
            if found:
                broken(10, case.name, f"{mode}: " + "; ".join(found))

    @over(lambda case: case.name == "reasoning_then_tool_call")
    def test_reasoning_sent_back(self, case: Case, conformance_harness: Harness) -> None:
        """A tool run's next turn sends the reasoning back: turn 1 is reasoning and a tool
        call, turn 2 carries ``Message.reasoning`` with the call and its result. A protocol
        that enforces it (``WireProtocol.sent_back``; ``anthropic-messages``: the thinking
        blocks, in order, signatures intact) answers turn 2 with the API's own refusal
        unless the reasoning came back."""
        protocol = protocol_of(type(self))
        kept = None if protocol is None else protocol.sent_back(case)
        if kept is None:
            name = "protocol None" if protocol is None else f"protocol {protocol.name!r}"
            pytest.skip(f"{name} does not enforce what is sent back of the reasoning")
        h = conformance_harness
        follow = follow_up_case(case, kept)
        upstream = h.upstream([case, follow, case, follow])
        adapter = h.adapter(upstream)
        self._requires(case)
        for mode in ("execute_streaming", "execute"):
            turns: list[Outcome] = []
            for request in (case.request(), None):
                if request is None:
                    receipt = turns[0].receipt
                    assert receipt is not None
                    request = next_turn(case, receipt)
                if mode == "execute":
                    outcome = h.execute(adapter, request, upstream=upstream)
                else:
                    outcome = h.stream(adapter, upstream, request)
                turns.append(outcome)
                if outcome.receipt is not None:
                    continue
                refusal = None
                if isinstance(upstream, ScriptedUpstream) and upstream.requests:
                    refusal = upstream.requests[-1].refusal
                which = "the first turn" if len(turns) == 1 else "the turn sending it back"
                why = "" if refusal is None else f": the upstream answered the API's 400: {refusal}"
                broken(SENT_BACK, case.name, f"{mode}: {which} failed{why}", outcome=outcome)
            receipt = turns[1].receipt
            assert receipt is not None
            if receipt.text != follow.answer():
                broken(
                    SENT_BACK,
                    case.name,
                    f"{mode}: the second turn answered {receipt.text!r}, the upstream "
                    f"{follow.answer()!r}",
                    outcome=turns[1],
                )
