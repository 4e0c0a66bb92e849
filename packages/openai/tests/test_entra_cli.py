"""``runport run``, ``batch`` and ``record --adapter azure-openai`` with an Entra ID service
principal from the environment, against the loopback token endpoint and an Azure emulation
that takes only the token issued last (and quotes a refused one back): the run streams; in the
batch the token expires midway (renewed once, the rows go on), then the resource refuses every
token (the row renewed once, then coded); a secret Entra refuses is a recorded, coded failure;
no secret, assertion or token reaches any output or file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runport.conformance import CASES, ScriptedUpstream

from .entra_emulation import CLIENT_ID, SECRET, TENANT, CurrentTokenOnly, token_endpoint

pytest.importorskip("runport.cli")

ROOT = Path(__file__).resolve().parents[3]
QUICK = ROOT / "examples" / "quickstart"
PLAIN = next(case for case in CASES if case.name == "plain_text")


def cli(*args: str | Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("RUNPORT_", "AZURE_", "OPENAI_"))
    }
    return subprocess.run(
        [sys.executable, "-m", "runport.cli", *map(str, args)],
        env={**clean, **env, "PYTHONIOENCODING": "utf-8"},
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_run_and_a_batch_whose_token_expires_midway(tmp_path: Path) -> None:
    token_file = tmp_path / "federated-token"
    token_file.write_text("plain-federated-assertion", encoding="utf-8")
    with token_endpoint(assertion="plain-federated-assertion") as entra:
        # the batch's five rows: two on the first token, the third refused (it expired) and
        # sent again with a second; the fourth on it; from the seventh request on, every token
        # is refused, so the fifth row is renewed once and then coded
        emulation = CurrentTokenOnly(entra, expire_after=2, refuse_from=7)
        upstream = ScriptedUpstream([PLAIN] * 12, pacing="off", protocol=emulation)
        env = {
            "AZURE_OPENAI_ENDPOINT": upstream.base_url,
            "RUNPORT_AZURE_OPENAI_MODEL": "gpt-4o-mini",
            "AZURE_TENANT_ID": TENANT,
            "AZURE_CLIENT_ID": CLIENT_ID,
            "AZURE_CLIENT_SECRET": SECRET,
            "AZURE_AUTHORITY_HOST": entra.authority,
        }
        request = json.loads((QUICK / "input.json").read_text(encoding="utf-8"))
        (tmp_path / "rows.jsonl").write_text(
            "".join(json.dumps(request) + "\n" for _ in range(5)), encoding="utf-8"
        )
        try:
            ran = cli("run", QUICK / "contract.yaml", "--input", QUICK / "input.json",
                      "--adapter", "azure-openai", "--stream", env=env, cwd=tmp_path)  # fmt: skip
            assert ran.returncode == 0, ran.stderr
            assert ran.stdout.startswith("Hello, world.\n")  # streamed, then the receipt
            workload = {**env, "AZURE_FEDERATED_TOKEN_FILE": str(token_file)}
            del workload["AZURE_CLIENT_SECRET"]
            batch = cli("batch", QUICK / "contract.yaml", "--inputs", "rows.jsonl",
                        "--adapter", "azure-openai", "--concurrency", "1", "--out", "out.jsonl",
                        env=workload, cwd=tmp_path)  # fmt: skip
            refused = cli("record", QUICK / "contract.yaml", "--input", QUICK / "input.json",
                          "--adapter", "azure-openai", "--out", "refused.yaml",
                          env={**env, "AZURE_CLIENT_SECRET": "hunter2"}, cwd=tmp_path)  # fmt: skip
        finally:
            upstream.close()
    # a secret Entra ID refuses (the emulation quotes it back): a recorded, coded failure
    assert refused.returncode == 0, refused.stderr
    recorded = (tmp_path / "refused.yaml").read_text(encoding="utf-8")
    assert "kind: fail" in recorded
    assert "TQX_RUNTIME_PERMANENT" in recorded
    assert "AADSTS7000215" in recorded
    assert "hunter2" not in recorded + refused.stdout + refused.stderr
    assert batch.returncode == 2, batch.stderr
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    failed = [row for row in rows if not row["ok"]]
    assert len(rows) == 5
    assert [row["row"] for row in failed] == [4]
    assert "TQX_RUNTIME_PERMANENT" in json.dumps(failed[0])
    assert "HTTP 401" in json.dumps(failed[0])
    assert "is not valid here" in json.dumps(failed[0])  # the echo, its token redacted
    # the run took token 1; the batch 2 and 3 (the expiry), then 4 (the last row's renewal)
    assert len(entra.issued) == 4
    assert "client_assertion" in entra.forms[1]
    run_token, first, second, last = entra.issued
    assert emulation.sent == [run_token, first, first, first, second, second, second, last]
    shown = " ".join(
        [
            ran.stdout,
            ran.stderr,
            batch.stdout,
            batch.stderr,
            *(path.read_text(encoding="utf-8") for path in tmp_path.glob("out*")),
            *(path.read_text(encoding="utf-8") for path in tmp_path.glob("refused*")),
        ]
    )
    for secret in (SECRET, "plain-federated-assertion", *entra.issued):
        assert secret not in shown
