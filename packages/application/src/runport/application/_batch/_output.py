"""A batch's output file: one JSON line per row, appended and flushed as each row ends, and
read back to resume (docs/batch.md).

Every line's envelope carries the contract's fingerprint (``fingerprints.contract``) and, when
the row compiled, the request's (``fingerprints.request``): resuming skips a row whose
``(row, request)`` is already there, and refuses a file written for another contract.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runport.application._batch._summary import BatchSummary, Tally
from runport.application._envelope import ContractSource, resolve_contract
from runport.contracts import ErrorCode, OperationEnvelope, fingerprint


class BatchOutputError(Exception):
    """An output file the batch must not append to (another contract's, or not a batch's)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = ErrorCode.DATA_INVALID
        self.message = message


@dataclass(frozen=True)
class BatchLine:
    """One output line: the row's index, whether it succeeded, and its envelope."""

    row: int
    ok: bool
    envelope: OperationEnvelope

    def to_json(self) -> dict[str, Any]:
        return {"row": self.row, "ok": self.ok, "envelope": self.envelope.model_dump(mode="json")}


def line_bytes(line: BatchLine) -> bytes:
    """The line as written: compact JSON, newline-terminated."""
    head = b'{"row":%d,"ok":%s,"envelope":' % (line.row, b"true" if line.ok else b"false")
    return head + line.envelope.model_dump_json().encode("utf-8") + b"}\n"


def row_key(row: int, envelope: dict[str, Any]) -> tuple[int, str | None]:
    """What resuming compares: the row's index and its request's fingerprint (``None`` for a
    row that never made a request)."""
    return row, (envelope.get("fingerprints") or {}).get("request")


@dataclass
class Done:
    """What an output file already holds: the rows to skip, and their envelopes (as JSON)."""

    keys: set[tuple[int, str | None]] = field(default_factory=set)
    envelopes: list[dict[str, Any]] = field(default_factory=list)
    torn: int = 0


class OutputFile:
    """The output file, opened to append; every line is written whole, unbuffered, so a killed
    batch leaves every finished row on disk and at most one torn last line."""

    def __init__(self, path: str | os.PathLike[str], contract_fingerprint: str) -> None:
        self.path = Path(path)
        self.contract = contract_fingerprint
        self.done = self._read()
        self._handle = self.path.open("ab", buffering=0)

    def _read(self) -> Done:
        done = Done()
        if not self.path.exists():
            return done
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            done.torn = len(data) - end  # a kill mid-write: the row is run again
            with self.path.open("r+b") as handle:
                handle.truncate(end)
        for number, text in enumerate(data[:end].splitlines(), start=1):
            if not text.strip():
                continue
            row, envelope = self._parse(number, text)
            done.keys.add(row_key(row, envelope))
            done.envelopes.append(envelope)
        return done

    def _parse(self, number: int, text: bytes) -> tuple[int, dict[str, Any]]:
        where = f"output file {self.path}, line {number}"
        try:
            line = json.loads(text)
        except ValueError:
            raise BatchOutputError(f"{where} is not JSON: not a batch's output") from None
        envelope = line.get("envelope") if isinstance(line, dict) else None
        row = line.get("row") if isinstance(line, dict) else None
        if not isinstance(envelope, dict) or not isinstance(row, int):
            raise BatchOutputError(f"{where} is not a batch line ({{row, ok, envelope}})")
        written_for = (envelope.get("fingerprints") or {}).get("contract")
        if written_for != self.contract:
            raise BatchOutputError(
                f"{where} was written for another contract (fingerprint {written_for}, this "
                f"contract's is {self.contract}): choose another --out, or remove the file"
            )
        return row, envelope

    def write(self, line: BatchLine) -> None:
        self._handle.write(line_bytes(line))

    def close(self) -> None:
        self._handle.close()


class BatchOutput:
    """Where a batch's finished rows go, whichever engine ran them: the output file ``out``
    (opened to append, resumed if it exists), the tally the summary is made of, and the
    caller's ``on_line``.

    Opening reads what ``out`` already holds (:attr:`done`, the keys a :class:`RowRunner` skips),
    discards a torn last line, and refuses a file written for another contract with
    :class:`BatchOutputError`. An engine that runs rows elsewhere (``runport.ray``) hands each
    outcome to :meth:`take` as it arrives and ends with :meth:`close`.
    """

    def __init__(
        self,
        contract: ContractSource,
        out: str | os.PathLike[str],
        *,
        on_line: Callable[[BatchLine], None] | None = None,
    ) -> None:
        self.contract = resolve_contract(contract)
        self._file = OutputFile(out, fingerprint(self.contract))
        self.on_line = on_line
        self.tally = Tally()
        for envelope in self._file.done.envelopes:
            self.tally.add(OperationEnvelope.model_validate(envelope), None)
        self.skipped = 0

    @property
    def path(self) -> Path:
        return self._file.path

    @property
    def done(self) -> set[tuple[int, str | None]]:
        """The ``(row, request fingerprint)`` of every row already in the file when it opened."""
        return self._file.done.keys

    def take(self, ran: tuple[BatchLine, float] | None) -> None:
        """A row's outcome from :meth:`RowRunner.run`: its line and latency, written at once,
        or ``None`` when the row was already done."""
        if ran is None:
            self.skipped += 1
            return
        line, latency = ran
        self._file.write(line)
        self.tally.add(line.envelope, latency)
        if self.on_line is not None:
            self.on_line(line)

    def close(self, *, interrupted: bool) -> BatchSummary:
        """Close the file and write the summary beside it (``OUT.summary.json``)."""
        self._file.close()
        summary = self.tally.summary(
            skipped=self.skipped, torn=self._file.done.torn, interrupted=interrupted
        )
        summary.write(BatchSummary.path_for(self._file.path))
        return summary
