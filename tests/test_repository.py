"""The repository explains itself: no tracked file cites a document outside it.

The docs live in docs/ and the decisions in adr/; a reference to the team's spec section
numbers, or a path into the shared folder beside the repository, would point a reader at
something they do not have.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Built from pieces so this file does not contain what it looks for.
SPEC_CITATION = "SPEC" + " " + "\N{SECTION SIGN}"
SPEC_SECTION = "SPEC" + " section"
SHARED = ("..", "shared")
SHARED_PATHS = ("/".join(SHARED), "/work/" + SHARED[1] + "/")


def tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in listed.decode().split("\0") if name]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def _offenders(needles: tuple[str, ...], paths: list[Path] | None = None) -> list[str]:
    found = []
    for path in tracked_files() if paths is None else paths:
        text = _text(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(needle in line for needle in needles):
                found.append(f"{path.name}:{number}: {line.strip()[:120]}")
    return found


def test_no_file_cites_spec_sections() -> None:
    offenders = _offenders((SPEC_CITATION, SPEC_SECTION))
    assert not offenders, "cite docs/<page>.md or adr/ instead:\n" + "\n".join(offenders)


def test_no_file_reads_or_cites_the_shared_folder() -> None:
    offenders = _offenders(SHARED_PATHS)
    assert not offenders, "the repository must not depend on the shared folder:\n" + "\n".join(
        offenders
    )


def test_the_scan_finds_a_planted_citation(tmp_path: Path) -> None:
    planted = tmp_path / "planted.md"
    planted.write_text(
        f"fine\nsee {SPEC_CITATION}4 here\nread {SHARED_PATHS[0]}/notes.md\n", encoding="utf-8"
    )
    assert _offenders((SPEC_CITATION, SPEC_SECTION), [planted]) == [
        f"planted.md:2: see {SPEC_CITATION}4 here"
    ]
    assert len(_offenders(SHARED_PATHS, [planted])) == 1


def test_relative_links_in_the_readme_and_docs_lead_to_files() -> None:
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    broken = []
    for page in pages:
        if "_build" in page.parts:
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "\n".join(broken)
