"""``runport batch --adapter openai`` against an OpenAI-compatible server on 127.0.0.1: one line
per row, every receipt from the wire, and a rerun that adds nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "examples" / "quickstart"
ROWS = 1000


@pytest.fixture
def upstream() -> Iterator[str]:
    pytest.importorskip("runport.openai")
    conformance = pytest.importorskip("runport.conformance")
    plain_text = next(case for case in conformance.CASES if case.name == "plain_text")
    server = conformance.ScriptedUpstream([plain_text] * ROWS, pacing="off")
    try:
        yield server.base_url
    finally:
        server.close()


def test_a_thousand_rows_through_a_loopback_server(upstream: str, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(json.dumps({"topic": f"topic {i}"}) + "\n" for i in range(ROWS)), encoding="utf-8"
    )
    out = tmp_path / "out.jsonl"
    env = {
        **os.environ,
        "RUNPORT_OPENAI_BASE_URL": upstream,
        "RUNPORT_OPENAI_MODEL": "tiny",
        "OPENAI_API_KEY": "sk-loopback",
    }
    argv = [sys.executable, "-m", "runport.cli", "batch", str(QUICK / "contract.yaml")]
    argv += ["--inputs", str(rows), "--adapter", "openai", "--concurrency", "8", "--out", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["row"] for line in written) == list(range(ROWS))
    receipts = [line["envelope"]["result"] for line in written]
    assert {receipt["adapter"]["id"] for receipt in receipts} == {"openai-chat"}
    assert len({receipt["request_fingerprint"] for receipt in receipts}) == ROWS
    again = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert again.returncode == 0, again.stderr
    assert len(out.read_text(encoding="utf-8").splitlines()) == ROWS
    summary = json.loads((tmp_path / "out.summary.json").read_text(encoding="utf-8"))
    assert (summary["skipped"], summary["ran"]) == (ROWS, 0)
