"""How the suite behaves for an author: the override guard, capability flags, the black-box
group, a missing ``protocol``, the catalogue's exact expectations, and a plugin that stays out
of unrelated test runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from runport.conformance import CASES, PROTOCOLS, ScenarioUpstream, ScriptedUpstream, WireContext
from runport.conformance._cases import CASES_BY_NAME
from runport.conformance._observe import render_events
from runport.conformance._responses import stream_response
from runport.contracts import Delta, StreamEvent, ToolCallDelta

from .conformance_doubles import MiniChatAdapter, outcomes, run_inner

# one author's run serves several tests: on one pytest-xdist worker,
# the module fixture is made once
pytestmark = pytest.mark.xdist_group("test_suite_mechanics")

HERE: Final = Path(__file__).parent

AUTHOR_MODULE: Final = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
import pytest
from runport.conformance import RuntimeAdapterConformance
from runport.contracts import CompiledInteraction, ExecutionRequest, Message
from runport.core import parse_scenario
from runport.mock import ScriptedRuntime

TURNS = parse_scenario({{
    "api_version": "runport.mock/v1",
    "id": "black-box",
    "turns": [{{"events": [{{"kind": "delta", "text": "Hi"}}, {{"kind": "finish"}}]}}] * 4,
}})
SAMPLE = ExecutionRequest(interaction=CompiledInteraction(
    compiler="t", contract_id="sample", contract_version="1",
    messages=[Message(role="user", content="hi")], output_schema={{"type": "string"}},
))


class Scripted(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream):
        return ScriptedRuntime(upstream.scenario)


class TestOverriddenWithXfail(Scripted):
    @pytest.mark.xfail(reason="this adapter cannot keep law 1 yet")
    def test_law_1_grammar(self, case, conformance_harness):
        raise AssertionError("known gap")


class TestNoToolCalls(Scripted):
    @property
    def supports_tool_calls(self):
        return False


class TestBlackBoxWithoutSamples(RuntimeAdapterConformance):
    protocol = None

    def make_adapter(self, upstream):
        return ScriptedRuntime(TURNS)


class TestBlackBoxWithSamples(TestBlackBoxWithoutSamples):
    def sample_requests(self):
        return [SAMPLE]
"""


@pytest.fixture(scope="module")
def author_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    folder = tmp_path_factory.mktemp("author")
    (folder / "test_author.py").write_text(AUTHOR_MODULE, encoding="utf-8")
    selected = [
        "law_1_grammar and plain_text",
        "law_4_order_and_promptness and three_tool_calls",
        "BlackBox",
    ]
    return outcomes(run_inner(folder, "-k", " or ".join(f"({k})" for k in selected)))


def _only(run: dict[str, tuple[str, str]], cls: str, test: str) -> tuple[str, str]:
    hits = [value for key, value in run.items() if f"::{cls}::{test}" in key]
    assert len(hits) == 1, (cls, test, sorted(run))
    return hits[0]


WEAKENED: Final = {
    "overridden": (
        "    def test_law_1_grammar(self, case, conformance_harness):\n        pass\n",
        "overridden without @pytest.mark.xfail(reason=...): test_law_1_grammar",
    ),
    "removed": ("    test_law_9_truncation = None\n", "test_law_9_truncation (removed)"),
    "async_overridden": (
        "    def test_cancellation_at_every_event(self, case, conformance_harness):\n"
        "        pass\n",
        "overridden without @pytest.mark.xfail(reason=...): test_cancellation_at_every_event",
    ),
}


@pytest.mark.parametrize("weakened", sorted(WEAKENED))
def test_a_weakened_standard_test_is_refused_at_collection_even_under_k(
    weakened: str, tmp_path: Path
) -> None:
    """The guard is a collection error, so deselecting everything else cannot hide it."""
    body, says = WEAKENED[weakened]
    base = "AsyncRuntimeAdapterConformance" if weakened.startswith("async") else "Scripted"
    (tmp_path / f"test_weakened_{weakened}.py").write_text(
        "from runport.conformance import AsyncRuntimeAdapterConformance\n"
        "from runport.conformance import RuntimeAdapterConformance\n"
        "from runport.mock import ScriptedRuntime\n\n"
        "class Scripted(RuntimeAdapterConformance):\n"
        "    protocol = 'scenario'\n"
        "    def make_adapter(self, upstream):\n"
        "        return ScriptedRuntime(upstream.scenario)\n\n"
        f"class TestWeakened({base}):\n"
        "    protocol = 'scenario'\n" + body,
        encoding="utf-8",
    )
    run = run_inner(tmp_path, "-k", "descriptor_is_valid")
    assert not run.reports
    assert run.collect, "the weakened class was collected"
    assert says in str(run.collect[0].longrepr)


def test_an_override_marked_xfail_with_a_reason_is_accepted(
    author_run: dict[str, tuple[str, str]],
) -> None:
    assert _only(author_run, "TestOverriddenWithXfail", "test_law_1_grammar")[0] == "xfailed"


def test_a_capability_flag_skips_its_cases_with_a_reason(
    author_run: dict[str, tuple[str, str]],
) -> None:
    outcome, text = _only(author_run, "TestNoToolCalls", "test_law_4_order_and_promptness")
    assert outcome == "skipped"
    assert "needs tool_calls: supports_tool_calls is false" in text


def test_protocol_none_without_samples_skips_the_black_box_group_with_a_reason(
    author_run: dict[str, tuple[str, str]],
) -> None:
    mine = {k: v for k, v in author_run.items() if "::TestBlackBoxWithoutSamples::" in k}
    assert mine
    assert all(outcome == "skipped" for outcome, _ in mine.values())
    texts = " ".join(text for _, text in mine.values())
    assert "sample_requests() gave no request" in texts
    assert "scripted cases need a known protocol" in texts


def test_protocol_none_with_samples_runs_the_black_box_group(
    author_run: dict[str, tuple[str, str]],
) -> None:
    for test in ("test_black_box_streaming_law", "test_black_box_caller_stop"):
        assert _only(author_run, "TestBlackBoxWithSamples", test)[0] == "passed"


def test_a_suite_without_protocol_is_a_collection_error(tmp_path: Path) -> None:
    (tmp_path / "test_forgot.py").write_text(
        "from runport.conformance import RuntimeAdapterConformance\n"
        "class TestForgot(RuntimeAdapterConformance):\n"
        "    def make_adapter(self, upstream):\n"
        "        raise AssertionError\n",
        encoding="utf-8",
    )
    run = run_inner(tmp_path)
    assert not run.reports
    assert "TestForgot must set protocol" in str(run.collect[0].longrepr)


# -- the catalogue ----------------------------------------------------------------------------


def test_the_catalogue_has_every_case_the_issue_lists() -> None:
    assert {case.name for case in CASES} >= {
        "plain_text",
        "structured_json",
        "one_tool_call",
        "three_tool_calls",
        "empty_output",
        "failure_before_delta",
        "failure_after_deltas",
        "truncated",
        "error_frame",
        "rate_limited",
        "oversize",
        "unicode_split",
        "many_tiny_deltas",
        "stall_after_deltas",
        "garbage_frame",
    }
    assert len(CASES_BY_NAME["many_tiny_deltas"].progress()) == 5000


def test_three_parallel_calls_are_expected_exactly_in_first_seen_order() -> None:
    case = CASES_BY_NAME["three_tool_calls"]
    assert case.progress() == (
        ToolCallDelta(index=2, call_id="call_t2", name="get_time", arguments_fragment=""),
        ToolCallDelta(index=0, call_id="call_w0", name="get_weather", arguments_fragment=""),
        ToolCallDelta(index=2, call_id="call_t2", name="get_time", arguments_fragment='{"zone":'),
        ToolCallDelta(
            index=1, call_id="call_1", name="get_weather", arguments_fragment='{"city": "Oslo"}'
        ),
        ToolCallDelta(
            index=0, call_id="call_w0", name="get_weather", arguments_fragment='{"city": "Par'
        ),
        ToolCallDelta(index=2, call_id="call_t2", name="get_time", arguments_fragment=' "UTC"}'),
        ToolCallDelta(index=0, call_id="call_w0", name="get_weather", arguments_fragment='is"}'),
    )
    receipt = case.expected_receipt()
    assert [call["call_id"] for call in receipt["tool_calls"]] == ["call_w0", "call_1", "call_t2"]
    assert receipt["output"] is None
    assert receipt["output_schema_valid"] is None


def test_the_scenario_rendering_plays_the_same_progress() -> None:
    case = CASES_BY_NAME["three_tool_calls"]
    turn = ScenarioUpstream([case]).scenario.turns[0]
    fragments = [getattr(event, "arguments_fragment", None) for event in turn.events]
    assert fragments[:-1] == [event.arguments_fragment for event in case.progress()]


def test_the_sse_rendering_owes_one_event_per_fragment_frame() -> None:
    case = CASES_BY_NAME["three_tool_calls"]
    response = stream_response(PROTOCOLS["openai-chat"], case, WireContext("m", "MARK"))
    owed = [frame.owes for frame in response.frames]
    assert owed == [0, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7]
    first = json.loads(response.frames[2].data.removeprefix(b"data: "))
    call = first["choices"][0]["delta"]["tool_calls"][0]
    assert call == {
        "index": 2,
        "id": "call_t2",
        "type": "function",
        "function": {"name": "get_time", "arguments": ""},
    }
    assert response.frames[-1].data == b"data: [DONE]\n\n"


def test_long_sequences_render_their_ends_and_the_difference() -> None:
    events = [Delta(text=f"{i}") for i in range(5000)]
    line = render_events(events, focus=2500)
    assert line.startswith("[5000 events] D'0'")
    assert "#2500:D'2500'" in line
    assert "more)…" in line
    assert len(line) < 400


# -- the plugin -------------------------------------------------------------------------------


def test_the_plugin_stays_out_of_unrelated_runs(tmp_path: Path) -> None:
    """Loaded by every pytest run: it must not import the suite nor print anything."""
    (tmp_path / "test_plain.py").write_text(
        "import sys\n"
        "def test_plain():\n"
        "    assert 'runport.conformance._plugin' in sys.modules\n"
        "    assert 'runport.conformance._sync_suite' not in sys.modules\n",
        encoding="utf-8",
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "runport conformance" not in result.stdout


# -- the upstream on its own ------------------------------------------------------------------


def test_a_scripted_upstream_used_on_its_own_withholds_nothing() -> None:
    """A test that drives ``ScriptedUpstream`` with its own client and sink (no suite call)
    gets every frame at once: pacing is only for calls the suite's sink reports to."""
    upstream = ScriptedUpstream([CASES_BY_NAME["plain_text"]])
    client = MiniChatAdapter(base_url=upstream.base_url, api_key=upstream.api_key, read_timeout=5)
    events: list[StreamEvent] = []
    try:
        receipt = client.execute_streaming(CASES_BY_NAME["plain_text"].request(), events.append)
    finally:
        client.close()
        upstream.close()
    record = upstream.requests[0].settle()
    assert receipt.text == "Hello, world."
    assert [e.text for e in events if isinstance(e, Delta)] == ["Hel", "lo, ", "world."]
    assert record.promptness == []
    assert record.held_at is None


# -- no false greens --------------------------------------------------------------------------

UNCHECKED_MODULE: Final = """
from runport.conformance import RuntimeAdapterConformance
from runport.mock import ScriptedRuntime


class TestBlackBoxWithoutSamples(RuntimeAdapterConformance):
    protocol = None

    def make_adapter(self, upstream):
        return ScriptedRuntime(upstream.scenario)


def test_something_else():
    pass
"""


@pytest.mark.parametrize(
    "workers", [[], ["-n", "2", "--dist", "loadgroup"]], ids=["plain", "xdist"]
)
def test_a_run_in_which_no_law_item_was_checked_fails(tmp_path: Path, workers: list[str]) -> None:
    """Every law test skipped (protocol None, no samples) is a failed run, not "21 skipped"
    and exit 0 — also when pytest-xdist workers ran the tests and the controller judges."""
    (tmp_path / "test_unchecked.py").write_text(UNCHECKED_MODULE, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *workers, "test_unchecked.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=300,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert " failed" not in result.stdout  # nothing failed: nothing was checked
    assert "NOTHING CHECKED: no law item was carried out in TestBlackBoxWithoutSamples" in (
        result.stdout
    )
    report = result.stdout.split("runport conformance", 1)[1]
    assert "  not checked:\n" in report
    assert "    black_box_answers: protocol is None and sample_requests() gave no request" in (
        report
    )
