"""``run_batch`` / ``abatch``: one line per row, resumable, malformed rows and failures as lines."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.application import (
    BatchLine,
    BatchOutputError,
    BatchRow,
    BatchRowsError,
    BatchSummary,
    abatch,
    execute_contract,
    read_rows,
    run_batch,
)
from runport.contracts import ErrorCode, ExecutionRequest, fingerprint
from runport.core import load_contract, load_scenario, parse_scenario
from runport.mock import AsyncFunctionRuntime, AsyncScriptedRuntime, ScriptedRuntime

ROOT = Path(__file__).resolve().parents[3]
QUICK = ROOT / "examples" / "quickstart"
CONTRACT = load_contract(QUICK / "contract.yaml")
SCENARIO = load_scenario(QUICK / "scenario.yaml")


def fresh() -> AsyncScriptedRuntime:
    return AsyncScriptedRuntime(SCENARIO)


def write_rows(path: Path, count: int) -> Path:
    path.write_text(
        "".join(json.dumps({"inputs": {"topic": f"topic {i}"}}) + "\n" for i in range(count)),
        encoding="utf-8",
    )
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]


def test_a_thousand_rows_give_exactly_one_line_each(tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 1000)
    out = tmp_path / "out.jsonl"
    summary = run_batch(CONTRACT, rows, fresh, out=out, concurrency=16)
    written = lines(out)
    assert sorted(line["row"] for line in written) == list(range(1000))
    assert all(set(line) == {"row", "ok", "envelope"} and line["ok"] for line in written)
    assert (summary.rows, summary.ok, summary.failed, summary.ran) == (1000, 1000, 0, 1000)
    assert summary.output_valid == 1000
    assert summary.input_tokens == 31 * 1000
    assert json.loads(BatchSummary.path_for(out).read_text()) == summary.to_json()


def test_each_line_holds_the_receipt_execute_contract_gives(tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 5)
    out = tmp_path / "out.jsonl"
    run_batch(CONTRACT, rows, fresh, out=out)
    for line in lines(out):
        alone = execute_contract(
            CONTRACT, ScriptedRuntime(SCENARIO), inputs={"topic": f"topic {line['row']}"}
        )
        assert alone.result is not None
        assert line["envelope"]["result"] == alone.result.model_dump(mode="json")
        assert line["envelope"]["fingerprints"]["request"] == alone.result.request_fingerprint


def test_malformed_rows_are_failed_lines_and_the_batch_goes_on(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "\n".join(
            [
                '{"inputs": {"topic": "fine"}}',
                "not json",
                "[1, 2]",
                '{"inputs": {"audience": "poets"}}',
                '{"topic": ""}',
                '{"topic": "x", "colour": "red"}',
                '{"inputs": "nope"}',
                '{"topic": "last"}',
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    summary = run_batch(CONTRACT, rows, fresh, out=out, concurrency=1)
    by_row = {line["row"]: line for line in lines(out)}
    codes = {
        row: [d["code"] for d in line["envelope"]["diagnostics"]] for row, line in by_row.items()
    }
    assert codes == {
        0: [],
        1: [ErrorCode.DATA_INVALID],
        2: [ErrorCode.DATA_INVALID],
        3: [ErrorCode.VALUE_REQUIRED],
        4: [ErrorCode.VALUE_SCHEMA],
        5: [ErrorCode.VALUE_UNKNOWN],
        6: [ErrorCode.DATA_INVALID],
        7: [],
    }
    assert [by_row[row]["ok"] for row in range(8)] == [True] + [False] * 6 + [True]
    assert summary.failed_by_code == {
        ErrorCode.DATA_INVALID: 3,
        ErrorCode.VALUE_REQUIRED: 1,
        ErrorCode.VALUE_SCHEMA: 1,
        ErrorCode.VALUE_UNKNOWN: 1,
    }
    assert not summary.all_ok


def test_an_adapter_failure_is_carried_in_the_rows_envelope(tmp_path: Path) -> None:
    failing = parse_scenario(
        {
            "api_version": "runport.mock/v1",
            "id": "down",
            "turns": [
                {
                    "events": [
                        {"kind": "delta", "text": "par"},
                        {"kind": "fail", "code": "TQX_RUNTIME_UNAVAILABLE", "message": "503"},
                    ]
                }
            ],
        }
    )
    out = tmp_path / "out.jsonl"
    rows = write_rows(tmp_path / "rows.jsonl", 3)
    summary = run_batch(CONTRACT, rows, lambda: AsyncScriptedRuntime(failing), out=out)
    written = lines(out)
    assert len(written) == 3
    assert not any(line["ok"] for line in written)
    for line in written:
        assert [d["code"] for d in line["envelope"]["diagnostics"]] == [
            ErrorCode.RUNTIME_UNAVAILABLE
        ]
        assert "request" in line["envelope"]["fingerprints"]
    assert summary.failed_by_code == {ErrorCode.RUNTIME_UNAVAILABLE: 3}


def test_a_rerun_skips_every_row_and_duplicates_none(tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 50)
    out = tmp_path / "out.jsonl"
    run_batch(CONTRACT, rows, fresh, out=out)
    first = out.read_bytes()
    again = run_batch(CONTRACT, rows, fresh, out=out)
    assert out.read_bytes() == first
    assert (again.rows, again.skipped, again.ran) == (50, 50, 0)


@settings(
    max_examples=settings.default.max_examples // 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    kept=st.integers(0, 30),
    torn=st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b),
)
def test_a_resumed_batch_ends_as_an_uninterrupted_one(
    tmp_path: Path, kept: int, torn: bytes
) -> None:
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    rows = write_rows(folder / "rows.jsonl", 30)
    with rows.open("a", encoding="utf-8") as more:
        more.write("not json\n")
    whole = folder / "whole.jsonl"
    run_batch(CONTRACT, rows, fresh, out=whole)
    out = folder / "out.jsonl"
    finished = whole.read_bytes().splitlines(keepends=True)[:kept]
    if not kept:  # with no whole line before it, a torn line is a cut batch line (issue 22)
        torn = b'{"row":' + torn
    out.write_bytes(b"".join(finished) + torn)  # a kill mid-write leaves a torn last line
    summary = run_batch(CONTRACT, rows, fresh, out=out)
    assert summary.torn_lines_discarded == len(torn)
    assert summary.skipped == kept
    assert sorted(lines(out), key=lambda line: line["row"]) == sorted(
        lines(whole), key=lambda line: line["row"]
    )


def test_an_output_of_another_contract_is_refused_and_left_alone(tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 3)
    out = tmp_path / "out.jsonl"
    run_batch(CONTRACT, rows, fresh, out=out)
    before = out.read_bytes()
    other = CONTRACT.model_copy(update={"version": "2.0.0"})
    with pytest.raises(BatchOutputError, match="another contract") as caught:
        run_batch(other, rows, fresh, out=out)
    assert caught.value.code == ErrorCode.DATA_INVALID
    assert out.read_bytes() == before


def test_a_file_that_is_no_batch_output_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"hello": "world"}\n', encoding="utf-8")
    with pytest.raises(BatchOutputError, match="not a batch line"):
        run_batch(CONTRACT, [{"topic": "x"}], fresh, out=out)
    assert out.read_text(encoding="utf-8") == '{"hello": "world"}\n'


def test_no_more_than_concurrency_rows_are_in_flight(tmp_path: Path) -> None:
    flying = 0
    most = 0

    async def handler(request: ExecutionRequest, emit: Any) -> None:
        nonlocal flying, most
        flying += 1
        most = max(most, flying)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        flying -= 1
        await emit.text("a haiku")

    shared = AsyncFunctionRuntime(handler)
    rows = [{"topic": f"t{i}"} for i in range(40)]
    summary = run_batch(CONTRACT, rows, shared, out=tmp_path / "out.jsonl", concurrency=3)
    assert summary.ok == 40
    assert most == 3


def test_csv_rows_name_their_inputs_in_the_header(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("topic,audience\nrivers,poets\nsnow,engineers\nonly-one\n", encoding="utf-8")
    read = list(read_rows(rows))
    assert [row.inputs for row in read[:2]] == [
        {"topic": "rivers", "audience": "poets"},
        {"topic": "snow", "audience": "engineers"},
    ]
    assert read[2].problem is not None
    assert read[2].problem.code == ErrorCode.DATA_INVALID
    out = tmp_path / "out.jsonl"
    summary = run_batch(CONTRACT, rows, fresh, out=out)
    assert (summary.ok, summary.failed) == (2, 1)


def test_rows_in_memory_and_row_objects(tmp_path: Path) -> None:
    seen: list[BatchLine] = []
    rows: list[object] = [
        {"inputs": {"topic": "a"}, "context": {}},
        BatchRow(1, {"topic": "b"}),
        7,
    ]
    summary = run_batch(CONTRACT, rows, fresh, out=tmp_path / "o.jsonl", on_line=seen.append)
    assert sorted((line.row, line.ok) for line in seen) == [(0, True), (1, True), (2, False)]
    assert summary.rows == 3


def test_a_cancelled_batch_keeps_its_finished_rows_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    started = asyncio.Event()

    async def handler(request: ExecutionRequest, emit: Any) -> None:
        if request.interaction.messages[-1].content.endswith("t5"):
            started.set()
            await asyncio.Event().wait()  # never answers
        await emit.text("a haiku")

    async def main() -> None:
        task = asyncio.create_task(
            abatch(
                CONTRACT,
                [{"topic": f"t{i}"} for i in range(10)],
                AsyncFunctionRuntime(handler),
                out=out,
                concurrency=1,
            )
        )
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert sorted(line["row"] for line in lines(out)) == [0, 1, 2, 3, 4]
    summary = json.loads(BatchSummary.path_for(out).read_text())
    assert summary["interrupted"] is True
    assert summary["rows"] == 5


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_concurrency_must_be_a_positive_whole_number(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        run_batch(CONTRACT, [], fresh, out=tmp_path / "o.jsonl", concurrency=bad)


def test_a_rows_file_of_an_unknown_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BatchRowsError, match=r"\.jsonl, \.ndjson, \.csv, \.parquet") as refused:
        read_rows(tmp_path / "rows.xlsx")
    assert refused.value.code == ErrorCode.DATA_INVALID
    out = tmp_path / "out.jsonl"
    with pytest.raises(BatchRowsError):
        run_batch(CONTRACT, tmp_path / "rows.xlsx", fresh, out=out)
    assert not out.exists()  # refused before the output is opened


# ---- an --out that is not this contract's output is refused whole (issue 22) ----------------


def _refused_whole(out: Path, match: str) -> BatchOutputError:
    before = out.read_bytes()
    with pytest.raises(BatchOutputError, match=match) as caught:
        run_batch(CONTRACT, [{"topic": "x"}], fresh, out=out)
    assert caught.value.code == ErrorCode.DATA_INVALID
    assert out.read_bytes() == before  # not truncated, not cut, not appended to
    assert not BatchSummary.path_for(out).exists()
    return caught.value


def test_a_notes_file_with_no_line_end_is_refused_and_left_whole(tmp_path: Path) -> None:
    out = tmp_path / "notes.txt"
    out.write_bytes(b"notes")
    _refused_whole(out, "not a batch's output")


def test_another_contracts_output_with_a_torn_last_line_is_refused_whole(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    other = CONTRACT.model_copy(update={"version": "2.0.0"})
    run_batch(other, [{"topic": f"t{i}"} for i in range(3)], fresh, out=out)
    BatchSummary.path_for(out).unlink()
    out.write_bytes(out.read_bytes() + b'{"row":3,"ok":tr')
    _refused_whole(out, "another contract")


def test_the_contract_file_given_as_out_is_refused_whole(tmp_path: Path) -> None:
    out = tmp_path / "contract.yaml"
    out.write_bytes((QUICK / "contract.yaml").read_bytes().rstrip(b"\n"))  # no final line end
    _refused_whole(out, "not JSON")


def test_a_deeply_nested_output_line_is_a_coded_refusal(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"[" * 100_000 + b"\n")
    _refused_whole(out, "nested")


def test_a_line_that_is_no_envelope_is_refused_before_the_torn_line_is_cut(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.jsonl"
    envelope = {"ok": "maybe", "fingerprints": {"contract": fingerprint(CONTRACT)}}
    out.write_bytes(
        json.dumps({"row": 0, "ok": True, "envelope": envelope}).encode() + b'\n{"row":1'
    )
    _refused_whole(out, "not a batch line")


def test_a_torn_first_line_is_discarded_and_the_batch_runs(tmp_path: Path) -> None:
    whole = tmp_path / "whole.jsonl"
    run_batch(CONTRACT, [{"topic": "x"}], fresh, out=whole)
    first = whole.read_bytes()
    for cut in (1, 3, 10, len(first) - 1):  # a kill inside the very first write
        out = tmp_path / f"out{cut}.jsonl"
        out.write_bytes(first[:cut])
        summary = run_batch(CONTRACT, [{"topic": "x"}], fresh, out=out)
        assert (summary.torn_lines_discarded, summary.ran) == (cut, 1)
        assert out.read_bytes() == first
    for torn in (b'{"row": 0, "ok"', b'{ "row"'):  # spaced as another writer of JSON may
        out = tmp_path / "spaced.jsonl"
        out.write_bytes(torn)
        summary = run_batch(CONTRACT, [{"topic": "x"}], fresh, out=out)
        assert (summary.torn_lines_discarded, summary.ran) == (len(torn), 1)
        assert out.read_bytes() == first


# ---- the summary file never follows a symlink (issue 22) ------------------------------------


def test_the_summary_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    link = BatchSummary.path_for(out)
    link.symlink_to(victim)
    summary = run_batch(CONTRACT, [{"topic": "x"}], fresh, out=out)
    assert victim.read_text(encoding="utf-8") == "keep me\n"
    assert not link.is_symlink()  # replaced, not followed
    assert json.loads(link.read_text(encoding="utf-8")) == summary.to_json()


def test_a_dangling_summary_symlink_is_not_followed(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    target = tmp_path / "elsewhere" / "made.json"
    target.parent.mkdir()
    BatchSummary.path_for(out).symlink_to(target)
    run_batch(CONTRACT, [{"topic": "x"}], fresh, out=out)
    assert not target.exists()
    assert not BatchSummary.path_for(out).is_symlink()
