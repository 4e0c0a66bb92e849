"""The suite's tests are grouped per worker (``--dist loadgroup``): the plugin marks each suite
class with an ``xdist_group``, and the expensive module fixtures of this package's own tests
(an inner session over every broken adapter) rely on one group running on one worker.
pytest-xdist groups through the node id, and a pytest that changes how node ids are made can
silently turn that off (pytest 9.2 with pytest-xdist 3.8 did: pytest-dev/pytest-xdist#1386):
nothing fails, every fixture is simply made once per worker. This proves the grouping with a
real two-worker session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MODULE = """\
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("one-worker")


@pytest.mark.parametrize("number", range(8))
def test_grouped(number):
    Path(f"{number}.worker").write_text(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_the_tests_of_one_xdist_group_run_on_one_worker(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_grouped.py").write_text(MODULE, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q",
         "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    workers = {path.name: path.read_text() for path in tmp_path.glob("*.worker")}
    assert len(workers) == 8, run.stdout
    assert len(set(workers.values())) == 1, (
        f"one xdist_group ran on several workers: {workers} — this pytest and pytest-xdist "
        "do not group (see the pin on pytest in pyproject.toml)"
    )
