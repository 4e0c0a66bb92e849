"""The snippets in docs/codecs.md and docs/upstream-safety.md run as written."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = ["codecs.md", "upstream-safety.md"]


def snippets(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), re.S)


@pytest.mark.parametrize("page", PAGES)
def test_every_python_snippet_runs(page: str, tmp_path: Path) -> None:
    found = snippets(page)
    assert found, f"docs/{page} has no python snippet"
    for number, code in enumerate(found):
        script = tmp_path / f"snippet_{number}.py"
        script.write_text(code, encoding="utf-8")
        runpy.run_path(str(script), run_name="__main__")
