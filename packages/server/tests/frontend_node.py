"""Running the frontend protocols' own clients (Node scripts in the repository's
``frontend/`` folder, from its lockfile) from the tests of the ``frontend`` tox env."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

FRONTEND = Path(__file__).resolve().parents[3] / "frontend"
ENABLED = os.environ.get("RUNPORT_FRONTEND_TESTS") == "1"
SKIP_REASON = (
    "the frontend protocols' own clients (the ai and @ag-ui/client npm packages, a useChat "
    "page in Chromium) run in their own tox env: `tox run -e frontend` (needs Node 20 and "
    "`npm ci` in frontend/; .ci/run does both)"
)


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("no node on PATH: the frontend env needs Node 20 or newer")
    if not (FRONTEND / "node_modules").is_dir():
        pytest.fail("frontend/node_modules is missing: run `npm ci` in frontend/ first")
    return found


def run_script(script: str, request: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    """Run ``frontend/<script>`` with ``request`` and return what it printed (JSON)."""
    done = subprocess.run(
        [node(), str(FRONTEND / script), json.dumps(request)],
        cwd=FRONTEND,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result
