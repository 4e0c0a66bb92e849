"""``runport record`` keeps what the provider did itself — server tool calls and results (their
provider metadata too), citations, generated files and their previews — so the recorded
scenario replays to the receipt the run gave."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from runport.application import execute_contract
from runport.cli._errors import CliError
from runport.cli._record import comparable, kept_unknown, provided_event
from runport.contracts import ErrorCode, ExecutionReceipt, FileDelta
from runport.core import MAX_SCALAR_BYTES, load_contract, load_scenario
from runport.mock import ScriptedRuntime

Cli = Callable[..., subprocess.CompletedProcess[str]]
DATA = Path(__file__).with_name("data")
QUICK = DATA / "quick"
PROVIDED = DATA / "provided" / "scenario.yaml"


def played(scenario: Path) -> ExecutionReceipt:
    contract = load_contract(QUICK / "contract.yaml")
    runtime = ScriptedRuntime(load_scenario(scenario))
    result = execute_contract(contract, runtime, inputs={"topic": "rivers"}).result
    assert result is not None
    return result


def test_a_recording_keeps_every_kind_and_replays_to_the_same_receipt(
    runport: Cli, tmp_path: Path
) -> None:
    out = tmp_path / "recorded.yaml"
    done = runport(
        "record", QUICK / "contract.yaml", "--input", QUICK / "input.json",
        "--scenario", PROVIDED, "--out", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    recorded = yaml.safe_load(out.read_text(encoding="utf-8"))
    events = recorded["turns"][0]["events"]
    assert [event["kind"] for event in events] == [
        "server_tool_call", "server_tool_result", "delta", "delta", "citation", "citation",
        "file_delta", "file_delta", "usage", "finish",
    ]  # fmt: skip
    assert events[1]["provider_metadata"] == {"anthropic": {"type": "web_search_tool_result"}}
    assert "name" not in events[1]  # a result is named by its call
    live = played(PROVIDED)
    assert len(live.server_tools or []) == 2
    assert len(live.citations or []) == 2
    assert len(live.files or []) == 1
    assert comparable(played(out)) == comparable(live)


def test_a_file_too_long_for_a_scenario_string_is_refused_coded() -> None:
    data = "A" * (MAX_SCALAR_BYTES + 4)
    with pytest.raises(CliError) as raised:
        provided_event(FileDelta(media_type="application/octet-stream", data=data))
    assert raised.value.code == ErrorCode.DATA_INVALID


def test_kept_unknown_objects_are_counted_not_compared() -> None:
    receipt = played(PROVIDED)
    kept = receipt.model_copy(
        update={"provider_metadata": {"gemini": {"unknown": [{"fileData": {}}, {"x": 1}]}}}
    )
    assert kept_unknown(kept) == 2
    assert kept_unknown(receipt) == 0
    assert comparable(kept) == comparable(receipt)
