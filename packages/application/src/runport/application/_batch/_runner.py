"""``RowRunner``: one row into its output line, whichever engine runs it (docs/batch.md).

The local batch runs it on its own event loop; another engine (``runport.ray``) runs it on its
workers and hands the lines to a :class:`~runport.application.BatchOutput` on the driver, so a
row's line is the same whichever engine ran it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from runport.application._batch._output import BatchLine
from runport.application._batch._rows import BatchRow
from runport.application._bridges import to_async
from runport.application._contract import ContractSource, resolve_contract
from runport.application._envelope import OPERATION, prepare
from runport.application._execute import aexecute_request
from runport.contracts import OperationEnvelope, fingerprint
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter

AnyAdapter = AsyncRuntimeAdapter | RuntimeAdapter
AdapterSource = AnyAdapter | Callable[[], AnyAdapter]
"""An adapter every row shares, or a factory called once per row (a fresh mock per row plays
its scenario from the first turn)."""

DoneKey = tuple[int, str | None]
"""What resuming compares: a row's index and its request's fingerprint (``None`` for a row
that never made a request)."""


def _as_async(adapter: AnyAdapter) -> AsyncRuntimeAdapter:
    return adapter if isinstance(adapter, AsyncRuntimeAdapter) else to_async(adapter)


def _adapter_for_rows(source: AdapterSource) -> Callable[[], AsyncRuntimeAdapter]:
    if isinstance(source, AsyncRuntimeAdapter | RuntimeAdapter):
        shared = _as_async(source)
        return lambda: shared
    return lambda: _as_async(source())


class RowRunner:
    """Runs one row of a batch into its output line, or skips it when ``done`` (the keys of
    :attr:`BatchOutput.done`) already holds it.

    ``adapter`` is one adapter every row shares, or a factory called once per row; an adapter
    with no async twin is run through ``to_async``.
    """

    def __init__(
        self, contract: ContractSource, adapter: AdapterSource, done: Iterable[DoneKey] = ()
    ) -> None:
        self.contract = resolve_contract(contract)
        self.fingerprint = fingerprint(self.contract)
        self._adapters = _adapter_for_rows(adapter)
        self._done = set(done)
        self._rows_done = {row for row, _ in self._done}

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
            if (row.index, None) in self._done:
                return None
            failed = OperationEnvelope(operation=OPERATION, ok=False, diagnostics=[row.problem])
            return self._line(row, failed, None), time.perf_counter() - started
        adapter = self._adapters()
        prepared = prepare(self.contract, adapter, row.inputs, row.context, row.fixture_output)
        if isinstance(prepared, OperationEnvelope):
            if (row.index, None) in self._done:
                return None
            return self._line(row, prepared, None), time.perf_counter() - started
        request = None
        if row.index in self._rows_done:
            request = fingerprint(prepared.interaction)
            if (row.index, request) in self._done:
                return None
        envelope = await aexecute_request(prepared, adapter)
        if request is None and envelope.result is None:
            request = fingerprint(prepared.interaction)
        return self._line(row, envelope, request), time.perf_counter() - started
