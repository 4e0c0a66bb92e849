"""What one mock ``execute_contract`` on the quickstart costs, in µs of CPU time.

The call a batch repeats per row: compile the quickstart contract with its input, play the
quickstart scenario through a fresh ``ScriptedRuntime`` (a batch gives each row its own, so
every row plays the scenario from its first turn) and build the envelope. Unstreamed and
streamed. Time is the process's CPU time, median over interleaved rounds, so other processes
sharing the cores do not count. Bar (issue 15): ≤ 80 µs per unstreamed call.

    .venv/bin/python benchmarks/execute_contract.py [--rounds 9] [--calls 2000]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from runport.application import execute_contract
from runport.contracts import StreamEvent
from runport.core import load_contract, load_scenario
from runport.mock import ScriptedRuntime

QUICKSTART = Path(__file__).resolve().parent.parent / "examples" / "quickstart"
CONTRACT = load_contract(QUICKSTART / "contract.yaml")
SCENARIO = load_scenario(QUICKSTART / "scenario.yaml")
INPUTS = json.loads((QUICKSTART / "input.json").read_text(encoding="utf-8"))["inputs"]


def _ignore(event: StreamEvent) -> None:
    del event


def unstreamed() -> None:
    envelope = execute_contract(CONTRACT, ScriptedRuntime(SCENARIO), inputs=INPUTS)
    assert envelope.ok


def streamed() -> None:
    envelope = execute_contract(
        CONTRACT, ScriptedRuntime(SCENARIO), inputs=INPUTS, on_event=_ignore
    )
    assert envelope.ok


def per_call_us(work: Callable[[], None], calls: int) -> float:
    gc.collect()
    start = time.process_time()
    for _ in range(calls):
        work()
    return (time.process_time() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    contenders = {"unstreamed": unstreamed, "streamed": streamed}
    for work in contenders.values():
        per_call_us(work, 200)  # warm: the contract's schemas are checked once, here
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, work in contenders.items():
            samples[name].append(per_call_us(work, args.calls))
    for name, values in samples.items():
        print(f"{name:<11} {statistics.median(values):8.1f} µs/call (CPU, median of {args.rounds})")


if __name__ == "__main__":
    main()
