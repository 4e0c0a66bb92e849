"""``ray_batch`` on a local Ray instance (2 CPUs, loopback only): the local engine's lines,
resume and refusals, with the rows sharded over Ray tasks; and a batch killed mid-shard that
keeps every row its workers finished."""

from __future__ import annotations

import functools
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from runport.application import BatchOutputError, run_batch  # noqa: E402
from runport.core import load_contract, load_scenario  # noqa: E402
from runport.mock import AsyncScriptedRuntime  # noqa: E402
from runport.ray import ray_batch  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
QUICK = ROOT / "examples" / "quickstart"
CONTRACT = load_contract(QUICK / "contract.yaml")
SCENARIO = load_scenario(QUICK / "scenario.yaml")


def fresh() -> AsyncScriptedRuntime:
    return AsyncScriptedRuntime(SCENARIO)


_made = itertools.count(1)


def dies_once(marker: str, out: str) -> AsyncScriptedRuntime:
    """A fresh mock, except the 60th a worker process makes: once the driver has written 40
    lines (so some of this shard's rows are surely in the output), the first worker to get
    here dies, and Ray runs its shard's task again, from the shard's first row."""
    if next(_made) == 60:
        deadline = time.monotonic() + GUARD_S
        while len(Path(out).read_bytes().splitlines()) < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return fresh()
        os._exit(1)
    return fresh()


GUARD_S = 300  # a hang guard only: every wait below ends on an event, not on a duration


class HeldUpstream(ThreadingHTTPServer):
    """An OpenAI-compatible chat server on 127.0.0.1 that answers every request at once,
    except a request whose prompt says ``held``: that one waits until :meth:`release`."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Answer)
        self.requests: list[bytes] = []
        self.lock = threading.Lock()
        self.released = threading.Event()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def hold(self) -> None:
        self.released = threading.Event()

    def release(self) -> None:
        self.released.set()

    def held(self) -> int:
        with self.lock:
            return sum(b"held" in body for body in self.requests)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A killed client's connection: nothing to report."""


def _frame(body: dict[str, Any]) -> bytes:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "tiny"}
    return b"data: " + json.dumps({**head, **body}).encode() + b"\n\n"


ANSWER = (
    _frame({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Rivers run"}}]})
    + _frame({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    + _frame({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}})
    + b"data: [DONE]\n\n"
)


class _Answer(BaseHTTPRequestHandler):
    server: HeldUpstream
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.requests.append(body)
        if b"held" in body:
            self.server.released.wait(GUARD_S)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)


@pytest.fixture(scope="module")
def upstream() -> Iterator[HeldUpstream]:
    server = HeldUpstream()
    try:
        yield server
    finally:
        server.release()
        server.shutdown()
        server.server_close()


def openai_env(upstream: HeldUpstream) -> dict[str, str]:
    return {"RUNPORT_OPENAI_BASE_URL": upstream.base_url, "RUNPORT_OPENAI_MODEL": "tiny"}


@pytest.fixture(scope="module")
def cluster(upstream: HeldUpstream) -> Iterator[str]:
    """One local Ray instance for the module. Its workers are started with this process's
    environment, so the adapter settings are put there while it starts (a real cluster gets
    them from its runtime environment)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    settings = openai_env(upstream)
    os.environ.update(settings)
    try:
        context = ray.init(
            num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False
        )
    finally:
        for name in settings:
            del os.environ[name]
    try:
        yield context.address_info["address"]
    finally:
        ray.shutdown()


def write_rows(path: Path, count: int, extra: str = "") -> Path:
    path.write_text(
        "".join(json.dumps({"inputs": {"topic": f"topic {i}"}}) + "\n" for i in range(count))
        + extra,
        encoding="utf-8",
    )
    return path


def by_row(path: Path) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for text in path.read_text(encoding="utf-8").splitlines():
        line = json.loads(text)
        assert line["row"] not in found, f"row {line['row']} twice"
        found[line["row"]] = line
    return found


def test_a_thousand_rows_give_the_local_engines_lines(cluster: str, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 1000, "not json\n")
    local, sharded = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    expected = run_batch(CONTRACT, rows, fresh, out=local)
    summary = ray_batch(CONTRACT, rows, fresh, out=sharded, shard_rows=128)
    assert by_row(sharded) == by_row(local)
    assert sorted(by_row(sharded)) == list(range(1001))
    assert (summary.rows, summary.ok, summary.failed_by_code) == (
        expected.rows,
        expected.ok,
        expected.failed_by_code,
    )


def test_a_torn_partial_output_resumes_without_duplicates(cluster: str, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 300)
    whole = tmp_path / "whole.jsonl"
    run_batch(CONTRACT, rows, fresh, out=whole)
    out = tmp_path / "out.jsonl"
    kept = whole.read_bytes().splitlines(keepends=True)[:120]
    out.write_bytes(b"".join(kept) + b'{"row": 7, "ok"')
    summary = ray_batch(CONTRACT, rows, fresh, out=out, shard_rows=64)
    assert by_row(out) == by_row(whole)
    assert (summary.skipped, summary.ran, summary.torn_lines_discarded) == (120, 180, 15)


def test_a_worker_that_dies_mid_shard_neither_loses_nor_repeats_a_row(
    cluster: str, tmp_path: Path
) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 200)
    marker = tmp_path / "died"
    out = tmp_path / "out.jsonl"
    dying = functools.partial(dies_once, str(marker), str(out))
    summary = ray_batch(CONTRACT, rows, dying, out=out, shard_rows=100, concurrency=4)
    assert marker.exists()  # a worker did die
    local = tmp_path / "local.jsonl"
    run_batch(CONTRACT, rows, fresh, out=local)
    assert by_row(out) == by_row(local)  # raises on a row written twice
    assert (summary.rows, summary.ok, summary.skipped) == (200, 200, 0)


def test_another_contracts_output_is_refused(cluster: str, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 3)
    out = tmp_path / "out.jsonl"
    run_batch(CONTRACT, rows, fresh, out=out)
    before = out.read_bytes()
    other = CONTRACT.model_copy(update={"id": "another.contract"})
    with pytest.raises(BatchOutputError, match="another contract"):
        ray_batch(other, rows, fresh, out=out)
    assert out.read_bytes() == before


def test_the_cli_engine_joins_the_cluster_ray_address_names(cluster: str, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 200)
    out = tmp_path / "out.jsonl"
    argv = [sys.executable, "-m", "runport.cli", "batch", str(QUICK / "contract.yaml")]
    argv += ["--inputs", str(rows), "--scenario", str(QUICK / "scenario.yaml")]
    argv += ["--out", str(out), "--engine", "ray"]
    env = {**os.environ, "RAY_ADDRESS": cluster, "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert sorted(by_row(out)) == list(range(200))
    local = tmp_path / "local.jsonl"
    run_batch(CONTRACT, rows, fresh, out=local)
    assert by_row(out) == by_row(local)


HELD = (5, 17, 29)


def ray_cli(rows: Path, out: Path) -> list[str]:
    argv = [sys.executable, "-m", "runport.cli", "batch", str(QUICK / "contract.yaml")]
    argv += ["--inputs", str(rows), "--adapter", "openai", "--out", str(out)]
    return [*argv, "--engine", "ray"]


def _interruptible() -> None:
    """Run in the child before the command starts: Ctrl-C at its default, as at a terminal.
    A test session started in the background (a CI script's ``&``) ignores SIGINT, and a child
    inherits that: the command would never see the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_a_killed_ray_batch_keeps_every_row_its_workers_finished(
    cluster: str, upstream: HeldUpstream, tmp_path: Path, stop: signal.Signals
) -> None:
    """Forty rows are one shard; three of them are held by the upstream, so the shard is still
    in flight when the driver is stopped. Every other row must already be in the output: a
    finished row reaches the file as it finishes, not when its shard ends."""
    upstream.hold()
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"topic": f"held {i}" if i in HELD else f"topic {i}"}) + "\n"
            for i in range(40)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    env = {**os.environ, **openai_env(upstream), "RAY_ADDRESS": cluster}
    held_before = upstream.held()
    process = subprocess.Popen(
        ray_cli(rows, out),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_interruptible,
    )
    deadline = time.monotonic() + GUARD_S
    while (
        upstream.held() < held_before + len(HELD)
        or not out.exists()
        or (len(out.read_bytes().splitlines()) < 40 - len(HELD))
    ):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the finished rows never reached the output"
        time.sleep(0.05)
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=GUARD_S)
    if stop == signal.SIGINT:
        assert process.returncode == 130, stderr
        assert "interrupted" in stderr
        summary = json.loads((tmp_path / "out.summary.json").read_text(encoding="utf-8"))
        assert summary["interrupted"] is True
    else:
        assert process.returncode == -signal.SIGKILL
    assert sorted(by_row(out)) == [i for i in range(40) if i not in HELD]

    upstream.release()
    asked = len(upstream.requests)
    again = subprocess.run(
        ray_cli(rows, out), capture_output=True, text=True, env=env, timeout=GUARD_S, check=False
    )
    assert again.returncode == 0, again.stderr
    written = by_row(out)  # raises on a row written twice
    assert sorted(written) == list(range(40))
    assert all(line["ok"] for line in written.values())
    assert len(upstream.requests) - asked == len(HELD)  # only the lost rows ran again
    summary = json.loads((tmp_path / "out.summary.json").read_text(encoding="utf-8"))
    assert (summary["skipped"], summary["ran"], summary["interrupted"]) == (37, 3, False)
