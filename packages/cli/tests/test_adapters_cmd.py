"""``runport adapters``: every installed adapter listed, none able to break the listing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runport.cli._main import main

QUICK = Path(__file__).with_name("data") / "quick"

PLUGINS = """
from runport.contracts import AdapterDescriptor
from runport.ports import RuntimeAdapter


class Fine(RuntimeAdapter):
    def descriptor(self):
        return AdapterDescriptor(id="fine-runtime", version="2.0.0", capabilities=["text"])

    def execute(self, request):
        raise NotImplementedError


def fine():
    return Fine()


def misconfigured():
    raise RuntimeError("set FINE_API_KEY")


def not_an_adapter():
    return object()
"""

ENTRY_POINTS = {
    "fine": "test_plugins:fine",
    "misconfigured": "test_plugins:misconfigured",
    "not-an-adapter": "test_plugins:not_an_adapter",
    "missing": "no_such_module:create",
}


def in_process(*args: str | Path, capsys: pytest.CaptureFixture[str]) -> str:
    status = main(["adapters", *map(str, args)])
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def _rows(stdout: str) -> dict[str, str]:
    return {line.split()[0]: line for line in stdout.splitlines()}


def test_the_mock_is_listed_and_needs_a_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    mock = _rows(in_process(capsys=capsys))["mock"]
    assert "runport-mock 0.1.0" in mock
    assert mock.endswith("not started: needs --scenario")


def test_with_a_scenario_the_mock_shows_its_descriptor(
    capsys: pytest.CaptureFixture[str],
) -> None:
    mock = _rows(in_process("--scenario", QUICK / "scenario.yaml", capsys=capsys))["mock"]
    assert mock.endswith("runport-mock 0.1.0 [streaming, structured_output, text, tool_calls]")


def test_json_lists_descriptors_and_notes(capsys: pytest.CaptureFixture[str]) -> None:
    out = in_process("--json", "--scenario", QUICK / "scenario.yaml", capsys=capsys)
    [mock] = [row for row in json.loads(out) if row["name"] == "mock"]
    assert mock["descriptor"]["id"] == "runport-mock"
    assert mock["distribution"].startswith("runport-mock ")
    assert mock["note"] is None


def test_a_broken_plugin_is_listed_with_its_reason_not_a_traceback(
    with_plugins: Callable[..., Any],
) -> None:
    result = with_plugins(PLUGINS, ENTRY_POINTS)("adapters")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    rows = _rows(result.stdout)
    assert rows["fine"].endswith("fine-runtime 2.0.0 [text]")
    assert "test-plugins 0.1" in rows["fine"]
    assert rows["misconfigured"].endswith(
        "not started: cannot start without options: set FINE_API_KEY"
    )
    assert "returned object" in rows["not-an-adapter"]
    assert "cannot be loaded: ModuleNotFoundError" in rows["missing"]
    assert "mock" in rows


FORWARDING = """
def configured(*, base_url=None):
    raise ValueError("set FORWARD_BASE_URL")


def forwarding(**options):  # the shape of a plugin that passes its options on
    return configured(**options)
"""


@pytest.mark.parametrize("scenario", [(), ("--scenario", QUICK / "scenario.yaml")])
def test_a_factory_taking_any_options_shows_its_own_error(
    with_plugins: Callable[..., Any], scenario: tuple[str | Path, ...]
) -> None:
    result = with_plugins(FORWARDING, {"forwarding": "test_plugins:forwarding"})(
        "adapters", *scenario
    )
    assert result.returncode == 0, result.stderr
    row = _rows(result.stdout)["forwarding"]
    assert row.endswith("not started: cannot start without options: set FORWARD_BASE_URL")
