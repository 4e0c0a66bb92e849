"""What is the same for every adapter a surface builds is made once (adr/0035): the entry
points are scanned once, and the mock's scenario file is read and parsed once, when the
factory is made; every adapter it builds still plays the scenario from its first turn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import runport.application._prepared as prepared
import runport.mock._factory as mock_factory
from runport.application import adapter_factory, aexecute_contract, async_adapter_factory
from runport.mock import AsyncScriptedRuntime, ScriptedRuntime

HERE = Path(__file__).parent
EXTRACT = HERE / "contract.yaml"
INPUTS = {"text": "Delft on 2024-05-01"}
SCENARIO = """api_version: runport.mock/v1
id: once
turns:
  - events:
      - {kind: delta, text: '{"city": "Delft", "day": "2024-05-01"}'}
      - {kind: finish, finish_reason: stop}
"""


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[object]:
    calls: list[object] = []
    real: Callable[..., Any] = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


def test_the_scenario_is_parsed_once_per_factory(
    monkeypatch: pytest.MonkeyPatch, scenario_file: Path
) -> None:
    parses = counting(monkeypatch, mock_factory, "load_scenario")
    build = async_adapter_factory("mock", scenario=scenario_file)
    assert len(parses) == 1

    async def main() -> list[Any]:
        envelopes = []
        for _ in range(5):
            adapter = build()
            assert isinstance(adapter, AsyncScriptedRuntime)
            envelopes.append(await aexecute_contract(EXTRACT, adapter, inputs=INPUTS))
        return envelopes

    envelopes = asyncio.run(main())
    assert len(parses) == 1
    # every adapter played the one-turn scenario from its first turn
    assert all(envelope.ok for envelope in envelopes)
    assert (
        len({envelope.result.output_fingerprint for envelope in envelopes if envelope.result}) == 1
    )
    # the file is not read again: changing it changes nothing for this factory
    scenario_file.write_text("not: [a scenario", encoding="utf-8")
    assert isinstance(build(), AsyncScriptedRuntime)


def test_the_entry_points_are_scanned_once_per_factory(
    monkeypatch: pytest.MonkeyPatch, scenario_file: Path
) -> None:
    scans = counting(monkeypatch, prepared, "entry_points")
    build = adapter_factory("mock", scenario=scenario_file)
    made = len(scans)
    assert made == 1
    for _ in range(5):
        assert isinstance(build(), ScriptedRuntime)
    assert len(scans) == made


def test_a_prepared_factory_says_it_does_not_block(scenario_file: Path) -> None:
    assert getattr(async_adapter_factory("mock", scenario=scenario_file), "blocking", None) is False
    assert getattr(adapter_factory("mock", scenario=scenario_file), "blocking", None) is False


class _EntryPoint:
    """Enough of ``importlib.metadata.EntryPoint`` for ``prepared_factory``."""

    name = "plain"
    value = "tests:plain"
    dist = None

    def __init__(self, factory: Callable[..., object]) -> None:
        self._factory = factory

    def load(self) -> Callable[..., object]:
        return self._factory


def test_a_factory_without_prepare_is_called_per_build_and_blocks(scenario_file: Path) -> None:
    calls: list[dict[str, object]] = []

    def plain(**options: object) -> ScriptedRuntime:
        calls.append(options)
        return mock_factory.create_adapter(scenario=scenario_file)

    factory = prepared.prepared_factory(
        _EntryPoint(plain),  # type: ignore[arg-type]
        {"scenario": "x"},
        lambda adapter: adapter,
    )
    assert factory.blocking is True
    factory()
    factory()
    assert calls == [{"scenario": "x"}, {"scenario": "x"}]


def test_a_missing_scenario_is_still_refused_at_start() -> None:
    from runport.application import CatalogError

    with pytest.raises(CatalogError, match="needs a scenario file"):
        async_adapter_factory("mock")
    with pytest.raises(CatalogError):
        async_adapter_factory("no-such-adapter")
