"""The black box: the standard tests for ``protocol = None``, run on ``sample_requests()``
with nothing scripted — the law per sample, a caller stop, that some sample is answered (an
adapter whose every call fails keeps the rest vacuously), and that a long answer comes in more
than one ``Delta`` (judged by count, never by the clock). What it cannot check (truncation,
bounds, faults, a held-back frame) needs a protocol, and the report lists it as not checked."""

from __future__ import annotations

from typing import Final

import pytest

from runport.conformance._cases import independent_fingerprint, independent_request_fingerprint
from runport.conformance._checks import EVENT_ADAPTER, diff, dump, grammar_problem, validity
from runport.conformance._harness import Harness
from runport.conformance._observe import broken
from runport.conformance._receipt_tests import ReceiptTests
from runport.contracts import Complete, Delta, ExecutionRequest, Failed
from runport.core import StreamAssembler
from runport.ports import PortError

__all__ = ["LONG_ANSWER", "BlackBoxTests"]

LONG_ANSWER: Final = 200
"""Characters: a sample answer at least this long, streamed by an adapter that declares
``streaming``, must come in more than one ``Delta`` (the black box's promptness check)."""


class BlackBoxTests(ReceiptTests):
    """The black-box group (see ``RuntimeAdapterConformance``)."""

    def test_black_box_streaming_law(
        self, sample: ExecutionRequest, conformance_harness: Harness
    ) -> None:
        """On a sample request: grammar, Complete is the returned receipt or Failed carries
        the raised code, assembly, fingerprints, schema validity, JSON round trip."""
        h = conformance_harness
        upstream = h.upstream()
        adapter = h.adapter(upstream)
        outcome = h.stream(adapter, upstream, sample)
        name = sample.interaction.contract_id
        problem = grammar_problem(outcome)
        if problem:
            broken(1, name, problem, seen=outcome.events, outcome=outcome)
        terminal = outcome.terminals[0]
        if isinstance(terminal, Failed):
            assert isinstance(outcome.error, PortError)
            if terminal.code != outcome.error.code:
                broken(5, name, f"Failed.code {terminal.code} != raised {outcome.error.code}")
            return
        receipt = outcome.receipt
        assert receipt is not None
        assert isinstance(terminal, Complete)
        problems = diff(dump(terminal.receipt), dump(receipt))
        if problems:
            broken(
                2, name, "Complete.receipt differs from the returned one: " + "; ".join(problems)
            )
        if self.supports_streaming:
            assembler = StreamAssembler()
            for event in outcome.progress:
                assembler.feed(event)
            problems = assembler.assembly_problems(receipt)
            if problems:
                broken(3, name, "; ".join(problems), seen=outcome.events)
        if receipt.request_fingerprint != independent_request_fingerprint(
            sample.interaction.model_dump(mode="json")
        ) or receipt.output_fingerprint != independent_fingerprint(receipt.output):
            broken("fingerprints", name, "a fingerprint differs from the recomputed one")
        want = validity(receipt, dict(sample.interaction.output_schema))
        if receipt.output_schema_valid != want:
            broken("schema validity", name, f"output_schema_valid should be {want}")
        for event in outcome.events:
            if EVENT_ADAPTER.validate_json(event.model_dump_json()) != event:
                broken("JSON round-trip", name, f"{event.kind} does not read back equal")

    def test_black_box_caller_stop(
        self, sample: ExecutionRequest, conformance_harness: Harness
    ) -> None:
        """The sink raises on the first event: the same exception, nothing more, and the
        adapter's next call still ends in a terminal event."""
        h = conformance_harness
        upstream = h.upstream()
        adapter = h.adapter(upstream)
        name = sample.interaction.contract_id
        outcome = h.stream(adapter, upstream, sample, raise_at=0)
        if outcome.stop is None or outcome.error is not outcome.stop or outcome.after_stop:
            broken(6, name, "the sink's exception was not honoured", outcome=outcome)
        again = h.stream(adapter, upstream, sample)
        problem = grammar_problem(again)
        if problem:
            broken(6, name, f"the next call: {problem}", outcome=again)

    def test_black_box_answers(self, conformance_harness: Harness) -> None:
        """At least one sample request is answered: an adapter whose every call fails keeps
        every other black-box check vacuously, so that is a failure, not a pass."""
        samples = self._black_box_samples()
        h = conformance_harness
        upstream = h.upstream()
        adapter = h.adapter(upstream)
        codes: list[str] = []
        for sample in samples:
            outcome = h.stream(adapter, upstream, sample)
            if outcome.receipt is not None:
                return
            codes.append(outcome.ending())
        broken(
            "black box",
            "sample_*",
            f"every one of the {len(samples)} sample request(s) failed ({'; '.join(codes)}): "
            "the black box checked no receipt, no assembly and no Complete — give "
            "sample_requests() the adapter answers, or set the protocol it speaks",
        )

    def test_black_box_incremental(self, conformance_harness: Harness) -> None:
        """A long sample answer (``LONG_ANSWER`` characters or more) from an adapter that
        declares ``streaming`` comes in more than one ``Delta``. Judged by count, never by
        clock: a buffer that replays its deltas at the end looks like a stream to a black
        box, and only a protocol's paced upstream (law 4) tells them apart."""
        samples = self._black_box_samples()
        h = conformance_harness
        upstream = h.upstream()
        adapter = h.adapter(upstream)
        if not self.supports_streaming:
            pytest.skip("supports_streaming is false: no deltas are owed")
        longest = 0
        for sample in samples:
            outcome = h.stream(adapter, upstream, sample)
            text = outcome.receipt.text if outcome.receipt is not None else None
            if text is None or len(text) < LONG_ANSWER:
                longest = max(longest, len(text or ""))
                continue
            deltas = [event for event in outcome.progress if isinstance(event, Delta)]
            if len(deltas) < 2:
                broken(
                    4,
                    sample.interaction.contract_id,
                    f"not incremental: an answer of {len(text)} characters came in "
                    f"{len(deltas)} Delta — the adapter held the text back until the end "
                    "(it buffers)",
                    seen=outcome.events,
                    outcome=outcome,
                )
            return
        pytest.skip(
            f"no sample answer was {LONG_ANSWER} characters or more (the longest: {longest}), "
            "so whether deltas come incrementally was not checked: add a sample with a long "
            "answer"
        )
