"""``ray_batch`` on a local Ray instance (2 CPUs, loopback only): the local engine's lines,
resume and refusals, with the rows sharded over Ray tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from runport.application import BatchOutputError, run_batch  # noqa: E402
from runport.core import load_contract, load_scenario  # noqa: E402
from runport.mock import AsyncScriptedRuntime  # noqa: E402
from runport.ray import ray_batch  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
QUICK = ROOT / "examples" / "quickstart"
CONTRACT = load_contract(QUICK / "contract.yaml")
SCENARIO = load_scenario(QUICK / "scenario.yaml")


def fresh() -> AsyncScriptedRuntime:
    return AsyncScriptedRuntime(SCENARIO)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    context = ray.init(
        num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False
    )
    try:
        yield context.address_info["address"]
    finally:
        ray.shutdown()


def write_rows(path: Path, count: int, extra: str = "") -> Path:
    path.write_text(
        "".join(json.dumps({"inputs": {"topic": f"topic {i}"}}) + "\n" for i in range(count))
        + extra,
        encoding="utf-8",
    )
    return path


def by_row(path: Path) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for text in path.read_text(encoding="utf-8").splitlines():
        line = json.loads(text)
        assert line["row"] not in found, f"row {line['row']} twice"
        found[line["row"]] = line
    return found


def test_a_thousand_rows_give_the_local_engines_lines(cluster: str, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 1000, "not json\n")
    local, sharded = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    expected = run_batch(CONTRACT, rows, fresh, out=local)
    summary = ray_batch(CONTRACT, rows, fresh, out=sharded, shard_rows=128)
    assert by_row(sharded) == by_row(local)
    assert sorted(by_row(sharded)) == list(range(1001))
    assert (summary.rows, summary.ok, summary.failed_by_code) == (
        expected.rows,
        expected.ok,
        expected.failed_by_code,
    )


def test_a_torn_partial_output_resumes_without_duplicates(cluster: str, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 300)
    whole = tmp_path / "whole.jsonl"
    run_batch(CONTRACT, rows, fresh, out=whole)
    out = tmp_path / "out.jsonl"
    kept = whole.read_bytes().splitlines(keepends=True)[:120]
    out.write_bytes(b"".join(kept) + b'{"row": 7, "ok"')
    summary = ray_batch(CONTRACT, rows, fresh, out=out, shard_rows=64)
    assert by_row(out) == by_row(whole)
    assert (summary.skipped, summary.ran, summary.torn_lines_discarded) == (120, 180, 15)


def test_another_contracts_output_is_refused(cluster: str, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 3)
    out = tmp_path / "out.jsonl"
    run_batch(CONTRACT, rows, fresh, out=out)
    before = out.read_bytes()
    other = CONTRACT.model_copy(update={"id": "another.contract"})
    with pytest.raises(BatchOutputError, match="another contract"):
        ray_batch(other, rows, fresh, out=out)
    assert out.read_bytes() == before


def test_the_cli_engine_joins_the_cluster_ray_address_names(cluster: str, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 200)
    out = tmp_path / "out.jsonl"
    argv = [sys.executable, "-m", "runport.cli", "batch", str(QUICK / "contract.yaml")]
    argv += ["--inputs", str(rows), "--scenario", str(QUICK / "scenario.yaml")]
    argv += ["--out", str(out), "--engine", "ray"]
    env = {**os.environ, "RAY_ADDRESS": cluster, "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert sorted(by_row(out)) == list(range(200))
    local = tmp_path / "local.jsonl"
    run_batch(CONTRACT, rows, fresh, out=local)
    assert by_row(out) == by_row(local)
