"""A batch's input rows: JSONL, CSV or Parquet, each row what ``runport run --input`` reads
(docs/batch.md).

A row that cannot be used is not an exception: it becomes a ``BatchRow`` with a ``problem``, which
the batch writes as a failed line and goes on.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runport.contracts import Diagnostic, ErrorCode
from runport.core import JsonLimitError, parse_json_text

REQUEST_KEYS = frozenset({"inputs", "context", "fixture_output"})
SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet")


class BatchRowsError(ValueError):
    """A rows file the batch cannot read at all (as opposed to one bad row, which is a failed
    line): an unknown suffix, a Parquet file with no JSON form, or pyarrow not installed."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = ErrorCode.DATA_INVALID
        self.message = message


@dataclass(frozen=True)
class BatchRow:
    """One input row: its 0-based ``index`` and its values, or why it has none (``problem``)."""

    index: int
    inputs: Mapping[str, Any] = field(default_factory=dict)
    context: Mapping[str, Any] | None = None
    fixture_output: Any = None
    problem: Diagnostic | None = None


def request_parts(data: object) -> tuple[dict[str, Any], dict[str, Any] | None, Any] | str:
    """``(inputs, context, fixture_output)`` from a row or an input file, or why not.

    The request form ``{inputs, context?, fixture_output?}`` is recognised when the keys are a
    subset of those three and include ``inputs``; any other mapping is the inputs themselves.
    """
    if not isinstance(data, dict):
        return f"a row must be a JSON object, not {_kind(data)}"
    if "inputs" in data and set(data) <= REQUEST_KEYS:
        inputs, context = data["inputs"], data.get("context")
        if not isinstance(inputs, dict) or not (context is None or isinstance(context, dict)):
            return "inputs and context must be mappings"
        return inputs, context, data.get("fixture_output")
    return data, None, None


def _kind(data: object) -> str:
    return {list: "an array", str: "a string", type(None): "null", bool: "a boolean"}.get(
        type(data), "a number"
    )


def row_from(index: int, data: object) -> BatchRow:
    """The row at ``index`` for a decoded JSON value."""
    parts = request_parts(data)
    if isinstance(parts, str):
        return malformed(index, parts)
    inputs, context, fixture = parts
    return BatchRow(index, inputs, context, fixture)


def malformed(index: int, why: str) -> BatchRow:
    return BatchRow(
        index,
        problem=Diagnostic(code=ErrorCode.DATA_INVALID, message=f"row {index}: {why}"),
    )


def jsonl_rows(lines: Iterable[bytes | str]) -> Iterator[BatchRow]:
    """One row per non-blank line; a line that is not one JSON object is a malformed row."""
    index = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else line
            parsed, value = parse_json_text(text)
        except UnicodeDecodeError:
            yield malformed(index, "not UTF-8 text")
        except JsonLimitError as error:
            yield malformed(index, error.message)
        else:
            yield row_from(index, value) if parsed else malformed(index, "not a JSON document")
        index += 1


def cell_value(text: str) -> Any:
    """A CSV cell: JSON when it parses as JSON (``3``, ``true``, ``["a"]``), else the text, the
    rule ``runport run -i KEY=VALUE`` follows."""
    try:
        parsed, value = parse_json_text(text)
    except JsonLimitError:
        return text
    return value if parsed and text.strip() else text


def csv_rows(text: Iterable[str]) -> Iterator[BatchRow]:
    """One row per CSV record; the header names the inputs."""
    reader = csv.reader(text)
    header = next(reader, None)
    if header is None:
        return
    for index, record in enumerate(reader):
        if len(record) != len(header):
            yield malformed(index, f"{len(record)} field(s) where the header names {len(header)}")
            continue
        yield BatchRow(
            index, {name: cell_value(cell) for name, cell in zip(header, record, strict=True)}
        )


def read_rows(rows: str | os.PathLike[str] | Iterable[object]) -> Iterator[BatchRow]:
    """The rows of a ``.jsonl`` (or ``.ndjson``), ``.csv`` or ``.parquet`` file, read as they
    are needed; or of values in memory (``BatchRow`` objects, or values in the row shape).

    A file that cannot be read at all raises :class:`BatchRowsError` here, before any row.
    """
    if not isinstance(rows, str | os.PathLike):
        return rows_of(rows)
    source = Path(rows)
    suffix = source.suffix.lower()
    if suffix not in SUFFIXES:
        raise BatchRowsError(f"rows file {source}: expected {', '.join(SUFFIXES)}")
    if suffix == ".parquet":
        from runport.application._batch._parquet import parquet_rows

        return parquet_rows(source)
    return _file_rows(source, suffix)


def _file_rows(source: Path, suffix: str) -> Iterator[BatchRow]:
    if suffix == ".csv":
        with source.open("r", encoding="utf-8", errors="replace", newline="") as text:
            yield from csv_rows(text)
    else:
        with source.open("rb") as lines:
            yield from jsonl_rows(lines)


def rows_of(values: Iterable[object]) -> Iterator[BatchRow]:
    """Rows from values in memory: ``BatchRow`` objects, or values in the row shape."""
    for index, value in enumerate(values):
        if isinstance(value, BatchRow):
            yield value
        else:
            yield row_from(index, dict(value) if isinstance(value, Mapping) else value)
