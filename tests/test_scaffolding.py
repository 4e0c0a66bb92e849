"""Test scaffolding (ADR 0046): no test folder changes ``sys.path``, and none imports
another's.

pytest runs with ``--import-mode=importlib``, which imports a test folder without ``__init__.py``
as a package named after its path from the root (``packages.openai.tests``), so a helper beside
a test is imported relatively (``from .openai_upstream import Reply``). What the tests of several
packages share is public and installed (``runport.conformance.loopback``, ``.providers``,
``.json_texts``): each package's tests run in their own env with only its declared dependencies,
where another package's test folder is not there to import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

TEST_FOLDERS = sorted(
    [*(ROOT / "packages").glob("*/tests"), ROOT / "conformance" / "tests", ROOT / "tests"]
)


def _sources(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*.py")):
        if "data" not in path.relative_to(folder).parts[:-1]:
            yield path


def _helper_names() -> set[str]:
    """The top-level names under which a test folder's modules could be imported bare (only
    with that folder on ``sys.path``)."""
    names: set[str] = set()
    for folder in TEST_FOLDERS:
        names |= {path.stem for path in folder.glob("*.py")}
        names |= {path.name for path in folder.iterdir() if path.is_dir()}
    return names - {"__pycache__", "data"}


def _is_sys_path(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def sys_path_changes(tree: ast.AST) -> list[int]:
    """Lines that change ``sys.path``: a call of one of its methods, or an assignment to it
    (or to a slice of it)."""
    lines = []
    for node in ast.walk(tree):
        call = node.func if isinstance(node, ast.Call) else None
        if isinstance(call, ast.Attribute) and _is_sys_path(call.value) and call.attr != "copy":
            lines.append(node.lineno)
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if _is_sys_path(target) or (
                isinstance(target, ast.Subscript) and _is_sys_path(target.value)
            ):
                lines.append(node.lineno)
    return sorted(lines)


def _imported(tree: ast.AST, path: Path) -> Iterator[tuple[int, str, Path | None]]:
    """Each import: its line, its dotted name, and the folder or file it reaches in this
    repository when it is relative or names a path from the root (``None`` otherwise)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, _from_root(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                module = node.module or ""
                yield node.lineno, "." * node.level + module, base.joinpath(*module.split("."))
            elif node.module is not None:
                yield node.lineno, node.module, _from_root(node.module)


def _from_root(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] not in {"packages", "conformance", "tests"}:
        return None
    return ROOT.joinpath(*parts)


def cross_imports(folder: Path, path: Path, tree: ast.AST) -> list[str]:
    """The imports of ``path`` (in test folder ``folder``) that reach outside that folder into
    another test folder, or name a test folder's module bare."""
    helpers = _helper_names()
    found = []
    for line, name, reached in sorted(_imported(tree, path), key=lambda each: each[0]):
        if reached is not None:
            if reached.resolve().is_relative_to(folder.resolve()):
                continue
            if any(reached.resolve().is_relative_to(other) for other in TEST_FOLDERS):
                found.append(f"{line}: {name} (another package's tests)")
            elif name.startswith("."):
                found.append(f"{line}: {name} (outside this test folder)")
        elif name.split(".")[0] in helpers:
            found.append(f"{line}: {name} (a test folder's module, importable only by sys.path)")
    return found


SOURCES = [(folder, path) for folder in TEST_FOLDERS for path in _sources(folder)]


def _id(item: tuple[Path, Path]) -> str:
    return item[1].relative_to(ROOT).as_posix()


@pytest.mark.parametrize(("folder", "path"), SOURCES, ids=[_id(item) for item in SOURCES])
def test_no_test_file_changes_sys_path(folder: Path, path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    assert sys_path_changes(tree) == [], (
        f"{_id((folder, path))} changes sys.path: import a helper beside it relatively, "
        "and what other packages' tests share from an installed package"
    )


@pytest.mark.parametrize(("folder", "path"), SOURCES, ids=[_id(item) for item in SOURCES])
def test_no_test_file_imports_another_test_folder(folder: Path, path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    assert cross_imports(folder, path, tree) == []


def test_the_checks_see_what_they_forbid() -> None:
    """Each check flags the shapes it exists for, so an empty finding above means something."""
    surgery = ast.parse(
        "import sys\nsys.path.insert(0, 'x')\nsys.path.append('y')\nsys.path[:0] = ['z']\n"
        "sys.path += ['w']\nsys.path = []\nprint(sys.path.copy())\n"
    )
    assert sys_path_changes(surgery) == [2, 3, 4, 5, 6]

    folder = ROOT / "packages" / "openai" / "tests"
    path = folder / "test_example.py"
    imports = ast.parse(
        "from .openai_upstream import Reply\n"
        "from ...http.tests.http_faults import LineCodec\n"
        "from packages.http.tests import http_faults\n"
        "import http_faults\n"
        "from runport.conformance.loopback import serving\n"
        "from .. import pyproject\n"
    )
    found = cross_imports(folder, path, imports)
    assert [finding.split(":")[0] for finding in found] == ["2", "3", "4", "6"]
