"""docs/observability.md prints what the page shows (tests/test_snippets.py runs every snippet);
the shell blocks configure the example with standard OTEL_* variables only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .test_snippets import run_python

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "observability.md"
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)


def test_the_printed_output_is_the_one_the_page_shows(tmp_path: Path) -> None:
    position = next(i for i, (_, code) in enumerate(BLOCKS) if "print(sorted(" in code)
    lang, shown = BLOCKS[position + 1]
    assert lang == "text"
    assert run_python(BLOCKS[position][1], tmp_path).stdout == shown


def test_the_example_is_configured_by_standard_variables_alone() -> None:
    shell = [code for lang, code in BLOCKS if lang == "sh" and "examples/otel_tracing.py" in code]
    assert len(shell) == 2
    for code in shell:
        variables = set(re.findall(r"\b([A-Z][A-Z0-9_]+)=", code))
        assert variables, code
        assert all(name.startswith("OTEL_") for name in variables), variables
    assert (ROOT / "examples" / "otel_tracing.py").is_file()


PRINTING = [
    position
    for position, (lang, code) in enumerate(BLOCKS[:-1])
    if lang == "python"
    and ("print(" in code or "sys.stdout" in code)
    and BLOCKS[position + 1][0] == "text"
]


@pytest.mark.parametrize("position", PRINTING)
def test_every_printing_snippet_prints_the_block_after_it(position: int, tmp_path: Path) -> None:
    """The run's span tree, the logging records: what the page says a snippet prints."""
    assert run_python(BLOCKS[position][1], tmp_path).stdout == BLOCKS[position + 1][1]
