"""Parquet rows (the ``parquet`` extra): real files written with pyarrow give the lines their JSONL
twin gives, are read one record batch at a time, resume, and are refused clearly when they
cannot work."""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.application import BatchRowsError, read_rows, run_batch
from runport.contracts import ErrorCode
from runport.core import load_contract, load_scenario
from runport.mock import AsyncScriptedRuntime

ROOT = Path(__file__).resolve().parents[3]
QUICK = ROOT / "examples" / "quickstart"
CONTRACT = load_contract(QUICK / "contract.yaml")
SCENARIO = load_scenario(QUICK / "scenario.yaml")
AUDIENCES = ["engineers", "children", "poets", None]


def fresh() -> AsyncScriptedRuntime:
    return AsyncScriptedRuntime(SCENARIO)


def by_row(path: Path) -> dict[int, dict[str, Any]]:
    """The output's lines by row; a row written twice fails the test."""
    lines = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]
    rows = {line["row"]: line for line in lines}
    assert len(rows) == len(lines), "a row was written twice"
    return rows


def twins(tmp_path: Path, count: int) -> tuple[Path, Path]:
    """The same rows as Parquet (an optional column with nulls, several row groups) and as
    JSONL (the null cells left out)."""
    topics = [f"topic {i}" for i in range(count)]
    audiences = [AUDIENCES[i % len(AUDIENCES)] for i in range(count)]
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"topic": topics, "audience": audiences}), parquet, row_group_size=300)
    jsonl = tmp_path / "rows.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        for topic, audience in zip(topics, audiences, strict=True):
            row = {"topic": topic} if audience is None else {"topic": topic, "audience": audience}
            out.write(json.dumps(row) + "\n")
    return parquet, jsonl


def test_parquet_rows_give_the_lines_of_their_jsonl_twin(tmp_path: Path) -> None:
    parquet, jsonl = twins(tmp_path, 2500)  # past one record batch and one row group
    from_parquet, from_jsonl = tmp_path / "parquet.jsonl", tmp_path / "jsonl.jsonl"
    summary = run_batch(CONTRACT, parquet, fresh, out=from_parquet, concurrency=16)
    run_batch(CONTRACT, jsonl, fresh, out=from_jsonl, concurrency=16)
    assert by_row(from_parquet) == by_row(from_jsonl)
    assert sorted(by_row(from_parquet)) == list(range(2500))
    assert (summary.rows, summary.ok) == (2500, 2500)  # a null audience is an absent one


def test_a_killed_parquet_batch_resumes_without_duplicates(tmp_path: Path) -> None:
    parquet, _ = twins(tmp_path, 1200)
    whole = tmp_path / "whole.jsonl"
    run_batch(CONTRACT, parquet, fresh, out=whole)
    out = tmp_path / "out.jsonl"
    kept = whole.read_bytes().splitlines(keepends=True)[:700]
    out.write_bytes(b"".join(kept) + b'{"row": 3, "ok": tr')  # what a kill mid-write leaves
    summary = run_batch(CONTRACT, parquet, fresh, out=out)
    assert by_row(out) == by_row(whole)
    assert (summary.skipped, summary.ran, summary.rows) == (700, 500, 1200)
    again = run_batch(CONTRACT, parquet, fresh, out=out)
    assert (again.skipped, again.ran) == (1200, 0)
    assert len(out.read_bytes().splitlines()) == 1200


def test_request_shaped_columns_are_read_as_requests(tmp_path: Path) -> None:
    inputs = pa.array(
        [{"topic": "rivers", "audience": None}, {"topic": "snow", "audience": "poets"}],
        type=pa.struct([("topic", pa.string()), ("audience", pa.string())]),
    )
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"inputs": inputs, "context": pa.nulls(2)}), parquet)
    rows = list(read_rows(parquet))
    assert [(row.index, dict(row.inputs), row.context) for row in rows] == [
        (0, {"topic": "rivers"}, None),
        (1, {"topic": "snow", "audience": "poets"}, None),
    ]


KINDS = [
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.lists(st.integers(-(2**31), 2**31), max_size=3),
]


def tables(count: int) -> st.SearchStrategy[dict[str, list[Any]]]:
    """Columns of one kind each (any cell may be null), ``count`` cells long."""
    column = st.sampled_from(KINDS).flatmap(
        lambda kind: st.lists(st.none() | kind, min_size=count, max_size=count)
    )
    names = st.text(min_size=1, max_size=8).filter(lambda name: name != "inputs")
    return st.dictionaries(names, column, min_size=1, max_size=4)


@settings(deadline=None)
@given(columns=st.integers(1, 12).flatmap(tables))
def test_a_row_is_its_record_without_its_null_cells(columns: dict[str, list[Any]]) -> None:
    count = len(next(iter(columns.values())))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.parquet"
        pq.write_table(pa.table(columns), path)
        rows = list(read_rows(path))
    expected = [
        {name: cells[i] for name, cells in columns.items() if cells[i] is not None}
        for i in range(count)
    ]
    assert [row.index for row in rows] == list(range(count))
    assert [dict(row.inputs) for row in rows] == expected
    assert all(row.problem is None for row in rows)


def test_a_nan_cell_is_a_failed_line_and_the_batch_goes_on(tmp_path: Path) -> None:
    parquet = tmp_path / "rows.parquet"
    table = pa.table({"topic": ["a", "b", "c"], "score": [1.5, math.nan, math.inf]})
    pq.write_table(table, parquet)
    out = tmp_path / "out.jsonl"
    summary = run_batch(CONTRACT, parquet, fresh, out=out)
    lines = by_row(out)
    assert [lines[i]["ok"] for i in range(3)] == [False, False, False]
    codes = [lines[i]["envelope"]["diagnostics"][0]["code"] for i in range(3)]
    # row 0 is JSON (an input the contract does not declare); rows 1 and 2 are not JSON at all
    assert codes == [ErrorCode.VALUE_UNKNOWN, ErrorCode.DATA_INVALID, ErrorCode.DATA_INVALID]
    assert "NaN" in lines[1]["envelope"]["diagnostics"][0]["message"]
    assert summary.rows == 3


@pytest.mark.parametrize(
    ("column", "named"),
    [
        (pa.array([1, 2], type=pa.timestamp("us")), "timestamp"),
        (pa.array([b"x", b"y"]), "binary"),
        (pa.array([[("k", 1)], []], type=pa.map_(pa.string(), pa.int64())), "map"),
        (pa.array([{"at": 1}, None], type=pa.struct([("at", pa.date32())])), "date32"),
    ],
)
def test_a_column_with_no_json_form_is_refused_before_any_row(
    tmp_path: Path, column: Any, named: str
) -> None:
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"topic": ["a", "b"], "when": column}), parquet)
    out = tmp_path / "out.jsonl"
    with pytest.raises(BatchRowsError, match=rf"column 'when': {named}") as refused:
        run_batch(CONTRACT, parquet, fresh, out=out)
    assert refused.value.code == ErrorCode.DATA_INVALID
    assert not out.exists()


def test_a_file_that_is_not_parquet_is_refused(tmp_path: Path) -> None:
    parquet = tmp_path / "rows.parquet"
    parquet.write_text('{"topic": "not parquet at all"}\n', encoding="utf-8")
    with pytest.raises(
        BatchRowsError, match="is not a readable Parquet file: Parquet magic bytes"
    ) as refused:
        read_rows(parquet)
    assert refused.value.code == ErrorCode.DATA_INVALID


def test_without_pyarrow_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parquet, _ = twins(tmp_path, 3)
    for name in [name for name in sys.modules if name.split(".")[0] == "pyarrow"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what an install without the extra sees
    out = tmp_path / "out.jsonl"
    with pytest.raises(BatchRowsError, match=r"runport-application\[parquet\]") as refused:
        run_batch(CONTRACT, parquet, fresh, out=out)
    assert refused.value.code == ErrorCode.DATA_INVALID
    assert "runport[parquet]" in refused.value.message
    assert not out.exists()


def test_rows_are_read_one_record_batch_at_a_time(tmp_path: Path) -> None:
    count = 200_000
    table = pa.table({"topic": [f"topic {i:08d} " + "x" * 80 for i in range(count)]})
    decoded = table.nbytes
    parquet = tmp_path / "rows.parquet"
    pq.write_table(table, parquet, row_group_size=10_000)
    del table
    before = pa.total_allocated_bytes()
    rows = read_rows(parquet)
    first = next(rows)
    for _ in range(count // 2):
        last = next(rows)
    held = pa.total_allocated_bytes() - before
    assert (first.index, last.index) == (0, count // 2)
    assert held < decoded // 3, f"{held} bytes held reading a file of {decoded} decoded bytes"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX named pipes")
def test_a_parquet_pipe_is_refused_without_waiting_on_a_writer(tmp_path: Path) -> None:
    pipe = tmp_path / "rows.parquet"
    os.mkfifo(pipe)
    with pytest.raises(BatchRowsError, match="must be a regular file"):
        read_rows(pipe)
