"""A batch's output file: one JSON line per row, appended and flushed as each row ends, and
read back to resume (docs/batch.md).

Every line's envelope carries the contract's fingerprint (``fingerprints.contract``) and, when
the row compiled, the request's (``fingerprints.request``): resuming skips a row whose
``(row, request)`` is already there, and refuses a file written for another contract.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from runport.application._batch._summary import BatchSummary, Tally
from runport.application._contract import ContractSource, resolve_contract
from runport.contracts import ErrorCode, OperationEnvelope, fingerprint
from runport.core import JsonLimitError, parse_json_text


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


def row_key(row: int, envelope: OperationEnvelope) -> tuple[int, str | None]:
    """What resuming compares: the row's index and its request's fingerprint (``None`` for a
    row that never made a request)."""
    return row, envelope.fingerprints.get("request")


def _torn_line(tail: bytes) -> bool:
    """Whether ``tail`` can be what a kill leaves of a line being written (JSON's blanks
    allowed, as in a line another writer of the format spaced out)."""
    head = b"".join(tail[: 4 * len(LINE_HEAD)].split())[: len(LINE_HEAD)]
    return head.startswith(LINE_HEAD) or LINE_HEAD.startswith(head)


LINE_HEAD: Final = b'{"row":'
"""How every line a batch writes begins: a torn line with nothing whole before it must begin
so too (or be cut inside it) to be taken for a kill mid-write rather than for another file."""


@dataclass
class Done:
    """What an output file already holds: the rows to skip, and their envelopes."""

    keys: set[tuple[int, str | None]] = field(default_factory=set)
    envelopes: list[OperationEnvelope] = field(default_factory=list)
    torn: int = 0


class OutputFile:
    """The output file, opened to append; every line is written whole, unbuffered, so a killed
    batch leaves every finished row on disk and at most one torn last line.

    Nothing is written to the file — not even the torn last line cut — until every whole line
    in it has been read as a line of this contract's batch: any other file is refused as it
    was found.
    """

    def __init__(self, path: str | os.PathLike[str], contract_fingerprint: str) -> None:
        self.path = Path(path)
        self.contract = contract_fingerprint
        self.done, whole = self._read()
        if self.done.torn:
            with self.path.open("r+b") as handle:
                handle.truncate(whole)
        self._handle = self.path.open("ab", buffering=0)

    def _read(self) -> tuple[Done, int]:
        """What the file holds, and the length of its whole lines (what a torn line is cut to)."""
        done = Done()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return done, 0
        except OSError as error:
            raise BatchOutputError(
                f"output file {self.path} cannot be read ({type(error).__name__})"
            ) from None
        end = data.rfind(b"\n") + 1
        for number, text in enumerate(data[:end].splitlines(), start=1):
            if not text.strip():
                continue
            row, envelope = self._parse(number, text)
            done.keys.add(row_key(row, envelope))
            done.envelopes.append(envelope)
        torn = data[end:]
        if torn and not done.envelopes and not _torn_line(torn):
            raise BatchOutputError(
                f"output file {self.path} holds no batch line: not a batch's output (choose "
                "another --out, or remove the file)"
            )
        done.torn = len(torn)  # a kill mid-write: the row is run again
        return done, end

    def _parse(self, number: int, text: bytes) -> tuple[int, OperationEnvelope]:
        where = f"output file {self.path}, line {number}"
        try:
            parsed, line = parse_json_text(text.decode("utf-8"))
        except UnicodeDecodeError:
            raise BatchOutputError(f"{where} is not UTF-8 text: not a batch's output") from None
        except JsonLimitError as error:
            raise BatchOutputError(f"{where}: {error.message}: not a batch's output") from None
        if not parsed:
            raise BatchOutputError(f"{where} is not JSON: not a batch's output")
        envelope = line.get("envelope") if isinstance(line, dict) else None
        row = line.get("row") if isinstance(line, dict) else None
        if not isinstance(envelope, dict) or type(row) is not int:
            raise BatchOutputError(f"{where} is not a batch line ({{row, ok, envelope}})")
        fingerprints = envelope.get("fingerprints")
        written_for = fingerprints.get("contract") if isinstance(fingerprints, dict) else None
        if written_for != self.contract:
            raise BatchOutputError(
                f"{where} was written for another contract (fingerprint {written_for}, this "
                f"contract's is {self.contract}): choose another --out, or remove the file"
            )
        try:
            return row, OperationEnvelope.model_validate(envelope)
        except ValidationError:
            raise BatchOutputError(
                f"{where} is not a batch line (its envelope is not an operation envelope)"
            ) from None

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
            self.tally.add(envelope, None)
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
        where = BatchSummary.path_for(self._file.path)
        try:
            summary.write(where)
        except OSError as error:
            raise BatchOutputError(
                f"summary file {where} cannot be written ({error.strerror or type(error).__name__})"
            ) from None
        return summary
