"""``ConformanceBase``: what every standard test stands on — the capability flags, the
parametrization over the case catalogue, and the per-test harness fixture.

The standard tests live in ``_law_tests`` (the streaming law, item by item), ``_receipt_tests``
(receipts, event shapes, descriptor, threads, generated turns) and ``_black_box_tests``
(``protocol = None``); ``RuntimeAdapterConformance`` and ``AsyncRuntimeAdapterConformance``
differ only in the harness they run them with. The harness does not import this module: it
sees the suite through ``_harness.Suite``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, TypeVar

import pytest

from runport.conformance._cases import CASES, Case, Progress
from runport.conformance._harness import Harness, protocol_of
from runport.conformance._observe import Outcome
from runport.conformance._upstream import ConformanceUsageError, Upstream
from runport.contracts import ExecutionRequest

__all__ = [
    "ConformanceBase",
    "Played",
    "over",
    "override_problems",
    "select_all",
    "select_failing",
    "select_succeeding",
    "standard_tests",
]

FLAGS: Final = {
    "streaming": "supports_streaming",
    "tool_calls": "supports_tool_calls",
    "structured_output": "supports_structured_output",
}

F = TypeVar("F", bound=Callable[..., Any])


def over(select: Callable[[Case], bool], *, catalogue: Sequence[Case] = CASES) -> Callable[[F], F]:
    """Parametrize a standard test over the cases of ``catalogue`` (the case catalogue by
    default) that ``select`` keeps."""

    def mark(function: F) -> F:
        function.__runport_cases__ = select  # type: ignore[attr-defined]
        function.__runport_catalogue__ = catalogue  # type: ignore[attr-defined]
        return function

    return mark


def select_all(case: Case) -> bool:
    return True


def select_succeeding(case: Case) -> bool:
    return not case.fails


def select_failing(case: Case) -> bool:
    return case.fails


def standard_tests(cls: type) -> dict[str, Any]:
    """The standard tests ``cls`` inherits: every ``test_*`` a class of this package defines,
    the most derived definition winning."""
    tests: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith("runport.conformance."):
            tests.update(
                (name, value) for name, value in vars(klass).items() if name.startswith("test_")
            )
    return tests


def override_problems(cls: type) -> list[str]:
    """Standard tests ``cls`` replaced without ``@pytest.mark.xfail(reason=…)``, or removed."""
    problems = []
    for name, standard in standard_tests(cls).items():
        mine = getattr(cls, name, None)
        if mine is standard:
            continue
        if not callable(mine):
            problems.append(f"{name} (removed)")
            continue
        marks = getattr(mine, "pytestmark", [])
        if not any(mark.name == "xfail" and mark.kwargs.get("reason") for mark in marks):
            problems.append(name)
    return sorted(problems)


@dataclass(frozen=True)
class Played:
    """A case played by one fresh adapter, streamed and then not, logs captured: what the
    standard tests that judge nothing but such a call read (``ConformanceBase._played``)."""

    upstream: Upstream
    streamed: Outcome
    plain: Outcome
    capabilities: frozenset[str]


class ConformanceBase:
    """The ground the standard tests share; authors subclass ``RuntimeAdapterConformance`` or
    ``AsyncRuntimeAdapterConformance``, not this."""

    __runport_conformance__: ClassVar[bool] = True
    _runport_async: ClassVar[bool] = False
    _runport_capabilities: frozenset[str] | None = None
    _runport_buffers: ClassVar[str | None] = None
    """The case in which the adapter was first seen to hold a frame's event back (law 4)."""
    _runport_drops: ClassVar[tuple[str, str] | None] = None
    """The case in which the adapter was first seen to drop progress events, and which kind
    (``"reasoning"``: its later reasoning cases skip; any drop: later calls run unpaced)."""
    _runport_read_timeout_ignored: ClassVar[str | None] = None
    """How a stall showed that the adapter does not honour ``upstream.read_timeout``."""

    def make_adapter(self, upstream: Upstream) -> Any:
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

    @property
    def supports_reasoning(self) -> bool:
        """Whether the adapter carries reasoning (``ReasoningDelta``, ``receipt.reasoning``,
        sent back). Required of every adapter of a protocol, whatever its descriptor says:
        the upstream sends reasoning whether or not it was asked for. An adapter that cannot
        overrides this to return ``False``, and its reasoning cases skip, saying so."""
        return True

    @property
    def is_composite(self) -> bool:
        """Whether the adapter tries members in turn (capability ``composite``): law 7 then
        checks the composite rules instead of one upstream request per call."""
        return "composite" in self._declared()

    def _requires(self, case: Case) -> None:
        if case.reasons and not self.supports_reasoning:
            pytest.skip(f"case {case.name!r} has reasoning: supports_reasoning is false")
        missing = [need for need in sorted(case.needs) if not getattr(self, FLAGS[need])]
        if missing:
            pytest.skip(
                f"case {case.name!r} needs {', '.join(missing)}: "
                f"{', '.join(FLAGS[need] for need in missing)} is false"
            )

    def _expected(self, case: Case) -> tuple[Progress, ...]:
        return case.progress() if self.supports_streaming else ()

    def _both_ways(self, h: Harness, case: Case) -> tuple[Upstream, list[tuple[str, Outcome]]]:
        """One adapter plays the case streamed, then not (``_played``): the upstream and each
        (mode, outcome)."""
        played = self._played(h, case)
        return played.upstream, [("execute_streaming", played.streamed), ("execute", played.plain)]

    def _played(self, h: Harness, case: Case) -> Played:
        """The case played by one fresh adapter, streamed and then not, logs captured — once
        per class. Every standard test that judges nothing but what such a call did (laws 1,
        3, 9 and 10, the receipt, fingerprint, schema-validity, event-shape and turn-end
        checks, the caller-stop probes) reads this one play instead of playing the case
        again: the same adapter code on the same bytes, judged item by item, at a fraction of
        the calls.

        A play that ended its test (a verdict the harness gave on the way, a skip) is not
        kept: the next test plays the case again, as it always did, so one cause still gives
        one failure. A kept play is read only after the test has asked what it would have
        asked of a fresh upstream (``Harness.admit``, ``_requires``), so a skip the class
        earned meanwhile still applies."""
        owner = type(self)
        plays: dict[str, Played] | None = owner.__dict__.get("_runport_plays")
        if plays is None:
            plays = {}
            owner._runport_plays = plays  # type: ignore[attr-defined]
        kept = plays.get(case.name)
        if kept is not None:
            h.admit([case])
            self._runport_capabilities = kept.capabilities
            self._requires(case)
            return kept
        upstream = h.upstream([case, case])
        adapter = h.adapter(upstream)
        self._requires(case)
        request = case.request()
        streamed = h.stream(adapter, upstream, request, capture_logs=True)
        plain = h.execute(adapter, request, upstream=upstream, capture_logs=True)
        kept = Played(upstream, streamed, plain, self._declared())
        plays[case.name] = kept
        return kept

    def _skip_without_protocol(self) -> None:
        if protocol_of(type(self)) is None:
            pytest.skip("protocol is None: this check needs a scripted upstream")

    def _black_box_samples(self) -> list[ExecutionRequest]:
        """The sample requests of a black-box class (else the test skips, saying why)."""
        protocol = protocol_of(type(self))
        if protocol is not None:
            pytest.skip(f"protocol {protocol.name!r}: the scripted cases run these checks")
        samples = list(self.sample_requests())
        if not samples:
            pytest.skip("protocol is None and sample_requests() gave no request")
        return samples

    # -- collection ---------------------------------------------------------------------------

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Parametrize each standard test over its cases (or samples) for this protocol."""
        protocol = protocol_of(type(self))
        standard = standard_tests(type(self)).get(metafunc.function.__name__)
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
                catalogue = getattr(standard, "__runport_catalogue__", CASES)
                played = [
                    protocol.played(case)
                    for case in catalogue
                    if case.requires <= protocol.features
                ]
                chosen = [case for case in played if select(case)]
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
                    else f"protocol {protocol.name!r}: the scripted cases run these checks"
                )
                metafunc.parametrize(
                    "sample", [pytest.param(None, id="none", marks=pytest.mark.skip(reason=reason))]
                )

    @pytest.fixture
    def conformance_harness(self, request: pytest.FixtureRequest) -> Iterator[Harness]:
        """The test's harness; on teardown it closes everything and records how many calls
        ran into the call bound (a JUnit XML property, ``runport_call_bound_expiries``)."""
        self._runport_capabilities = None
        harness = Harness(self, asynchronous=self._runport_async)
        try:
            yield harness
        finally:
            harness.close()
            request.node.user_properties.append(("runport_call_bound_expiries", harness.expiries))
