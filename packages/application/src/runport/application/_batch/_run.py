"""``abatch`` and ``run_batch``: a contract over many rows, on the async path (docs/batch.md).

A fixed number of worker tasks take rows from one iterator, so at most ``concurrency`` rows
are in flight and the rows file is read as it is needed. Each finished row is written to the
output file at once; the file is what resuming reads, so a kill loses only the rows in flight.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable

from runport.application._batch._output import BatchLine, BatchOutput
from runport.application._batch._rows import read_rows
from runport.application._batch._runner import AdapterSource, RowRunner
from runport.application._batch._source import PipedRows, RowSource, waits
from runport.application._batch._summary import BatchSummary
from runport.application._contract import ContractSource

Rows = str | os.PathLike[str] | Iterable[object]
"""A ``.jsonl``/``.csv``/``.parquet`` path, or rows in memory (mappings in the row shape, or
``BatchRow``)."""


def row_source(rows: Rows) -> RowSource:
    if isinstance(rows, str | os.PathLike) and waits(rows):
        return PipedRows(read_rows(rows))
    return RowSource(read_rows(rows))


def check_concurrency(concurrency: int) -> None:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number ≥ 1, not {concurrency!r}")


async def abatch(
    contract: ContractSource,
    rows: Rows,
    adapter: AdapterSource,
    *,
    out: str | os.PathLike[str],
    concurrency: int = 8,
    on_line: Callable[[BatchLine], None] | None = None,
) -> BatchSummary:
    """Run ``contract`` once per row into ``out`` (JSON lines) and return the summary, also
    written to ``OUT.summary.json`` beside it (docs/batch.md).

    Resumable: rows already in ``out`` (same row, same request fingerprint) are skipped, a
    torn last line is discarded, and a file written for another contract is refused with
    :class:`BatchOutputError`. A rows file that cannot be read at all raises
    :class:`BatchRowsError` before ``out`` is touched. A row that cannot be run is a failed
    line; an adapter's failure is in its row's envelope. Cancelling the task stops the batch
    with every finished row written and the summary marked ``interrupted``; ``CancelledError``
    propagates.
    """
    check_concurrency(concurrency)
    source = row_source(rows)
    output = BatchOutput(contract, out, on_line=on_line)
    runner = RowRunner(output.contract, adapter, output.done)
    return await _drive(runner, source, output, concurrency)


async def _drive(
    runner: RowRunner, rows: RowSource, output: BatchOutput, concurrency: int
) -> BatchSummary:
    async def worker() -> None:
        while (row := await rows.take()) is not None:
            output.take(await runner.run(row))

    rows.start()
    workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
    interrupted = True
    try:
        await asyncio.gather(*workers)
        interrupted = False
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        summary = output.close(interrupted=interrupted)
    return summary


def run_batch(
    contract: ContractSource,
    rows: Rows,
    adapter: AdapterSource,
    *,
    out: str | os.PathLike[str],
    concurrency: int = 8,
    on_line: Callable[[BatchLine], None] | None = None,
) -> BatchSummary:
    """``abatch`` for code with no event loop of its own (it runs one)."""
    return asyncio.run(
        abatch(contract, rows, adapter, out=out, concurrency=concurrency, on_line=on_line)
    )
