"""The Python snippets of docs/testing-with-mocks.md and docs/async.md run as written: each
page's blocks, in order, as one script in a fresh interpreter."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("page", ["testing-with-mocks.md", "async.md"])
def test_the_pages_snippets_run(page: str, tmp_path: Path) -> None:
    blocks = BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
    assert len(blocks) >= 4
    script = tmp_path / "snippets.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
