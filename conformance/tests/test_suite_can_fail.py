"""The suite can fail: each deliberately broken adapter is caught by the check meant for it.

All broken adapters go into one generated test module, run in-process by ``pytest.main`` with
only the expected checks selected (by node id); each must fail there with a message naming
the law item. The unbroken controls run the same checks and pass, so the failures come from
the breakage, not from the harness.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, NamedTuple

import pytest
from conformance_doubles import run_inner

HERE: Final = Path(__file__).parent


class Broken(NamedTuple):
    name: str
    protocol: str
    make: str
    check: str
    says: str
    case: str = ""
    """Only this case, where the breakage costs a bounded wait per case (HTTP)."""


def _mini(**flags: bool) -> str:
    options = ", ".join(f"{flag}={value}" for flag, value in flags.items())
    return (
        "MiniChatAdapter(base_url=upstream.base_url, api_key=upstream.api_key, "
        f"read_timeout=upstream.read_timeout{', ' if options else ''}{options})"
    )


BROKEN: Final = (
    Broken("TwoTerminals", "scenario", "TwoTerminals(upstream.scenario)", "test_law_1_grammar",
           "law 1 (grammar) broken"),
    Broken("LostDelta", "scenario", "LostDelta(upstream.scenario)", "test_law_3_assembly",
           "law 3 (assembly) broken"),
    Broken("ReorderedDeltas", "scenario", "ReorderedDeltas(upstream.scenario)",
           "test_law_4_order_and_promptness", "differ from the upstream's, in content or order"),
    Broken("SwallowsSinkError", "scenario", "SwallowsSinkError(upstream.scenario)",
           "test_law_6_caller_stop", "did not propagate unchanged: the call returned a receipt"),
    Broken("WrapsSinkError", "scenario", "WrapsSinkError(upstream.scenario)",
           "test_law_6_caller_stop", "it was wrapped in PortError"),
    Broken("NoFailedOnError", "scenario", "NoFailedOnError(upstream.scenario)",
           "test_law_5_failure_projection", "expected one Failed event, got 0"),
    Broken("WrongFailedCode", "scenario", "WrongFailedCode(upstream.scenario)",
           "test_law_5_failure_projection", "differs from the raised PortError's"),
    Broken("CompleteDiffers", "scenario", "CompleteDiffers(upstream.scenario)",
           "test_law_2_same_result", "Complete.receipt differs from the receipt"),
    Broken("ParityBroken", "scenario", "ParityBroken(upstream.scenario)",
           "test_law_2_same_result", "execute_streaming and execute returned different receipts"),
    Broken("CollapsedIndices", "scenario", "CollapsedIndices(upstream.scenario)",
           "test_law_3_assembly", "changed identity"),
    Broken("SendsAfterStop", "scenario", "SendsAfterStop(upstream.scenario)",
           "test_law_6_caller_stop", "the adapter sent more after it"),
    Broken("LyingValidity", "scenario", "LyingValidity(upstream.scenario)",
           "test_schema_validity_recomputed", "schema validity broken"),
    Broken("RetriesAfterDelta", "scenario", "RetriesAfterDelta(upstream.scenario)",
           "test_law_7_single_attempt", "law 7 (single attempt) broken"),
    Broken("Buffering", "openai-chat", _mini(buffer=True),
           "test_law_4_order_and_promptness", "(it buffers)", "plain_text"),
    Broken("TruncationAsComplete", "openai-chat", _mini(truncation_ok=True),
           "test_law_9_truncation", "passed off as complete"),
    Broken("LeaksBodies", "openai-chat", _mini(leak=True),
           "test_law_10_no_secrets", "the provider's response body appears in", "rate_limited"),
    Broken("IgnoresBound", "openai-chat", _mini(ignore_bound=True),
           "test_law_8_bounds", "should fail with TQX_RUNTIME_RESPONSE_TOO_LARGE"),
    Broken("KeepsConnectionOpen", "openai-chat", _mini(keep_open=True),
           "test_law_6_caller_stop", "the HTTP response was not closed", "plain_text"),
)  # fmt: skip

CONTROLS: Final = (
    ("ControlScenario", "scenario", "Wrapped(upstream.scenario)"),
    ("ControlChat", "openai-chat", _mini()),
)


def _module() -> str:
    lines = [
        "import sys",
        f"sys.path.insert(0, {str(HERE)!r})",
        "from conformance_doubles import *  # noqa: F403",
        "from runport.conformance import RuntimeAdapterConformance",
    ]
    classes = [(b.name, b.protocol, b.make) for b in BROKEN] + list(CONTROLS)
    for name, protocol, make in classes:
        lines += [
            f"class Test{name}(RuntimeAdapterConformance):",
            f"    protocol = {protocol!r}",
            "    def make_adapter(self, upstream):",
            f"        return {make}",
        ]
    return "\n".join(lines) + "\n"


def _node(module: Path, cls: str, broken: Broken) -> str:
    return f"{module}::{cls}::{broken.check}" + (f"[{broken.case}]" if broken.case else "")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[pytest.TestReport]]:
    """Run the expected checks of every broken adapter (and the controls) once."""
    folder = tmp_path_factory.mktemp("broken")
    module = folder / "test_runport_broken_adapters.py"
    module.write_text(_module(), encoding="utf-8")
    ids = [_node(module, f"Test{b.name}", b) for b in BROKEN]
    for name, protocol, _ in CONTROLS:
        ids += sorted({_node(module, f"Test{name}", b) for b in BROKEN if b.protocol == protocol})
    by_class: dict[str, list[pytest.TestReport]] = {}
    for report in run_inner(folder, *ids).reports:
        if report.when == "call" or report.outcome != "passed":
            by_class.setdefault(report.nodeid.split("::")[1], []).append(report)
    return by_class


def test_there_are_at_least_twelve_broken_adapters() -> None:
    assert len(BROKEN) >= 12


@pytest.mark.parametrize("broken", BROKEN, ids=[b.name for b in BROKEN])
def test_each_breakage_is_caught_by_its_check(
    broken: Broken, reports: dict[str, list[pytest.TestReport]]
) -> None:
    mine = reports.get(f"Test{broken.name}", [])
    failed = [report for report in mine if report.failed]
    assert failed, f"{broken.name}: {broken.check} did not fail on any case"
    messages = "\n".join(str(report.longrepr) for report in failed)
    assert broken.says in messages, messages


@pytest.mark.parametrize("control", [name for name, _, _ in CONTROLS])
def test_the_unbroken_controls_pass_the_same_checks(
    control: str, reports: dict[str, list[pytest.TestReport]]
) -> None:
    mine = reports[f"Test{control}"]
    assert mine
    failed = [f"{report.nodeid}: {report.longrepr}" for report in mine if report.failed]
    assert not failed, "\n".join(failed)
