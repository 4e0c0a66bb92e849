"""``runport batch`` in a real subprocess: one line per row, exit codes, kill and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

Cli = Any  # the `runport` fixture of conftest.py

ROOT = Path(__file__).resolve().parents[3]
QUICK = ROOT / "examples" / "quickstart"
CONTRACT = QUICK / "contract.yaml"
SCENARIO = QUICK / "scenario.yaml"
GUARD_S = 120  # a hang guard only: every wait below ends on an event, not on a duration


def row_text(count: int, start: int = 0) -> str:
    return "".join(
        json.dumps({"inputs": {"topic": f"topic {i}"}}) + "\n" for i in range(start, count)
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]


def batch(runport: Cli, rows: Path, out: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return runport("batch", CONTRACT, "--inputs", rows, "--scenario", SCENARIO, "--out", out, *more)


def test_a_thousand_rows_exit_zero_with_one_line_each(runport: Cli, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(row_text(1000), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = batch(runport, rows, out, "--concurrency", "32")
    assert done.returncode == 0, done.stderr
    assert sorted(line["row"] for line in lines(out)) == list(range(1000))
    assert "1000 row(s): 1000 ok, 0 failed" in done.stderr
    assert "latency: p50" in done.stderr
    summary = json.loads((tmp_path / "out.summary.json").read_text(encoding="utf-8"))
    assert (summary["ok"], summary["output_valid"], summary["input_tokens"]) == (1000, 1000, 31000)


def test_a_failed_row_makes_the_exit_status_two(runport: Cli, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(row_text(2) + "{broken\n" + row_text(4, 2), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = batch(runport, rows, out)
    assert done.returncode == 2
    assert "TQX_DATA_INVALID: 1" in done.stderr
    assert len(lines(out)) == 5


def test_another_contracts_output_is_refused(runport: Cli, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(row_text(2), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert batch(runport, rows, out).returncode == 0
    before = out.read_bytes()
    other = tmp_path / "other.yaml"
    other.write_text(
        CONTRACT.read_text(encoding="utf-8").replace("version: 1.0.0", "version: 1.0.1"),
        encoding="utf-8",
    )
    done = runport("batch", other, "--inputs", rows, "--scenario", SCENARIO, "--out", out)
    assert done.returncode == 1
    assert "TQX_DATA_INVALID" in done.stderr
    assert "another contract" in done.stderr
    assert out.read_bytes() == before


def _interruptible() -> None:
    """Run in the child before the command starts: Ctrl-C at its default, as at a terminal.
    A test session started in the background (a CI script's ``&``) ignores SIGINT, and a child
    inherits that: the command would never see the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_on_a_pipe(
    runport: Cli, tmp_path: Path, first: int
) -> tuple[subprocess.Popen[str], Path, Path]:
    """A batch reading its rows from a FIFO the test holds open after ``first`` rows, so the
    batch is surely mid-way (waiting for row ``first``) when the test stops it."""
    pipe = tmp_path / "pipe.jsonl"
    os.mkfifo(pipe)
    out = tmp_path / "out.jsonl"
    process = subprocess.Popen(
        runport.argv("batch", CONTRACT, "--inputs", pipe, "--scenario", SCENARIO, "--out", out),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=runport.env(),
        preexec_fn=_interruptible,
    )
    writer = pipe.open("w", encoding="utf-8")
    writer.write(row_text(first))
    writer.flush()
    deadline = time.monotonic() + GUARD_S
    while not out.exists() or len(out.read_bytes().splitlines()) < first:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the batch never wrote the rows it was given"
        time.sleep(0.02)
    process.writer = writer  # type: ignore[attr-defined]
    return process, pipe, out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX named pipes")
def test_a_killed_batch_resumes_without_duplicates_or_losses(runport: Cli, tmp_path: Path) -> None:
    process, _, out = _start_on_a_pipe(runport, tmp_path, 300)
    process.kill()  # SIGKILL: no handler runs, nothing is flushed on the way out
    process.wait(timeout=GUARD_S)
    process.writer.close()  # type: ignore[attr-defined]
    process.communicate()
    with out.open("ab") as torn:
        torn.write(b'{"row": 300, "ok": tr')  # what a kill mid-write would leave
    rows = tmp_path / "rows.jsonl"
    rows.write_text(row_text(1000), encoding="utf-8")
    done = batch(runport, rows, out)
    assert done.returncode == 0, done.stderr
    written = [line["row"] for line in lines(out)]
    assert sorted(written) == list(range(1000))  # each row once: none lost, none twice
    summary = json.loads((tmp_path / "out.summary.json").read_text(encoding="utf-8"))
    assert summary["skipped"] == 300
    assert summary["ran"] == 700
    assert summary["torn_lines_discarded"] == len(b'{"row": 300, "ok": tr')


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX named pipes")
def test_ctrl_c_flushes_the_output_and_exits_130(runport: Cli, tmp_path: Path) -> None:
    process, _, out = _start_on_a_pipe(runport, tmp_path, 50)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=GUARD_S)
    process.writer.close()  # type: ignore[attr-defined]
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    assert sorted(line["row"] for line in lines(out)) == list(range(50))
    summary = json.loads((tmp_path / "out.summary.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is True
    assert summary["rows"] == 50


def write_parquet(path: Path, count: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    topics = [f"topic {i}" for i in range(count)]
    pq.write_table(pa.table({"inputs": [{"topic": topic} for topic in topics]}), path)
    return path


def test_parquet_rows_give_the_lines_of_their_jsonl_twin_and_resume(
    runport: Cli, tmp_path: Path
) -> None:
    parquet = write_parquet(tmp_path / "rows.parquet", 600)
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(row_text(600), encoding="utf-8")
    out, twin = tmp_path / "out.jsonl", tmp_path / "twin.jsonl"
    done = batch(runport, parquet, out)
    assert done.returncode == 0, done.stderr
    assert batch(runport, jsonl, twin).returncode == 0
    by_row = {line["row"]: line for line in lines(out)}
    assert sorted(by_row) == list(range(600))
    assert by_row == {line["row"]: line for line in lines(twin)}
    kept = out.read_bytes().splitlines(keepends=True)[:250]
    out.write_bytes(b"".join(kept) + b'{"row": 9, "ok": tr')  # a kill mid-write
    again = batch(runport, parquet, out)
    assert again.returncode == 0, again.stderr
    assert {line["row"]: line for line in lines(out)} == by_row  # each row once, none lost
    summary = json.loads((tmp_path / "out.summary.json").read_text(encoding="utf-8"))
    assert (summary["skipped"], summary["ran"]) == (250, 350)


def test_parquet_without_pyarrow_names_the_extra(runport: Cli, tmp_path: Path) -> None:
    parquet = write_parquet(tmp_path / "rows.parquet", 2)
    out = tmp_path / "out.jsonl"
    argv = runport.argv("batch", CONTRACT, "--inputs", parquet, "--scenario", SCENARIO)
    blocked = "import sys; sys.modules['pyarrow'] = None; sys.argv[1:] = sys.argv[3:]; "
    blocked += "import runport.cli; runport.cli.main()"
    argv = [argv[0], "-c", blocked, *argv[1:], "--out", str(out)]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=runport.env(), timeout=GUARD_S, check=False
    )
    assert done.returncode == 1, done.stderr
    assert "TQX_DATA_INVALID" in done.stderr
    assert "pip install 'runport-application[parquet]' (or 'runport[parquet]')" in done.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("notes.txt", b"notes"),  # no line end: it once went as a "torn line", then the notes
        ("contract.yaml", CONTRACT.read_bytes().rstrip(b"\n")),  # a typo: --out contract.yaml
        ("deep.jsonl", b"[" * 100_000 + b"\n"),  # corrupted past the JSON depth bound
    ],
)
def test_an_out_that_is_no_batch_output_is_refused_untouched(
    runport: Cli, tmp_path: Path, name: str, content: bytes
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(row_text(2), encoding="utf-8")
    out = tmp_path / name
    out.write_bytes(content)
    done = batch(runport, rows, out)
    assert done.returncode == 1, done.stderr
    assert "TQX_DATA_INVALID" in done.stderr
    assert "internal" not in done.stderr
    assert out.read_bytes() == content
    assert not (tmp_path / f"{out.stem}.summary.json").exists()


def test_the_contract_itself_as_out_is_refused_untouched(runport: Cli, tmp_path: Path) -> None:
    contract = tmp_path / "contract.yaml"
    text = CONTRACT.read_bytes().rstrip(b"\n")
    contract.write_bytes(text)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(row_text(1), encoding="utf-8")
    done = runport("batch", contract, "--inputs", rows, "--scenario", SCENARIO, "--out", contract)
    assert done.returncode == 1
    assert "TQX_DATA_INVALID" in done.stderr
    assert contract.read_bytes() == text
