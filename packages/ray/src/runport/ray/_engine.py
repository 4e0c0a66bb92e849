"""``ray_batch``: the rows of a batch sharded over Ray tasks (docs/batch.md).

The driver reads the rows, cuts them into shards and keeps a bounded number of shards in
flight as Ray tasks. Each task is a Ray streaming generator: it runs ``RowRunner`` over its
shard on the worker's own event loop, ``concurrency`` rows at a time, and sends every finished
row back as soon as it finishes, not when the shard ends. Only the driver writes the output
file, through the same ``BatchOutput`` as the local engine, so the lines, the resume (by row
and request fingerprint, a torn last line discarded, another contract's file refused) and the
summary are the same, and a killed batch loses at most the rows in flight: those running on a
worker and those on their way to the driver.

A task Ray retries (its worker died) runs its shard again from the start: the driver drops a
row it already wrote and sends again any row of the shard that never came back, so a retry
neither duplicates nor loses a row.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import ray
from runport.application import (
    BatchLine,
    BatchOutput,
    BatchRow,
    BatchSummary,
    RowRunner,
    read_rows,
)
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter

AdapterFactory = Callable[[], AsyncRuntimeAdapter | RuntimeAdapter]
Ran = tuple[BatchLine, float] | None
Outcome = tuple[int, Ran]
"""A row's index and what ``RowRunner.run`` made of it."""

SHARD_ROWS = 256


def _shard(
    contract: Contract,
    rows: list[BatchRow],
    adapter: AdapterFactory,
    fresh_per_row: bool,
    done: set[tuple[int, str | None]],
    concurrency: int,
) -> Iterator[list[Outcome]]:
    """One shard on a worker: its rows through the async batch's runner, ``concurrency`` at a
    time, on an event loop of its own thread; yields the rows finished since the last yield.

    The loop runs on its own thread so that a row is sent the moment it is finished even when
    rows never wait on I/O (the mock): the generator is never the one that drives the loop.
    """
    runner = RowRunner(contract, adapter if fresh_per_row else adapter(), done)
    finished: queue.SimpleQueue[Outcome | BaseException] = queue.SimpleQueue()
    waiting = iter(rows)

    async def worker() -> None:
        for row in waiting:
            try:
                finished.put((row.index, await runner.run(row)))
            except Exception as error:  # handed to the driver, which raises it
                finished.put(error)
                return

    async def run_all() -> None:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(rows)))))

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="runport-shard", daemon=True)
    thread.start()
    running = asyncio.run_coroutine_threadsafe(run_all(), loop)
    try:
        owed = len(rows)
        while owed:
            items = [finished.get()]
            while not finished.empty():
                items.append(finished.get_nowait())
            outcomes: list[Outcome] = []
            for item in items:
                if isinstance(item, BaseException):
                    raise item
                outcomes.append(item)
            owed -= len(outcomes)
            yield outcomes
    finally:
        running.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


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


class _Shards:
    """The shards in flight, each a streaming generator, and the rows each still owes."""

    def __init__(self, submit: Callable[[list[BatchRow]], Any]) -> None:
        self._submit = submit
        self.owed: dict[Any, dict[int, BatchRow]] = {}

    def add(self, rows: list[BatchRow]) -> None:
        self.owed[self._submit(rows)] = {row.index: row for row in rows}

    def next_outcomes(self) -> list[Outcome]:
        """The next rows any shard has finished (waiting for one); a shard that ended
        owing rows (a retried task that skipped what its first run sent) is sent again."""
        ready, _ = ray.wait(list(self.owed), num_returns=1)
        stream: Any = ready[0]
        owed = self.owed[stream]
        try:
            outcomes: list[Outcome] = ray.get(next(stream))
        except StopIteration:
            del self.owed[stream]
            if owed:
                self.add(list(owed.values()))
            return []
        return [outcome for outcome in outcomes if owed.pop(outcome[0], None) is not None]

    def cancel(self) -> None:
        for stream in self.owed:
            ray.cancel(stream, force=True)


def ray_batch(
    contract: Contract | str | os.PathLike[str],
    rows: str | os.PathLike[str] | Iterable[object],
    adapter: AdapterFactory,
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
    adapter with a connection pool). ``concurrency`` rows run at once in each shard, and each
    finished row reaches the output file as soon as it is done. Joins the cluster ``ray.init``
    was given (or ``RAY_ADDRESS`` names), else starts a local one.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number ≥ 1, not {concurrency!r}")
    if shard_rows < 1:
        raise ValueError(f"shard_rows must be at least 1, not {shard_rows!r}")
    source = read_rows(rows)
    output = BatchOutput(contract, out, on_line=on_line)
    start_ray()
    cpus = ray.available_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
    in_flight = shards_in_flight or max(2, 2 * int(cpus))
    contract_ref = ray.put(output.contract)

    def submit(shard: list[BatchRow]) -> Any:
        indexes = {row.index for row in shard}
        keys = {key for key in output.done if key[0] in indexes}
        return _remote_shard.remote(contract_ref, shard, adapter, fresh_per_row, keys, concurrency)

    running = _Shards(submit)
    shards = _shards(source, shard_rows)
    interrupted = True
    try:
        for shard in shards:
            running.add(shard)
            while len(running.owed) >= in_flight:
                for _, ran in running.next_outcomes():
                    output.take(ran)
        while running.owed:
            for _, ran in running.next_outcomes():
                output.take(ran)
        interrupted = False
    finally:
        running.cancel()
        summary = output.close(interrupted=interrupted)
    return summary
