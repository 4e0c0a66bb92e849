"""An adapter's failure that quotes credentials — whoever wrote the adapter — reaches no file
the command writes and not the terminal (issue 22): the one rule, ``redact_secrets``, applies
where the application hands a failure on and where the command writes to stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

Cli = Any  # the `runport` fixture of conftest.py

QUICK = Path(__file__).resolve().parents[3] / "examples" / "quickstart"
SECRETS = ("hunter2", "k3y-42", "t0k")
LEAKY = """\
api_version: runport.mock/v1
id: leaky
turns:
  - events:
      - kind: fail
        code: TQX_RUNTIME_PERMANENT
        message: "refused: https://me:hunter2@llm.example/v1?api-key=k3y-42&access_token=t0k"
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "leaky.yaml").write_text(LEAKY, encoding="utf-8")
    request = {"inputs": {"topic": "rivers", "audience": "poets"}}
    (tmp_path / "input.json").write_text(json.dumps(request), encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text(json.dumps(request) + "\n", encoding="utf-8")
    return tmp_path


def assert_clean(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} reached {where}: {text[-2000:]}"


@pytest.mark.parametrize("mode", [[], ["--stream"], ["--json"]])
def test_run_shows_the_failure_without_its_credentials(
    runport: Cli, folder: Path, mode: list[str]
) -> None:
    done = runport("run", QUICK / "contract.yaml", "--input", folder / "input.json",
                   "--scenario", folder / "leaky.yaml", *mode)  # fmt: skip
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "refused: https://[redacted]@llm.example/v1?api-key=[redacted]" in said
    assert_clean("runport run's output", said)


def test_batch_writes_no_credentials(runport: Cli, folder: Path) -> None:
    out = folder / "out.jsonl"
    done = runport("batch", QUICK / "contract.yaml", "--inputs", folder / "rows.jsonl",
                   "--scenario", folder / "leaky.yaml", "--out", out)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "api-key=[redacted]" in out.read_text(encoding="utf-8")
    assert_clean("the batch output", out.read_text(encoding="utf-8"))
    assert_clean("runport batch's stderr", done.stdout + done.stderr)


def test_record_writes_no_credentials(runport: Cli, folder: Path) -> None:
    out = folder / "fixtures" / "leaky-recorded.yaml"
    done = runport("record", QUICK / "contract.yaml", "--input", folder / "input.json",
                   "--scenario", folder / "leaky.yaml", "--out", out)  # fmt: skip
    assert done.returncode == 0, done.stderr
    scenario = out.read_text(encoding="utf-8")
    assert "api-key=[redacted]" in scenario
    assert_clean("the recorded scenario", scenario)
    assert_clean("runport record's stderr", done.stdout + done.stderr)


def test_a_plugin_error_quoting_a_url_is_shown_redacted(with_plugins: Any, folder: Path) -> None:
    plugin = (
        "def broken():\n"
        "    raise ValueError('cannot reach https://me:hunter2@llm.example/v1?key=k3y-42')\n"
    )
    done = with_plugins(plugin, {"broken": "test_plugins:broken"})(
        "run", QUICK / "contract.yaml", "--input", folder / "input.json", "--adapter", "broken"
    )
    assert done.returncode == 1
    assert "cannot reach https://[redacted]@llm.example/v1?key=[redacted]" in done.stderr
    assert_clean("the terminal", done.stdout + done.stderr)
