"""``abatch`` and ``run_batch``: a contract over many rows, on the async path (docs/batch.md).

A fixed number of worker tasks take rows from one iterator, so at most ``concurrency`` rows
are in flight and the rows file is read as it is needed. Each finished row is written to the
output file at once; the file is what resuming reads, so a kill loses only the rows in flight.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from runport.application._async import aexecute_request
from runport.application._batch._output import BatchLine, OutputFile
from runport.application._batch._rows import BatchRow, read_rows, rows_of
from runport.application._batch._source import PipedRows, RowSource, waits
from runport.application._batch._summary import BatchSummary, Tally
from runport.application._bridges import to_async
from runport.application._envelope import OPERATION, ContractSource, prepare, resolve_contract
from runport.contracts import OperationEnvelope, fingerprint
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter

AnyAdapter = AsyncRuntimeAdapter | RuntimeAdapter
AdapterSource = AnyAdapter | Callable[[], AnyAdapter]
"""An adapter every row shares, or a factory called once per row (a fresh mock per row plays
its scenario from the first turn)."""

Rows = str | os.PathLike[str] | Iterable[object]
"""A ``.jsonl``/``.csv`` path, or rows in memory (mappings in the row shape, or ``BatchRow``)."""


def _as_async(adapter: AnyAdapter) -> AsyncRuntimeAdapter:
    return adapter if isinstance(adapter, AsyncRuntimeAdapter) else to_async(adapter)


def adapter_for_rows(source: AdapterSource) -> Callable[[], AsyncRuntimeAdapter]:
    """One async adapter per row: the shared one, or a fresh one from the factory."""
    if isinstance(source, AsyncRuntimeAdapter | RuntimeAdapter):
        shared = _as_async(source)
        return lambda: shared
    return lambda: _as_async(source())


def row_iterator(rows: Rows) -> Iterator[BatchRow]:
    """The rows of a file (read as they are needed) or of values in memory."""
    return read_rows(rows) if isinstance(rows, str | os.PathLike) else rows_of(rows)


def row_source(rows: Rows) -> RowSource:
    if isinstance(rows, str | os.PathLike) and waits(rows):
        return PipedRows(read_rows(rows))
    return RowSource(row_iterator(rows))


@dataclass
class RowRunner:
    """Runs one row into its output line, or skips it when ``done`` already holds it.

    The driver of a local batch and each Ray worker use the same runner, so a row's line is
    the same whichever engine ran it.
    """

    contract: Contract
    adapters: Callable[[], AsyncRuntimeAdapter]
    done: set[tuple[int, str | None]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.fingerprint = fingerprint(self.contract)
        self._rows_done = {row for row, _ in self.done}

    def _line(self, row: BatchRow, envelope: OperationEnvelope, request: str | None) -> BatchLine:
        fingerprints = {**envelope.fingerprints, "contract": self.fingerprint}
        if request is not None:
            fingerprints.setdefault("request", request)
        marked = envelope.model_copy(update={"fingerprints": fingerprints})
        return BatchLine(row.index, envelope.ok, marked)

    async def run(self, row: BatchRow) -> tuple[BatchLine, float] | None:
        """The row's line and its latency (s), or ``None`` when it is already in the output."""
        started = time.perf_counter()
        if row.problem is not None:
            if (row.index, None) in self.done:
                return None
            failed = OperationEnvelope(operation=OPERATION, ok=False, diagnostics=[row.problem])
            return self._line(row, failed, None), time.perf_counter() - started
        adapter = self.adapters()
        prepared = prepare(self.contract, adapter, row.inputs, row.context, row.fixture_output)
        if isinstance(prepared, OperationEnvelope):
            if (row.index, None) in self.done:
                return None
            return self._line(row, prepared, None), time.perf_counter() - started
        request = None
        if row.index in self._rows_done:
            request = fingerprint(prepared.interaction)
            if (row.index, request) in self.done:
                return None
        envelope = await aexecute_request(prepared, adapter)
        if request is None and envelope.result is None:
            request = fingerprint(prepared.interaction)
        return self._line(row, envelope, request), time.perf_counter() - started


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
    :class:`BatchOutputError`. A row that cannot be run is a failed line; an adapter's failure
    is in its row's envelope. Cancelling the task stops the batch with every finished row
    written and the summary marked ``interrupted``; ``CancelledError`` propagates.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number ≥ 1, not {concurrency!r}")
    resolved = resolve_contract(contract)
    output = OutputFile(out, fingerprint(resolved))
    runner = RowRunner(resolved, adapter_for_rows(adapter), output.done.keys)
    return await drive(runner, row_source(rows), Ledger(output, on_line), concurrency)


class Ledger:
    """Where finished rows go, whichever engine ran them: the output file, the tally, the
    caller's ``on_line``; and the summary at the end."""

    def __init__(self, output: OutputFile, on_line: Callable[[BatchLine], None] | None) -> None:
        self.output = output
        self.on_line = on_line
        self.tally = Tally()
        for envelope in output.done.envelopes:
            self.tally.add(OperationEnvelope.model_validate(envelope), None)
        self.skipped = 0

    def take(self, ran: tuple[BatchLine, float] | None) -> None:
        """A row's outcome: its line and latency, or ``None`` when it was already done."""
        if ran is None:
            self.skipped += 1
            return
        line, latency = ran
        self.output.write(line)
        self.tally.add(line.envelope, latency)
        if self.on_line is not None:
            self.on_line(line)

    def close(self, *, interrupted: bool) -> BatchSummary:
        """Close the output and write the summary beside it."""
        self.output.close()
        summary = self.tally.summary(
            skipped=self.skipped, torn=self.output.done.torn, interrupted=interrupted
        )
        summary.write(BatchSummary.path_for(self.output.path))
        return summary


async def drive(
    runner: RowRunner, rows: RowSource, ledger: Ledger, concurrency: int
) -> BatchSummary:
    async def worker() -> None:
        while (row := await rows.take()) is not None:
            ledger.take(await runner.run(row))

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
        summary = ledger.close(interrupted=interrupted)
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
