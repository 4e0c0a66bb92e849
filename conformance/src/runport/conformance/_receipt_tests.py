"""The standard tests on what a turn leaves behind and on the adapter itself, beside the law
items: every receipt field and both fingerprints recomputed, schema validity, the events' JSON
shapes, the descriptor, eight threads on one adapter, reuse after a caller stop, and generated
turns (hypothesis)."""

from __future__ import annotations

import json
import threading
from typing import Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from runport.conformance._base import over, select_all, select_succeeding
from runport.conformance._cases import (
    RESUME_CASE,
    Case,
    Text,
    independent_fingerprint,
    independent_request_fingerprint,
    thread_cases,
)
from runport.conformance._checks import (
    EVENT_ADAPTER,
    EVENT_KEYS,
    EVENT_REQUIRED_KEYS,
    clip,
    diff,
    dump,
    grammar_problem,
    opaque_values,
    receipt_problems,
    validity,
)
from runport.conformance._harness import Harness, protocol_of
from runport.conformance._law_tests import LawTests
from runport.conformance._observe import Outcome, broken
from runport.conformance._strategies import generated_case
from runport.conformance._turn_end_tests import TurnEndTests
from runport.conformance._wire_protocol import WireProtocol
from runport.contracts import (
    AdapterDescriptor,
    Delta,
)

__all__ = ["ReceiptTests"]

THREADS: Final = 8


class ReceiptTests(TurnEndTests, LawTests):
    """Receipts, event shapes, descriptor, threads, reuse, generated turns, and how a turn
    ended and what it cost (``TurnEndTests``; see ``RuntimeAdapterConformance``)."""

    # -- receipts, descriptor, wire -------------------------------------------------------------

    @over(select_succeeding)
    def test_receipt_matches_case(self, case: Case, conformance_harness: Harness) -> None:
        """The request the adapter sent carries the case's tools, its ask for structured
        output and the conversation so far (``WireProtocol.request_problems``), and every
        receipt field (text, tool calls, output, validity, finish reason, usage,
        fingerprints) equals what the script implies, streamed and not; reasoning parts have
        the played texts, and their ``provider_metadata`` what the protocol needs back (a
        block's signature or redacted data), whatever else it holds."""
        upstream, played = self._both_ways(conformance_harness, case)
        expected = case.expected_receipt()
        wire = getattr(upstream, "wire", None)
        for mode, outcome in played:
            records = [record for record in outcome.requests if record.wire is not None]
            if isinstance(wire, WireProtocol) and records:
                sent = wire.request_problems(records[0].wire, case.request())
                if sent:
                    broken("request", case.name, f"{mode}: " + "; ".join(sent))
            if outcome.receipt is None:
                broken("receipt", case.name, f"{mode} returned no receipt", outcome=outcome)
            seen = dump(outcome.receipt)
            seen.pop("adapter")
            problems = receipt_problems(seen, expected, opaque_values(case))
            if problems:
                broken("receipt", case.name, f"{mode}: " + "; ".join(problems))

    @over(select_succeeding)
    def test_fingerprints_recomputed(self, case: Case, conformance_harness: Harness) -> None:
        """Both fingerprints equal SHA-256 of canonical JSON, recomputed by the suite."""
        _, played = self._both_ways(conformance_harness, case)
        request = case.request()
        for mode, outcome in played:
            receipt = outcome.receipt
            if receipt is None:
                broken("fingerprints", case.name, f"{mode} returned no receipt", outcome=outcome)
            interaction = independent_request_fingerprint(
                request.interaction.model_dump(mode="json")
            )
            if receipt.request_fingerprint != interaction:
                broken(
                    "fingerprints",
                    case.name,
                    f"{mode}: request_fingerprint {receipt.request_fingerprint} != {interaction}",
                )
            output = independent_fingerprint(receipt.output)
            if receipt.output_fingerprint != output:
                broken(
                    "fingerprints",
                    case.name,
                    f"{mode}: output_fingerprint {receipt.output_fingerprint} != {output}",
                )

    @over(select_succeeding)
    def test_schema_validity_recomputed(self, case: Case, conformance_harness: Harness) -> None:
        """``output_schema_valid`` equals the suite's own validation of the receipt's output
        (``null`` on a turn with tool calls)."""
        _, played = self._both_ways(conformance_harness, case)
        request = case.request()
        schema = dict(request.interaction.output_schema)
        for mode, outcome in played:
            receipt = outcome.receipt
            if receipt is None:
                broken("schema validity", case.name, f"{mode} returned no receipt", outcome=outcome)
            want = validity(receipt, schema)
            if receipt.output_schema_valid != want:
                broken(
                    "schema validity",
                    case.name,
                    f"{mode}: output_schema_valid is {receipt.output_schema_valid}, the output "
                    f"{clip(receipt.output)} makes it {want}",
                )

    @over(select_all)
    def test_events_json_round_trip(self, case: Case, conformance_harness: Harness) -> None:
        """Every event serializes to exactly its documented keys and reads back equal."""
        outcome = self._played(conformance_harness, case).streamed
        for index, event in enumerate(outcome.events):
            name = f"event #{index} ({getattr(event, 'kind', type(event).__name__)})"
            try:
                dumped = event.model_dump_json()
                back = EVENT_ADAPTER.validate_json(dumped)
            except (AttributeError, ValidationError, ValueError) as error:
                broken("JSON round-trip", case.name, f"{name} does not round-trip: {error}")
            if back != event:
                broken("JSON round-trip", case.name, f"{name} reads back different: {dumped}")
            keys = set(json.loads(dumped))
            if not EVENT_REQUIRED_KEYS[event.kind] <= keys <= EVENT_KEYS[event.kind]:
                broken(
                    "JSON round-trip",
                    case.name,
                    f"{name} serializes keys {sorted(keys)}, "
                    f"expected {sorted(EVENT_KEYS[event.kind])}",
                )

    def test_descriptor_is_valid(self, conformance_harness: Harness) -> None:
        """``descriptor()`` is a valid, stable ``AdapterDescriptor`` with unique capabilities."""
        if protocol_of(type(self)) is None and not list(self.sample_requests()):
            pytest.skip("protocol is None and sample_requests() gave no request")
        h = conformance_harness
        adapter = h.adapter(h.upstream([RESUME_CASE]))
        first, second = adapter.descriptor(), adapter.descriptor()
        if not isinstance(first, AdapterDescriptor):
            pytest.fail(
                f"descriptor() returned a {type(first).__name__}, not an AdapterDescriptor",
                pytrace=False,
            )
        try:
            again = AdapterDescriptor.model_validate_json(first.model_dump_json())
        except ValidationError as error:
            pytest.fail(f"the descriptor does not validate: {error}", pytrace=False)
        capabilities = first.capabilities
        problems = []
        if again != first or second != first:
            problems.append("descriptor() is not stable across calls and JSON")
        if len(set(capabilities)) != len(capabilities):
            problems.append(f"capabilities repeat: {capabilities}")
        if any(not item or item != item.strip() for item in capabilities):
            problems.append(f"capabilities must be non-empty, unpadded names: {capabilities}")
        if problems:
            pytest.fail("descriptor: " + "; ".join(problems), pytrace=False)

    # -- threads and reuse ----------------------------------------------------------------------

    def test_thread_safety_smoke(self, conformance_harness: Harness) -> None:
        """One adapter, eight threads, each streaming its own turn at once: every call keeps
        the law and every turn is played exactly once."""
        self._skip_without_protocol()
        h = conformance_harness
        cases = thread_cases(THREADS)
        upstream = h.upstream(cases, shared=True)
        adapter = h.adapter(upstream)
        barrier = threading.Barrier(THREADS)
        outcomes: list[Outcome | None] = [None] * THREADS

        def worker(number: int) -> None:
            barrier.wait(timeout=30)
            outcomes[number] = h.stream(adapter, upstream, cases[number].request())

        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        texts = []
        for number, outcome in enumerate(outcomes):
            name = f"thread {number}"
            if outcome is None:
                broken("thread safety", name, "the thread did not finish")
            problem = grammar_problem(outcome)
            if problem or outcome.receipt is None:
                broken(
                    "thread safety",
                    name,
                    problem or "no receipt",
                    seen=outcome.events,
                    outcome=outcome,
                )
            request = cases[number].request()
            if outcome.receipt.request_fingerprint != independent_request_fingerprint(
                request.interaction.model_dump(mode="json")
            ):
                broken("thread safety", name, "the receipt answers another thread's request")
            if self.supports_streaming:
                joined = "".join(e.text for e in outcome.progress if isinstance(e, Delta))
                if joined != outcome.receipt.text:
                    broken(
                        "thread safety",
                        name,
                        f"streamed {joined!r} but the receipt says {outcome.receipt.text!r}",
                        seen=outcome.events,
                    )
            texts.append(outcome.receipt.text)
        wanted = sorted("".join(s.text for s in c.steps if isinstance(s, Text)) for c in cases)
        if sorted(str(text) for text in texts) != wanted:
            broken(
                "thread safety",
                "thread_*",
                f"the eight calls played {sorted(map(str, texts))}, expected each of {wanted} once",
            )

    def test_usable_after_caller_stop(self, conformance_harness: Harness) -> None:
        """After the sink raised on the first event, the same adapter serves a streamed and a
        non-streamed call normally."""
        self._skip_without_protocol()
        h = conformance_harness
        upstream = h.upstream([RESUME_CASE, RESUME_CASE, RESUME_CASE], pacing="every")
        adapter = h.adapter(upstream)
        request = RESUME_CASE.request()
        stopped = h.stream(adapter, upstream, request, raise_at=0)
        if stopped.error is not stopped.stop or stopped.stop is None:
            broken(6, RESUME_CASE.name, "the sink's exception did not propagate", outcome=stopped)
        for mode, outcome in (
            ("execute", h.execute(adapter, request, upstream=upstream)),
            ("execute_streaming", h.stream(adapter, upstream, request)),
        ):
            if outcome.receipt is None or outcome.receipt.text != "Hello, world.":
                broken(
                    6,
                    RESUME_CASE.name,
                    f"after a caller stop, {mode} on the same adapter failed",
                    outcome=outcome,
                )

    # -- generated cases ------------------------------------------------------------------------

    @settings(
        max_examples=15,
        deadline=None,
        derandomize=True,
        database=None,
        # One base-class test runs on many subclasses by design; derandomized and with no
        # database, each run is reproducible, so differing executors are harmless.
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.differing_executors,
        ],
    )
    @given(data=st.data())
    def test_generated_fragmentations(
        self, conformance_harness: Harness, data: st.DataObject
    ) -> None:
        """Laws 1–4 on generated turns: any fragmentation of text and arguments, any
        interleaving of up to three calls, streamed and not, exact events and receipt."""
        self._skip_without_protocol()
        h = conformance_harness
        if self._runport_capabilities is None:
            h.adapter(h.upstream([RESUME_CASE]))
        case = data.draw(generated_case(tools=self.supports_tool_calls), label="case")
        protocol = protocol_of(type(self))
        assert protocol is not None
        case = protocol.played(case)
        upstream = h.upstream([case, case])
        plain_adapter, streaming_adapter = h.adapter(upstream), h.adapter(upstream)
        request = case.request()
        plain = h.execute(plain_adapter, request, upstream=upstream)
        streamed = h.stream(streaming_adapter, upstream, request)
        problem = grammar_problem(streamed)
        if problem:
            broken(1, case.name, problem, seen=streamed.events, outcome=streamed)
        expected = list(self._expected(case))
        if streamed.progress != expected:
            broken(4, case.name, "progress differs", seen=streamed.progress, expected=expected)
        if streamed.receipt is None or plain.receipt is None:
            broken(2, case.name, "a call returned no receipt", outcome=plain)
        problems = diff(dump(streamed.receipt), dump(plain.receipt))
        if problems:
            broken(2, case.name, "streamed vs plain: " + "; ".join(problems))
        seen = dump(streamed.receipt)
        seen.pop("adapter")
        problems = diff(seen, case.expected_receipt())
        if problems:
            broken(3, case.name, "receipt vs script: " + "; ".join(problems))
