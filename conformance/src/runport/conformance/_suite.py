"""``RuntimeAdapterConformance``: the standard tests every runport adapter runs
(docs/streaming-law.md, docs/adapter-guide.md).

An adapter author subclasses it in a ``Test…`` class, sets ``protocol`` and implements
``make_adapter(upstream)``; pytest collects the inherited ``test_*`` methods, parametrized over
the case catalogue (``pytest_generate_tests`` on the class — no plugin needed, so the suite
works wherever the class is imported). Each test builds its own upstream with the plan of
turns it needs, makes fresh adapters, and checks one law item; failures name the item, the case
and the event sequences.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Final, Literal, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from runport.conformance._cases import (
    CASES,
    RESUME_CASE,
    Call,
    Case,
    Progress,
    Text,
    independent_fingerprint,
    schema_accepts,
    sentinel_case,
    thread_cases,
)
from runport.conformance._observe import (
    Outcome,
    Recorder,
    broken,
    observe,
)
from runport.conformance._upstream import (
    BlackBoxUpstream,
    ConformanceUsageError,
    Pacing,
    ScenarioUpstream,
    ScriptedUpstream,
    Upstream,
)
from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
    ToolCallDelta,
)
from runport.core import StreamAssembler, StreamGrammarError
from runport.ports import PortError, RuntimeAdapter

__all__ = ["Harness", "RuntimeAdapterConformance"]

Protocol = Literal["scenario", "openai-chat"] | None
PROTOCOLS: Final = ("scenario", "openai-chat", None)

THREADS: Final = 8
TIMEOUT: Final = "TQX_RUNTIME_TIMEOUT"
_EVENT_ADAPTER: Final[TypeAdapter[StreamEvent]] = TypeAdapter(StreamEvent)
_KEYS: Final = {
    "Delta": {"kind", "text"},
    "ToolCallDelta": {"kind", "index", "call_id", "name", "arguments_fragment"},
    "Complete": {"kind", "receipt"},
    "Failed": {"kind", "code", "message"},
}
_FLAGS: Final = {
    "streaming": "supports_streaming",
    "tool_calls": "supports_tool_calls",
    "structured_output": "supports_structured_output",
}

F = TypeVar("F", bound=Callable[..., Any])


def _over(select: Callable[[Case], bool]) -> Callable[[F], F]:
    """Parametrize a standard test over the catalogue's cases that ``select`` keeps."""

    def mark(function: F) -> F:
        function.__runport_cases__ = select  # type: ignore[attr-defined]
        return function

    return mark


def _all(case: Case) -> bool:
    return True


def _succeeds(case: Case) -> bool:
    return not case.fails


def _fails(case: Case) -> bool:
    return case.fails


def _protocol_of(cls: type) -> Protocol:
    if "protocol" not in {name for klass in cls.__mro__ for name in vars(klass)}:
        raise ConformanceUsageError(
            f"{cls.__name__} must set protocol = 'scenario', 'openai-chat' or None"
        )
    protocol = getattr(cls, "protocol", None)
    if protocol not in PROTOCOLS:
        raise ConformanceUsageError(
            f"{cls.__name__}.protocol is {protocol!r}; expected 'scenario', 'openai-chat' or None"
        )
    return protocol


def _diff(seen: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    problems = []
    for key in sorted(set(seen) | set(expected)):
        one, other = seen.get(key, "<absent>"), expected.get(key, "<absent>")
        if json.dumps(one, sort_keys=True) != json.dumps(other, sort_keys=True):
            problems.append(f"{key}: {_clip(one)} != expected {_clip(other)}")
    return problems


def _clip(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _dump(receipt: ExecutionReceipt) -> dict[str, Any]:
    return receipt.model_dump(mode="json")


def _grammar_problem(outcome: Outcome) -> str | None:
    """Why the events of one call break law 1 (or the port's calling rules), if they do."""
    if outcome.hung:
        return outcome.ending()
    if outcome.foreign_threads:
        return "the sink was called on a thread other than the caller's (the port is synchronous)"
    assembler = StreamAssembler()
    for index, event in enumerate(outcome.events):
        if not isinstance(event, Delta | ToolCallDelta | Complete | Failed):
            return f"event #{index} is a {type(event).__name__}, not a StreamEvent"
        try:
            assembler.feed(event)
        except StreamGrammarError as error:
            return f"event #{index}: {error}"
    terminal = assembler.terminal
    if terminal is None:
        return "no terminal event (Complete or Failed) was sent"
    if outcome.error is None and not isinstance(terminal, Complete):
        return "the call returned a receipt but its terminal event is Failed"
    if isinstance(outcome.error, PortError) and not isinstance(terminal, Failed):
        return "the call raised a PortError but its terminal event is Complete"
    if outcome.unexpected() is not None:
        return "the call raised an exception that is not a PortError"
    return None


def _validity(receipt: ExecutionReceipt, schema: dict[str, Any]) -> bool | None:
    """``output_schema_valid`` recomputed from the receipt itself (docs/wire-types.md)."""
    if receipt.tool_calls:
        return None
    if schema.get("type") != "string" and receipt.text is not None:
        try:
            json.loads(receipt.text)
        except ValueError:
            return False
    return schema_accepts(schema, receipt.output)


def _leaks(outcome: Outcome, secrets: Sequence[str]) -> list[str]:
    """Where a planted secret shows up in what the caller can see (law 10)."""
    places: list[tuple[str, str]] = []
    for index, event in enumerate([*outcome.events, *outcome.after_stop]):
        places.append((f"event #{index} ({event.kind})", event.model_dump_json()))
    if outcome.receipt is not None:
        places.append(("the returned receipt", outcome.receipt.model_dump_json()))
    error: BaseException | None = outcome.error
    depth = 0
    while error is not None and depth < 8:
        where = "the raised exception" if depth == 0 else f"its cause/context #{depth}"
        texts = [str(error), repr(error), *(repr(arg) for arg in error.args)]
        texts += [str(getattr(error, name, "")) for name in ("message", "detail")]
        places.append((where, "\n".join(texts)))
        error = error.__cause__ or error.__context__
        depth += 1
    for index, line in enumerate(outcome.logs):
        places.append((f"log record #{index}", line))
    found = []
    for secret, label in zip(
        secrets, ("the API key", "the provider's response body"), strict=False
    ):
        found += [f"{label} appears in {where}" for where, text in places if secret in text]
    return found


class Harness:
    """One test's upstreams and adapters; closes every upstream when the test ends."""

    def __init__(self, suite: RuntimeAdapterConformance) -> None:
        self.suite = suite
        self.protocol = _protocol_of(type(suite))
        self._upstreams: list[Upstream] = []
        self._adapters: list[RuntimeAdapter] = []

    def upstream(self, plan: Sequence[Case] = (), *, pacing: Pacing = "last") -> Upstream:
        """A fresh upstream that plays ``plan``, one case per adapter call, in order."""
        upstream: Upstream
        if self.protocol == "scenario":
            upstream = ScenarioUpstream(plan)
        elif self.protocol == "openai-chat":
            upstream = ScriptedUpstream(plan, pacing=pacing)
        else:
            upstream = BlackBoxUpstream()
        self._upstreams.append(upstream)
        return upstream

    def adapter(self, upstream: Upstream) -> RuntimeAdapter:
        adapter = self.suite.make_adapter(upstream)
        if not isinstance(adapter, RuntimeAdapter):
            pytest.fail(
                f"make_adapter returned a {type(adapter).__name__}; it must return a "
                "runport.ports.RuntimeAdapter",
                pytrace=False,
            )
        self._adapters.append(adapter)
        if self.suite._runport_capabilities is None:
            try:
                capabilities = frozenset(adapter.descriptor().capabilities)
            except Exception:  # the descriptor test reports it; the flags just see nothing
                capabilities = frozenset()
            self.suite._runport_capabilities = capabilities
        return adapter

    def stream(
        self,
        adapter: RuntimeAdapter,
        upstream: Upstream,
        request: ExecutionRequest,
        *,
        raise_at: int | None = None,
        capture_logs: bool = False,
    ) -> Outcome:
        pacer = None
        if isinstance(upstream, ScriptedUpstream) and upstream.pacing != "off":
            pacer = upstream.pacer

        def call(sink: Recorder | None) -> ExecutionReceipt:
            assert sink is not None
            return adapter.execute_streaming(request, sink)

        return observe(
            call, streamed=True, pacer=pacer, raise_at=raise_at, capture_logs=capture_logs
        )

    def execute(
        self, adapter: RuntimeAdapter, request: ExecutionRequest, *, capture_logs: bool = False
    ) -> Outcome:
        return observe(
            lambda _: adapter.execute(request), streamed=False, capture_logs=capture_logs
        )

    def close(self) -> None:
        """Close the test's adapters (those with a ``close()``), then its upstreams."""
        for adapter in self._adapters:
            closer = getattr(adapter, "close", None)
            if callable(closer):
                closer()
        for upstream in self._upstreams:
            upstream.close()


class RuntimeAdapterConformance:
    """The conformance suite: subclass it as ``Test…``, set ``protocol``, implement
    ``make_adapter``.

    ``protocol`` is ``"scenario"`` (the adapter plays ``upstream.scenario``, a
    ``runport.core.Scenario``), ``"openai-chat"`` (the adapter talks to ``upstream.base_url``, a
    loopback chat-completions server) or ``None`` (black-box checks over ``sample_requests()``).
    Pass ``upstream.read_timeout`` and ``upstream.api_key`` on. ``make_adapter`` may be called
    several times in one test; each call must return a fresh adapter. An adapter with a
    ``close()`` method is closed when its test ends.

    The capability flags (``supports_streaming``, ``supports_tool_calls``,
    ``supports_structured_output``) follow the adapter's ``descriptor().capabilities``; override
    one to switch a group off, and the tests it skips say so. A standard test may be overridden
    only with ``@pytest.mark.xfail(reason=…)`` — ``test_standard_tests_not_overridden`` fails
    otherwise, so a weakened check never passes silently.
    """

    __runport_conformance__: ClassVar[bool] = True
    _runport_capabilities: frozenset[str] | None = None

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        """A fresh adapter wired to ``upstream`` (see the class docstring)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_adapter(upstream)")

    def sample_requests(self) -> Sequence[ExecutionRequest]:
        """Requests for the black-box group (``protocol = None``); none by default."""
        return ()

    # -- capability flags ---------------------------------------------------------------------

    def _declared(self) -> frozenset[str]:
        if self._runport_capabilities is None:
            raise ConformanceUsageError(
                "the capability flags follow the adapter's descriptor, so they are known only "
                "once the test has made an adapter"
            )
        return self._runport_capabilities

    @property
    def supports_streaming(self) -> bool:
        """Whether progress events are expected (else only the terminal event)."""
        return "streaming" in self._declared()

    @property
    def supports_tool_calls(self) -> bool:
        return "tool_calls" in self._declared()

    @property
    def supports_structured_output(self) -> bool:
        return "structured_output" in self._declared()

    def _requires(self, case: Case) -> None:
        missing = [need for need in sorted(case.needs) if not getattr(self, _FLAGS[need])]
        if missing:
            pytest.skip(
                f"case {case.name!r} needs {', '.join(missing)}: "
                f"{', '.join(_FLAGS[need] for need in missing)} is false"
            )

    def _expected(self, case: Case) -> tuple[Progress, ...]:
        return case.progress() if self.supports_streaming else ()

    # -- collection ---------------------------------------------------------------------------

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Parametrize each standard test over its cases (or samples) for this protocol."""
        protocol = _protocol_of(type(self))
        standard = vars(RuntimeAdapterConformance).get(metafunc.function.__name__)
        select = getattr(standard, "__runport_cases__", None)
        if "case" in metafunc.fixturenames and select is not None:
            if protocol is None:
                metafunc.parametrize(
                    "case",
                    [
                        pytest.param(
                            None,
                            id="black-box",
                            marks=pytest.mark.skip(
                                reason="protocol is None: scripted cases need a known protocol"
                            ),
                        )
                    ],
                )
            else:
                chosen = [case for case in CASES if select(case)]
                metafunc.parametrize("case", chosen, ids=[case.name for case in chosen])
        if "sample" in metafunc.fixturenames:
            samples = list(self.sample_requests()) if protocol is None else []
            if samples:
                metafunc.parametrize(
                    "sample", samples, ids=[f"sample_{i}" for i in range(len(samples))]
                )
            else:
                reason = (
                    "protocol is None and sample_requests() gave no request"
                    if protocol is None
                    else f"protocol {protocol!r}: the scripted cases run these checks"
                )
                metafunc.parametrize(
                    "sample", [pytest.param(None, id="none", marks=pytest.mark.skip(reason=reason))]
                )

    @pytest.fixture
    def conformance_harness(self) -> Iterator[Harness]:
        self._runport_capabilities = None
        harness = Harness(self)
        try:
            yield harness
        finally:
            harness.close()

    def _skip_without_protocol(self) -> None:
        if _protocol_of(type(self)) is None:
            pytest.skip("protocol is None: this check needs a scripted upstream")

    # -- the guard ------------------------------------------------------------------------------

    def test_standard_tests_not_overridden(self) -> None:
        """A standard test replaced without ``@pytest.mark.xfail(reason=…)`` fails here."""
        problems = []
        for name, standard in vars(RuntimeAdapterConformance).items():
            if not name.startswith("test_"):
                continue
            mine = getattr(type(self), name, None)
            if mine is standard:
                continue
            if not callable(mine):
                problems.append(f"{name} (removed)")
                continue
            marks = getattr(mine, "pytestmark", [])
            if not any(mark.name == "xfail" and mark.kwargs.get("reason") for mark in marks):
                problems.append(name)
        if problems:
            pytest.fail(
                "standard tests overridden without @pytest.mark.xfail(reason=...): "
                + ", ".join(sorted(problems))
                + " — say why the adapter cannot keep the law; a weakened check must not "
                "pass silently",
                pytrace=False,
            )

    # -- the law --------------------------------------------------------------------------------

    @_over(_all)
    def test_law_1_grammar(self, case: Case, conformance_harness: Harness) -> None:
        """Progress events, then exactly one terminal matching how the call ended, then
        nothing."""
        h = conformance_harness
        upstream = h.upstream([case])
        adapter = h.adapter(upstream)
        self._requires(case)
        outcome = h.stream(adapter, upstream, case.request())
        problem = _grammar_problem(outcome)
        if problem:
            broken(1, case.name, problem, seen=outcome.events, outcome=outcome)
        if case.fails and not outcome.error:
            broken(1, case.name, "a failing upstream ended in Complete", outcome=outcome)
        if not case.fails and outcome.error:
            broken(1, case.name, "a succeeding upstream ended in Failed", outcome=outcome)

    @_over(_succeeds)
    def test_law_2_same_result(self, case: Case, conformance_harness: Harness) -> None:
        """``Complete.receipt`` is the returned receipt, and ``execute`` and
        ``execute_streaming`` (two fresh adapters, same upstream content) agree."""
        h = conformance_harness
        upstream = h.upstream([case, case])
        plain_adapter, streaming_adapter = h.adapter(upstream), h.adapter(upstream)
        self._requires(case)
        request = case.request()
        plain = h.execute(plain_adapter, request)
        streamed = h.stream(streaming_adapter, upstream, request)
        for outcome, mode in ((plain, "execute"), (streamed, "execute_streaming")):
            if outcome.receipt is None or outcome.error is not None:
                broken(2, case.name, f"{mode} did not return a receipt", outcome=outcome)
        assert plain.receipt is not None
        assert streamed.receipt is not None
        terminal = streamed.events[-1] if streamed.events else None
        if not isinstance(terminal, Complete):
            broken(2, case.name, "the stream did not end in Complete", outcome=streamed)
        problems = _diff(_dump(terminal.receipt), _dump(streamed.receipt))
        if problems:
            broken(
                2,
                case.name,
                "Complete.receipt differs from the receipt execute_streaming returned: "
                + "; ".join(problems),
            )
        problems = _diff(_dump(streamed.receipt), _dump(plain.receipt))
        if problems:
            broken(
                2,
                case.name,
                "execute_streaming and execute returned different receipts "
                "(streamed vs plain): " + "; ".join(problems),
            )

    @_over(_succeeds)
    def test_law_3_assembly(self, case: Case, conformance_harness: Harness) -> None:
        """Joined deltas are the receipt's text; joined fragments per index are its tool
        calls' arguments, with the same name and call_id, in index order."""
        h = conformance_harness
        upstream = h.upstream([case])
        adapter = h.adapter(upstream)
        self._requires(case)
        if not self.supports_streaming:
            pytest.skip("law 3: supports_streaming is false, so no progress is sent to assemble")
        outcome = h.stream(adapter, upstream, case.request())
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

    @_over(_all)
    def test_law_4_order_and_promptness(self, case: Case, conformance_harness: Harness) -> None:
        """Progress events in upstream order, each delivered before the upstream sends the
        next frame (an ``openai-chat`` upstream withholds it until the sink has seen the
        event; a scripted runtime has no frames to withhold, so only order is checked)."""
        h = conformance_harness
        upstream = h.upstream([case], pacing="every")
        adapter = h.adapter(upstream)
        self._requires(case)
        outcome = h.stream(adapter, upstream, case.request())
        if outcome.hung:
            broken(4, case.name, "the call never returned", outcome=outcome)
        if outcome.foreign_threads:
            broken(4, case.name, "the sink was called on a thread other than the caller's")
        expected = list(self._expected(case))
        seen = outcome.progress
        if isinstance(upstream, ScriptedUpstream) and upstream.requests:
            record = upstream.requests[0].settle()
            if record.promptness:
                broken(4, case.name, "not prompt: " + "; ".join(record.promptness), seen=seen)
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
            if record.withheld and seen != expected and not case.prefix_only:
                broken(
                    4,
                    case.name,
                    "not prompt: "
                    + "; ".join(record.withheld)
                    + " — the adapter waited for more input before delivering what it had "
                    "(it buffers)",
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

    @_over(_fails)
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

    @_over(_all)
    def test_law_6_caller_stop(self, case: Case, conformance_harness: Harness) -> None:
        """The sink raises at each position in turn: that same exception comes back, nothing
        more is sent, the HTTP response is closed, and the adapter serves the next call."""
        h = conformance_harness
        probe_upstream = h.upstream([case])
        probe_adapter = h.adapter(probe_upstream)
        self._requires(case)
        probe = h.stream(probe_adapter, probe_upstream, case.request())
        count = len(probe.events)
        if count == 0:
            broken(6, case.name, "the call sent no event at all", outcome=probe)
        positions = list(range(count))
        if count > 12:
            positions = sorted({0, 1, 2, count // 2, count - 2, count - 1})
        plan: list[Case] = []
        for _ in positions:
            plan += [case, RESUME_CASE]
        upstream = h.upstream(plan, pacing="every")
        adapter = h.adapter(upstream)
        resume = RESUME_CASE.request()
        for turn, position in enumerate(positions):
            outcome = h.stream(adapter, upstream, case.request(), raise_at=position)
            where = f"the sink raised at event #{position} ({probe.events[position].kind})"
            if outcome.hung:
                broken(6, case.name, f"{where}; the call never returned")
            if outcome.stop is None:
                broken(
                    6,
                    case.name,
                    f"{where} was never reached: the adapter sent fewer events than before",
                    seen=outcome.events,
                    expected=probe.events,
                )
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
            if isinstance(upstream, ScriptedUpstream):
                record = upstream.requests[2 * turn].settle()
                if record.ended_early and record.client_closed is False:
                    broken(
                        6,
                        case.name,
                        f"{where}; the HTTP response was not closed (the upstream still held "
                        "an open connection)",
                    )
            after = h.stream(adapter, upstream, resume)
            if after.receipt is None or after.receipt.text != "Hello, world.":
                broken(
                    6,
                    case.name,
                    f"{where}; the next call on the same adapter did not play the next turn",
                    outcome=after,
                )

    @_over(_fails)
    def test_law_7_single_attempt(self, case: Case, conformance_harness: Harness) -> None:
        """One upstream request per call, streamed or not, whatever the failure (a
        ``scenario`` adapter that retried would have consumed the next turn)."""
        h = conformance_harness
        sentinel = sentinel_case()
        upstream = h.upstream([case, sentinel, case, sentinel])
        adapter = h.adapter(upstream)
        self._requires(case)
        request = case.request()
        for mode in ("execute_streaming", "execute"):
            before = len(upstream.requests) if isinstance(upstream, ScriptedUpstream) else 0
            if mode == "execute":
                outcome = h.execute(adapter, request)
            else:
                outcome = h.stream(adapter, upstream, request)
            if isinstance(upstream, ScriptedUpstream):
                made = len(upstream.requests) - before
                if made != 1:
                    broken(7, case.name, f"{mode} made {made} upstream requests", outcome=outcome)
            if not isinstance(outcome.error, PortError):
                broken(7, case.name, f"{mode} did not fail with a PortError", outcome=outcome)
            after = h.execute(adapter, sentinel.request())
            if after.receipt is None or after.receipt.text != "sentinel":
                broken(
                    7,
                    case.name,
                    f"after {mode}, the next call did not get the next scripted turn: the "
                    "adapter made more than one attempt",
                    outcome=after,
                )

    @_over(lambda case: case.prefix_only)
    def test_law_8_bounds(self, case: Case, conformance_harness: Harness) -> None:
        """Past the request's ``max_response_bytes`` the call fails with
        ``TQX_RUNTIME_RESPONSE_TOO_LARGE`` (streamed and not) and the upstream is closed."""
        h = conformance_harness
        upstream = h.upstream([case, case], pacing="every")
        adapter = h.adapter(upstream)
        self._requires(case)
        want = "TQX_RUNTIME_RESPONSE_TOO_LARGE"
        streamed = h.stream(adapter, upstream, case.request())
        plain = h.execute(adapter, case.request())
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

    @_over(lambda case: case.fault is not None and case.fault.kind == "eof")
    def test_law_9_truncation(self, case: Case, conformance_harness: Harness) -> None:
        """A stream that ends without the protocol's completion marker fails with
        ``TQX_RUNTIME_STREAM_TRUNCATED`` — never a short ``Complete``."""
        h = conformance_harness
        upstream = h.upstream([case])
        adapter = h.adapter(upstream)
        self._requires(case)
        outcome = h.stream(adapter, upstream, case.request())
        want = "TQX_RUNTIME_STREAM_TRUNCATED"
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

    @_over(_all)
    def test_law_10_no_secrets(self, case: Case, conformance_harness: Harness) -> None:
        """The planted API key and the provider's response bodies appear in no event,
        receipt, error or log record, streamed or not."""
        h = conformance_harness
        upstream = h.upstream([case, case])
        adapter = h.adapter(upstream)
        self._requires(case)
        request = case.request()
        for mode, outcome in (
            ("execute_streaming", h.stream(adapter, upstream, request, capture_logs=True)),
            ("execute", h.execute(adapter, request, capture_logs=True)),
        ):
            found = _leaks(outcome, upstream.secrets)
            if found:
                broken(10, case.name, f"{mode}: " + "; ".join(found))

    # -- receipts, descriptor, wire -------------------------------------------------------------

    @_over(_succeeds)
    def test_receipt_matches_case(self, case: Case, conformance_harness: Harness) -> None:
        """Every receipt field (text, tool calls, output, validity, finish reason, usage,
        fingerprints) equals what the script implies, streamed and not."""
        h = conformance_harness
        upstream = h.upstream([case, case])
        adapter = h.adapter(upstream)
        self._requires(case)
        expected = case.expected_receipt()
        request = case.request()
        for mode, outcome in (
            ("execute_streaming", h.stream(adapter, upstream, request)),
            ("execute", h.execute(adapter, request)),
        ):
            if outcome.receipt is None:
                broken("receipt", case.name, f"{mode} returned no receipt", outcome=outcome)
            seen = _dump(outcome.receipt)
            seen.pop("adapter")
            problems = _diff(seen, expected)
            if problems:
                broken("receipt", case.name, f"{mode}: " + "; ".join(problems))

    @_over(_succeeds)
    def test_fingerprints_recomputed(self, case: Case, conformance_harness: Harness) -> None:
        """Both fingerprints equal SHA-256 of canonical JSON, recomputed by the suite."""
        h = conformance_harness
        upstream = h.upstream([case, case])
        adapter = h.adapter(upstream)
        self._requires(case)
        request = case.request()
        for mode, outcome in (
            ("execute_streaming", h.stream(adapter, upstream, request)),
            ("execute", h.execute(adapter, request)),
        ):
            receipt = outcome.receipt
            if receipt is None:
                broken("fingerprints", case.name, f"{mode} returned no receipt", outcome=outcome)
            interaction = independent_fingerprint(request.interaction.model_dump(mode="json"))
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

    @_over(_succeeds)
    def test_schema_validity_recomputed(self, case: Case, conformance_harness: Harness) -> None:
        """``output_schema_valid`` equals the suite's own validation of the receipt's output
        (``null`` on a turn with tool calls)."""
        h = conformance_harness
        upstream = h.upstream([case, case])
        adapter = h.adapter(upstream)
        self._requires(case)
        request = case.request()
        schema = dict(request.interaction.output_schema)
        for mode, outcome in (
            ("execute_streaming", h.stream(adapter, upstream, request)),
            ("execute", h.execute(adapter, request)),
        ):
            receipt = outcome.receipt
            if receipt is None:
                broken("schema validity", case.name, f"{mode} returned no receipt", outcome=outcome)
            want = _validity(receipt, schema)
            if receipt.output_schema_valid != want:
                broken(
                    "schema validity",
                    case.name,
                    f"{mode}: output_schema_valid is {receipt.output_schema_valid}, the output "
                    f"{_clip(receipt.output)} makes it {want}",
                )

    @_over(_all)
    def test_events_json_round_trip(self, case: Case, conformance_harness: Harness) -> None:
        """Every event serializes to exactly its documented keys and reads back equal."""
        h = conformance_harness
        upstream = h.upstream([case])
        adapter = h.adapter(upstream)
        self._requires(case)
        outcome = h.stream(adapter, upstream, case.request())
        for index, event in enumerate(outcome.events):
            name = f"event #{index} ({getattr(event, 'kind', type(event).__name__)})"
            try:
                dumped = event.model_dump_json()
                back = _EVENT_ADAPTER.validate_json(dumped)
            except (AttributeError, ValidationError, ValueError) as error:
                broken("JSON round-trip", case.name, f"{name} does not round-trip: {error}")
            if back != event:
                broken("JSON round-trip", case.name, f"{name} reads back different: {dumped}")
            keys = set(json.loads(dumped))
            if keys != _KEYS[event.kind]:
                broken(
                    "JSON round-trip",
                    case.name,
                    f"{name} serializes keys {sorted(keys)}, expected {sorted(_KEYS[event.kind])}",
                )

    def test_descriptor_is_valid(self, conformance_harness: Harness) -> None:
        """``descriptor()`` is a valid, stable ``AdapterDescriptor`` with unique capabilities."""
        self._skip_without_protocol()
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
        upstream = h.upstream(cases, pacing="off")
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
            problem = _grammar_problem(outcome)
            if problem or outcome.receipt is None:
                broken(
                    "thread safety",
                    name,
                    problem or "no receipt",
                    seen=outcome.events,
                    outcome=outcome,
                )
            request = cases[number].request()
            if outcome.receipt.request_fingerprint != independent_fingerprint(
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
            ("execute", h.execute(adapter, request)),
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
        case = data.draw(_generated_case(tools=self.supports_tool_calls), label="case")
        upstream = h.upstream([case, case])
        plain_adapter, streaming_adapter = h.adapter(upstream), h.adapter(upstream)
        request = case.request()
        plain = h.execute(plain_adapter, request)
        streamed = h.stream(streaming_adapter, upstream, request)
        problem = _grammar_problem(streamed)
        if problem:
            broken(1, case.name, problem, seen=streamed.events, outcome=streamed)
        expected = list(self._expected(case))
        if streamed.progress != expected:
            broken(4, case.name, "progress differs", seen=streamed.progress, expected=expected)
        if streamed.receipt is None or plain.receipt is None:
            broken(2, case.name, "a call returned no receipt", outcome=plain)
        problems = _diff(_dump(streamed.receipt), _dump(plain.receipt))
        if problems:
            broken(2, case.name, "streamed vs plain: " + "; ".join(problems))
        seen = _dump(streamed.receipt)
        seen.pop("adapter")
        problems = _diff(seen, case.expected_receipt())
        if problems:
            broken(3, case.name, "receipt vs script: " + "; ".join(problems))

    # -- black box ------------------------------------------------------------------------------

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
        problem = _grammar_problem(outcome)
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
        problems = _diff(_dump(terminal.receipt), _dump(receipt))
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
        if receipt.request_fingerprint != independent_fingerprint(
            sample.interaction.model_dump(mode="json")
        ) or receipt.output_fingerprint != independent_fingerprint(receipt.output):
            broken("fingerprints", name, "a fingerprint differs from the recomputed one")
        want = _validity(receipt, dict(sample.interaction.output_schema))
        if receipt.output_schema_valid != want:
            broken("schema validity", name, f"output_schema_valid should be {want}")
        for event in outcome.events:
            if _EVENT_ADAPTER.validate_json(event.model_dump_json()) != event:
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
        problem = _grammar_problem(again)
        if problem:
            broken(6, name, f"the next call: {problem}", outcome=again)


_TEXT_ALPHABET: Final = st.characters(codec="utf-8")  # UTF-8 has no surrogates


@st.composite
def _fragments(draw: st.DrawFn, text: str) -> list[str]:
    if not text:
        return []
    cuts = draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=6))
    bounds = [0, *sorted(cut for cut in cuts if cut < len(text)), len(text)]
    return [text[start:end] for start, end in itertools.pairwise(bounds)]


@st.composite
def _generated_case(draw: st.DrawFn, *, tools: bool) -> Case:
    text = draw(st.text(_TEXT_ALPHABET, max_size=24))
    streams: list[list[Text | Call]] = [[Text(piece) for piece in draw(_fragments(text))]]
    calls = draw(st.integers(0, 3)) if tools else 0
    for index in range(calls):
        city = draw(st.text(_TEXT_ALPHABET, max_size=8))
        pieces = draw(_fragments(json.dumps({"city": city}, ensure_ascii=False)))
        call_id = draw(st.sampled_from([None, f"call_g{index}"]))
        steps: list[Text | Call] = [Call(index, "", name="get_weather", call_id=call_id)]
        steps += [Call(index, piece) for piece in pieces]
        streams.append(steps)
    order = draw(st.permutations([i for i, stream in enumerate(streams) for _ in stream]))
    cursors = [0] * len(streams)
    merged: list[Text | Call] = []
    for stream in order:
        merged.append(streams[stream][cursors[stream]])
        cursors[stream] += 1
    return Case(
        "generated",
        "generated by hypothesis",
        tuple(merged),
        finish_reason="tool_calls" if calls else "stop",
    )
