"""``runport conformance MODULE:FACTORY``: the suite's report on stdout, exit 0 or 1."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runport.cli._main import main

FACTORIES = """
from runport.application import Fallback
from runport.contracts import Complete, ErrorCode
from runport.mock import ScriptedRuntime
from runport.ports import AsyncRuntimeAdapter, PortError, RuntimeAdapter


def good(upstream):
    return ScriptedRuntime(upstream.scenario)


class TwoTerminals(ScriptedRuntime):
    def execute_streaming(self, request, sink):
        receipt = super().execute_streaming(request, sink)
        sink(Complete(receipt=receipt))
        return receipt


def two_terminals(upstream):
    return TwoTerminals(upstream.scenario)


class AsyncExecuteOnly(AsyncRuntimeAdapter):
    def __init__(self, scenario):
        self.inner = ScriptedRuntime(scenario)

    def descriptor(self):
        descriptor = self.inner.descriptor()
        kept = [item for item in descriptor.capabilities if item != "streaming"]
        return descriptor.model_copy(update={"capabilities": kept})

    async def execute(self, request):
        return self.inner.execute(request)


def async_good(upstream):
    return AsyncExecuteOnly(upstream.scenario)


class Unavailable(RuntimeAdapter):
    # always down: Fallback must move past it without showing its Failed

    def __init__(self, descriptor):
        self._descriptor = descriptor

    def descriptor(self):
        return self._descriptor

    def execute(self, request):
        raise PortError(ErrorCode.RUNTIME_UNAVAILABLE, "down")


def standalone(upstream):
    # ignores the suite's upstream: with --protocol none every law that needs one is skipped
    return ScriptedRuntime.from_scenario(SCENARIO)


def fallback_one(upstream):
    return Fallback([ScriptedRuntime(upstream.scenario)])


def fallback_two(upstream):
    member = ScriptedRuntime(upstream.scenario)
    return Fallback([Unavailable(member.descriptor().model_copy(update={"id": "down"})), member])
"""


SCENARIO = Path(__file__).with_name("data") / "quick" / "scenario.yaml"


def conformance(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    source = FACTORIES.replace("SCENARIO", repr(str(SCENARIO)))
    (tmp_path / "my_factories.py").write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "runport.cli", "conformance", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=300,
        check=False,
    )


def test_a_conforming_adapter_passes_with_exit_0(tmp_path: Path) -> None:
    result = conformance(tmp_path, "my_factories:good", "--protocol", "scenario")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "runport conformance" in result.stdout
    assert "law_6_caller_stop" in result.stdout
    assert " failed" not in result.stdout


def test_an_async_factory_runs_the_async_suite(tmp_path: Path) -> None:
    result = conformance(tmp_path, "my_factories:async_good", "--protocol", "scenario")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "(async, protocol 'scenario')" in result.stdout
    assert "cancellation_at_every_event" in result.stdout
    assert " failed" not in result.stdout


@pytest.mark.parametrize("factory", ["fallback_one", "fallback_two"])
def test_fallback_is_a_composite_and_passes_with_one_or_two_members(
    tmp_path: Path, factory: str
) -> None:
    result = conformance(tmp_path, f"my_factories:{factory}", "--protocol", "scenario")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "law_7_single_attempt" in result.stdout
    assert " failed" not in result.stdout


def test_a_broken_adapter_fails_with_exit_1_naming_the_law(tmp_path: Path) -> None:
    result = conformance(tmp_path, "my_factories:two_terminals")
    assert result.returncode == 1
    assert "law 1 (grammar) broken" in result.stdout
    assert "FAILED" in result.stdout


def test_a_run_that_checked_nothing_is_no_pass(tmp_path: Path) -> None:
    result = conformance(tmp_path, "my_factories:standalone", "--protocol", "none")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    assert " passed" not in result.stdout  # the suite's report is shown all the same
    assert result.stderr.startswith("runport: error: usage: nothing was checked")
    assert result.stderr.count("\n") == 1


def test_a_target_that_does_not_import_is_one_line(tmp_path: Path) -> None:
    result = conformance(tmp_path, "no_such_module:make")
    assert result.returncode == 1
    assert result.stderr.startswith("runport: error: usage: cannot import 'no_such_module'")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr + result.stdout


def test_a_target_without_a_colon_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "just_a_module"]) == 1
    assert "expected MODULE:FACTORY" in capsys.readouterr().err


def test_without_the_suite_installed_it_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec

    def missing(name: str, package: str | None = None) -> Any:
        return None if name == "runport.conformance" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", missing)
    assert main(["conformance", "my_factories:good"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "runport: error: usage: the conformance suite is not installed: "
        "pip install 'runport[conformance]'\n"
    )
