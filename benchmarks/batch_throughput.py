"""Batch executions per second: the local engine on the mock, the local engine against an
OpenAI-compatible server on 127.0.0.1, and the Ray engine on the mock beside them.

Each figure is rows ÷ wall-clock seconds for a whole ``run_batch`` (or ``ray_batch``) into a
fresh output file: reading the rows, running each, writing and flushing each line, and the
summary. The mock gives every row a fresh ``AsyncScriptedRuntime`` of the quickstart scenario;
the loopback server is the conformance suite's ``ScriptedUpstream`` answering every request
with the ``plain_text`` case. Ray runs on a local instance started here (loopback only); its
start-up is not counted. Bar (issue 15): ≥ 5,000 executions/s for the local engine on the mock.

    .venv/bin/python benchmarks/batch_throughput.py [--rows 20000] [--http-rows 2000] [--no-ray]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from runport.application import BatchSummary, run_batch
from runport.core import load_contract, load_scenario
from runport.mock import AsyncScriptedRuntime

QUICKSTART = Path(__file__).resolve().parent.parent / "examples" / "quickstart"
CONTRACT = load_contract(QUICKSTART / "contract.yaml")
SCENARIO = load_scenario(QUICKSTART / "scenario.yaml")


def fresh() -> AsyncScriptedRuntime:
    return AsyncScriptedRuntime(SCENARIO)


def rows_file(folder: Path, count: int) -> Path:
    path = folder / f"rows-{count}.jsonl"
    path.write_text(
        "".join(json.dumps({"inputs": {"topic": f"topic {i}"}}) + "\n" for i in range(count)),
        encoding="utf-8",
    )
    return path


def rate(label: str, rows: int, batch: Callable[[Path], BatchSummary], folder: Path) -> None:
    out = folder / f"{label.replace(' ', '-')}.jsonl"
    started = time.perf_counter()
    summary = batch(out)
    seconds = time.perf_counter() - started
    assert summary.ok == rows, summary
    print(f"{label:<34} {rows:>7} rows {seconds:8.2f} s {rows / seconds:10,.0f} rows/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--http-rows", type=int, default=2_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        rows = rows_file(folder, args.rows)
        run_batch(CONTRACT, rows_file(folder, 500), fresh, out=folder / "warm.jsonl")
        rate(
            "local engine, mock",
            args.rows,
            lambda out: run_batch(CONTRACT, rows, fresh, out=out, concurrency=args.concurrency),
            folder,
        )
        http(folder, args.http_rows, args.concurrency)
        if not args.no_ray:
            sharded(folder, rows, args.rows, args.concurrency)


def http(folder: Path, count: int, concurrency: int) -> None:
    from runport.conformance import CASES, ScriptedUpstream
    from runport.openai import OpenAIChatAdapter

    plain_text = next(case for case in CASES if case.name == "plain_text")
    upstream = ScriptedUpstream([plain_text] * count, pacing="off")
    rows = rows_file(folder, count)
    try:
        adapter = OpenAIChatAdapter(base_url=upstream.base_url, model="tiny", api_key="sk-bench")
        rate(
            "local engine, loopback OpenAI",
            count,
            lambda out: run_batch(CONTRACT, rows, adapter, out=out, concurrency=concurrency),
            folder,
        )
    finally:
        upstream.close()


def sharded(folder: Path, rows: Path, count: int, concurrency: int) -> None:
    import ray

    from runport.ray import ray_batch

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        ray_batch(CONTRACT, rows_file(folder, 500), fresh, out=folder / "ray-warm.jsonl")
        rate(
            "ray engine (local, 2 CPUs), mock",
            count,
            lambda out: ray_batch(CONTRACT, rows, fresh, out=out, concurrency=concurrency),
            folder,
        )
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
