"""Rows from a Parquet file, through pyarrow (the ``parquet`` extra), one record batch at a time
(docs/batch.md).

A Parquet row is a record of typed columns; a batch row is JSON. Every column must therefore
have a JSON form (nulls, booleans, integers, floats, strings, lists and structs of those), which
is checked against the file's schema before any row is read, so a file that cannot work is one
clear error rather than a failed line per row. A null cell is a value the row does not have, the
way a columnar file says a column is absent for that row.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runport.application._batch._rows import (
    REQUEST_KEYS,
    BatchRow,
    BatchRowsError,
    malformed,
    row_from,
)
from runport.application._batch._source import waits
from runport.contracts import MAX_JSON_DEPTH

BATCH_ROWS = 1024
"""Rows decoded at a time: memory stays bounded by one record batch, whatever the file's size."""

INSTALL_HINT = (
    "reading .parquet rows needs pyarrow: pip install 'runport-application[parquet]' "
    "(or 'runport[parquet]')"
)


def parquet_rows(source: Path) -> Iterator[BatchRow]:
    """The file's rows, read as they are needed; the file is opened and its schema checked
    now, so an unreadable file fails before the batch starts."""
    if waits(source):
        raise BatchRowsError(
            f"rows file {source}: a Parquet file must be a regular file (its footer is read "
            "first), not a pipe"
        )
    try:
        parquet = importlib.import_module("pyarrow.parquet")
        types = importlib.import_module("pyarrow.types")
    except ModuleNotFoundError as error:
        if error.name not in ("pyarrow", "pyarrow.parquet", "pyarrow.types"):
            raise
        raise BatchRowsError(f"rows file {source}: {INSTALL_HINT}") from None
    if not source.is_file():
        raise FileNotFoundError(f"rows file not found: {source}")
    try:
        handle = parquet.ParquetFile(source)
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise BatchRowsError(
            f"rows file {source} is not a readable Parquet file: {error}"
        ) from None
    for column in handle.schema_arrow:
        why = _no_json_form(types, column.type, 1)
        if why is not None:
            handle.close()
            raise BatchRowsError(f"rows file {source}, column {column.name!r}: {why}")
    return _rows(handle)


def _no_json_form(types: Any, kind: Any, depth: int) -> str | None:
    """Why a column of Arrow type ``kind`` has no JSON form, or ``None`` when it has one."""
    if depth > MAX_JSON_DEPTH:
        return f"nested more than {MAX_JSON_DEPTH} levels deep"
    if types.is_dictionary(kind):
        return _no_json_form(types, kind.value_type, depth)
    if types.is_struct(kind):
        for index in range(kind.num_fields):
            why = _no_json_form(types, kind.field(index).type, depth + 1)
            if why is not None:
                return why
        return None
    if any(
        test(kind)
        for test in (
            types.is_list,
            types.is_large_list,
            types.is_fixed_size_list,
            types.is_list_view,
            types.is_large_list_view,
        )
    ):
        return _no_json_form(types, kind.value_type, depth + 1)
    plain = (
        types.is_null(kind)
        or types.is_boolean(kind)
        or types.is_integer(kind)
        or types.is_float32(kind)
        or types.is_float64(kind)
        or types.is_string(kind)
        or types.is_large_string(kind)
        or types.is_string_view(kind)
    )
    if plain:
        return None
    return (
        f"{kind} has no JSON form; rows take nulls, booleans, integers, floats, strings, lists "
        "and structs: cast the column (a timestamp or decimal to a string, a map to a struct)"
    )


def _rows(handle: Any) -> Iterator[BatchRow]:
    index = 0
    try:
        for batch in handle.iter_batches(batch_size=BATCH_ROWS):
            for record in batch.to_pylist():
                yield _row(index, record)
                index += 1
    finally:
        handle.close()


def _row(index: int, record: dict[str, Any]) -> BatchRow:
    value = _present(record)
    if "inputs" in value and set(value) <= REQUEST_KEYS:
        value = {
            key: _present(part) if key != "fixture_output" else part for key, part in value.items()
        }
    if not _finite(value):
        return malformed(index, "a float cell is NaN or infinite, which JSON has no number for")
    return row_from(index, value)


def _present(value: Any) -> Any:
    """A mapping without its null entries; anything else as it is."""
    if not isinstance(value, dict):
        return value
    return {key: item for key, item in value.items() if item is not None}


def _finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True
