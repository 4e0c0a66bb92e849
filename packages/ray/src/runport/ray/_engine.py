"""``ray_batch``: the rows of a batch sharded over Ray tasks (docs/batch.md).

The driver reads the rows, cuts them into shards and keeps a bounded number of shards in
flight as Ray tasks; each task runs the async batch's ``RowRunner`` over its shard on the
worker's own event loop and returns the shard's lines. Only the driver writes the output file,
through the same ``OutputFile`` as the local engine, so the lines, the resume (by row and
request fingerprint, a torn last line discarded, another contract's file refused) and the
summary are the same; a killed batch loses at most the shards in flight.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import ray
from runport.application import BatchLine, BatchRow, BatchSummary
from runport.application._batch._output import OutputFile
from runport.application._batch._run import (
    AnyAdapter,
    Ledger,
    RowRunner,
    Rows,
    adapter_for_rows,
    row_iterator,
)
from runport.application._envelope import ContractSource, resolve_contract
from runport.contracts import fingerprint
from runport.core import Contract

Ran = tuple[BatchLine, float] | None

SHARD_ROWS = 256


def _shard(
    contract: Contract,
    rows: list[BatchRow],
    adapter: Callable[[], AnyAdapter],
    fresh_per_row: bool,
    done: set[tuple[int, str | None]],
    concurrency: int,
) -> list[Ran]:
    """One shard on a worker: the rows through the async batch's runner, ``concurrency`` at a
    time, in the shard's order."""
    source: Any = adapter if fresh_per_row else adapter()
    runner = RowRunner(contract, adapter_for_rows(source), done)

    async def run_all() -> list[Ran]:
        gate = asyncio.Semaphore(concurrency)

        async def one(row: BatchRow) -> Ran:
            async with gate:
                return await runner.run(row)

        return list(await asyncio.gather(*(one(row) for row in rows)))

    return asyncio.run(run_all())


_remote_shard = ray.remote(_shard)


def _shards(rows: Iterator[BatchRow], size: int) -> Iterator[list[BatchRow]]:
    while shard := list(itertools.islice(rows, size)):
        yield shard


def start_ray() -> None:
    """Join the cluster ``RAY_ADDRESS`` names, or start a local instance that stays on this
    machine (loopback only, no dashboard, no usage reporting)."""
    if ray.is_initialized():
        return
    if os.environ.get("RAY_ADDRESS"):
        ray.init()
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)


def ray_batch(
    contract: ContractSource,
    rows: Rows,
    adapter: Callable[[], AnyAdapter],
    *,
    out: str | os.PathLike[str],
    concurrency: int = 8,
    on_line: Callable[[BatchLine], None] | None = None,
    fresh_per_row: bool = True,
    shard_rows: int = SHARD_ROWS,
    shards_in_flight: int | None = None,
) -> BatchSummary:
    """``run_batch`` with the rows sharded over Ray tasks; the same output file and summary.

    ``adapter`` is a factory, called on the workers: once per row when ``fresh_per_row`` (a
    mock that plays its scenario from the first turn for each row), else once per shard (an
    adapter with a connection pool). ``concurrency`` rows run at once in each shard. Joins
    the cluster ``ray.init`` was given (or ``RAY_ADDRESS`` names), else starts a local one.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number ≥ 1, not {concurrency!r}")
    if shard_rows < 1:
        raise ValueError(f"shard_rows must be at least 1, not {shard_rows!r}")
    resolved = resolve_contract(contract)
    source = row_iterator(rows)
    output = OutputFile(out, fingerprint(resolved))
    start_ray()
    cpus = ray.available_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
    in_flight = shards_in_flight or max(2, 2 * int(cpus))
    ledger = Ledger(output, on_line)
    interrupted = True
    pending: list[Any] = []
    contract_ref = ray.put(resolved)
    try:
        for shard in itertools.chain(_shards(source, shard_rows), [None]):
            if shard is not None:
                indexes = {row.index for row in shard}
                keys = {key for key in output.done.keys if key[0] in indexes}
                pending.append(
                    _remote_shard.remote(
                        contract_ref, shard, adapter, fresh_per_row, keys, concurrency
                    )
                )
            while pending and (len(pending) >= in_flight or shard is None):
                ready, pending = ray.wait(pending, num_returns=1)
                for ran in ray.get(ready[0]):
                    ledger.take(ran)
        interrupted = False
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        summary = ledger.close(interrupted=interrupted)
    return summary
