"""The report an author acts on: per law passed/failed/skipped, and for each failure its case
and the expected and observed events with the first difference marked — in the terminal
summary and as JUnit XML properties. Run as an author would, in a pytest subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

import pytest

# one inner run serves every test: on one pytest-xdist worker,
# the module fixture is made once
pytestmark = pytest.mark.xdist_group("test_report")

HERE: Final = Path(__file__).parent

MODULE: Final = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from conformance_doubles import ReorderedDeltas
from runport.conformance import RuntimeAdapterConformance


class TestReordered(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream):
        return ReorderedDeltas(upstream.scenario)
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ET.Element]:
    folder = tmp_path_factory.mktemp("report")
    (folder / "test_reordered.py").write_text(MODULE, encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    junit = folder / "junit.xml"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}",
         "-k", "plain_text and (law_3 or law_4 or law_10)", "test_reordered.py"],
        capture_output=True, text=True, cwd=folder, timeout=300, check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    return result.stdout, ET.parse(junit).getroot()


def test_the_terminal_summary_counts_per_law_and_shows_each_failure(
    run: tuple[str, ET.Element],
) -> None:
    out = run[0].split("runport conformance", 1)[1]
    assert "TestReordered (protocol 'scenario')" in out
    rows = [line.split()[0] for line in out.splitlines() if line.startswith("  law_")]
    assert rows == ["law_3_assembly", "law_4_order_and_promptness", "law_10_no_secrets"]
    counts = {line.split()[0]: line for line in out.splitlines() if line.startswith("  law_")}
    assert counts["law_4_order_and_promptness"].endswith("1 failed")
    assert counts["law_10_no_secrets"].endswith("1 passed")
    assert "FAILED law_4_order_and_promptness[plain_text]: progress events differ" in out
    expected = next(line for line in out.splitlines() if line.strip().startswith("expected:"))
    observed = next(line for line in out.splitlines() if line.strip().startswith("observed:"))
    assert ">>#0:D'Hel'" in expected
    assert ">>#0:D'lo, '" in observed


def test_junit_xml_carries_the_failure_facts_as_properties(run: tuple[str, ET.Element]) -> None:
    cases = {case.get("name"): case for case in run[1].iter("testcase")}
    failed = cases["test_law_4_order_and_promptness[plain_text]"]
    properties = {p.get("name"): p.get("value") for p in failed.iter("property")}
    assert properties["runport_law"] == "law 4 (order and promptness)"
    assert properties["runport_case"] == "plain_text"
    assert properties["runport_first_difference"] == "0"
    assert properties["runport_expected"].startswith(">>#0:D'Hel'")
    assert properties["runport_observed"].startswith(">>#0:D'lo, '")
    assert properties["runport_call_bound_expiries"] == "0"
    passed = cases["test_law_10_no_secrets[plain_text]"]
    names = {p.get("name") for p in passed.iter("property")}
    assert names == {"runport_call_bound_expiries"}
