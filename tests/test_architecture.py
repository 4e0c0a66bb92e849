"""docs/architecture.md is the repository's map, and the map is true.

Its tables are read back and compared with what the packages declare: every distribution
(``packages/*/pyproject.toml`` and ``conformance/pyproject.toml``) with its import name and the
runport distributions it depends on, every entry point of every group, and the layers, which
must be the import-linter layers contract of the root ``pyproject.toml``. A package, an entry
point or a layer added, moved or removed without the map following fails here, and so does a
map row that names something no longer there.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PREFIX = "runport-"


@dataclass(frozen=True)
class Distribution:
    name: str
    imports: frozenset[str]  # ``runport.x`` for each package under its src/runport/
    depends_on: frozenset[str]  # the short names of the runport distributions it requires
    entry_points: frozenset[tuple[str, str, str]]  # (group, name, object)


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0].lower()


def distributions() -> list[Distribution]:
    folders = [
        *sorted((ROOT / "packages").glob("*/pyproject.toml")),
        ROOT / "conformance" / "pyproject.toml",
    ]
    found = []
    for pyproject in folders:
        project: dict[str, Any] = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        source = pyproject.parent / "src" / "runport"
        imports = frozenset(
            f"runport.{child.name}"
            for child in (source.iterdir() if source.is_dir() else [])
            if (child / "__init__.py").is_file()
        )
        depends_on = frozenset(
            name.removeprefix(PREFIX)
            for name in map(_requirement_name, project.get("dependencies", []))
            if name.startswith(PREFIX)
        )
        groups: dict[str, dict[str, str]] = dict(project.get("entry-points", {}))
        if "scripts" in project:
            groups["console_scripts"] = project["scripts"]
        entry_points = frozenset(
            (group, name, value) for group, named in groups.items() for name, value in named.items()
        )
        found.append(Distribution(project["name"], imports, depends_on, entry_points))
    return found


def section(text: str, title: str) -> str:
    """The body of the ``## title`` section of a Markdown page."""
    parts = re.split(rf"^## {re.escape(title)}\s*$", text, flags=re.M)
    assert len(parts) == 2, f"docs/architecture.md needs exactly one '## {title}' section"
    return re.split(r"^## ", parts[1], maxsplit=1, flags=re.M)[0]


def table(body: str) -> list[list[str]]:
    """The rows of the first Markdown table in ``body``, header and rule left out."""
    rows = [line for line in body.splitlines() if line.startswith("|")]
    assert len(rows) > 2, "no table found"
    return [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows[2:]]


def _code(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _first_code(cell: str) -> str:
    return (_code(cell) or [cell])[0]


def packages_in(text: str) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """distribution -> (import names, runport short names in its 'depends on' cell)."""
    short_names = {d.name.removeprefix(PREFIX) for d in distributions()}
    read = {}
    for distribution, imports, depends_on, *_ in table(section(text, "Packages")):
        name = distribution.split()[0].strip("`")
        words = set(re.findall(r"[\w-]+", depends_on.split(";")[0]))
        read[name] = (frozenset(_code(imports)), frozenset(words & short_names))
    return read


def entry_points_in(text: str) -> set[tuple[str, str, str]]:
    read = set()
    for group, name, value, *_ in table(section(text, "Entry points")):
        read.add((_first_code(group), _first_code(name), _first_code(value)))
    return read


def layers_in(text: str) -> list[str]:
    """The layers block of the page, top down, each line's comment left out."""
    (block,) = re.findall(r"```text\n(.*?)```", section(text, "Layers"), flags=re.S)
    return [" | ".join(line.split("  ")[0].split(" | ")).strip() for line in block.splitlines()]


def import_linter_layers() -> list[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [
        contract["layers"]
        for contract in pyproject["tool"]["importlinter"]["contracts"]
        if contract["type"] == "layers"
    ]
    return [" | ".join(part.strip() for part in layer.split("|")) for layer in layers]


def problems(text: str) -> list[str]:
    """Every way ``text`` (an architecture page) differs from the repository."""
    found: list[str] = []
    declared = {d.name: d for d in distributions()}
    mapped = packages_in(text)
    for name in sorted(declared.keys() - mapped.keys()):
        found.append(f"distribution {name} is not in the Packages table")
    for name in sorted(mapped.keys() - declared.keys()):
        found.append(f"the Packages table names {name}, which no pyproject.toml declares")
    for name in sorted(declared.keys() & mapped.keys()):
        imports, depends_on = mapped[name]
        if imports != declared[name].imports:
            found.append(
                f"{name} imports as {sorted(declared[name].imports)}, not {sorted(imports)}"
            )
        if depends_on != declared[name].depends_on:
            found.append(
                f"{name} depends on {sorted(declared[name].depends_on)}, not {sorted(depends_on)}"
            )
    points = {point for d in declared.values() for point in d.entry_points}
    written = entry_points_in(text)
    for group, name, value in sorted(points - written):
        found.append(f"entry point {name} = {value} of group {group} is not in the table")
    for group, name, value in sorted(written - points):
        found.append(
            f"the table names entry point {name} = {value} of {group}, which is not declared"
        )
    if layers_in(text) != import_linter_layers():
        found.append(f"layers {layers_in(text)} are not import-linter's {import_linter_layers()}")
    layered = {f"runport.{m.strip()}" for layer in import_linter_layers() for m in layer.split("|")}
    every_import = {i for d in declared.values() for i in d.imports}
    if layered != every_import:
        found.append(f"the layers hold {sorted(layered)}, the packages {sorted(every_import)}")
    return found


def test_the_architecture_page_is_the_repository_as_it_is() -> None:
    offenders = problems(ARCHITECTURE.read_text(encoding="utf-8"))
    assert not offenders, "docs/architecture.md is out of date:\n" + "\n".join(offenders)


def test_every_package_and_entry_point_group_is_read_from_the_pyprojects() -> None:
    found = distributions()
    names = {d.name for d in found}
    assert {"runport", "runport-conformance", "runport-core", "runport-http"} <= names
    assert len(names) == len(list((ROOT / "packages").glob("*/pyproject.toml"))) + 1
    groups = {group for d in found for group, _, _ in d.entry_points}
    assert {"runport.adapters", "runport.async_adapters", "pytest11", "console_scripts"} <= groups


def test_the_check_finds_a_map_that_drifted() -> None:
    true = ARCHITECTURE.read_text(encoding="utf-8")
    assert not problems(true)
    without_http = "\n".join(
        line for line in true.splitlines() if not line.startswith("| runport-http ")
    )
    assert "distribution runport-http is not in the Packages table" in problems(without_http)
    without_async = "\n".join(
        line
        for line in true.splitlines()
        if not (line.startswith("| `runport.async_adapters`") and "`gemini`" in line)
    )
    assert any("of group runport.async_adapters" in p for p in problems(without_async))
    swapped = true.replace("\ncli\n", "\ncli-renamed\n", 1)
    assert any(p.startswith("layers ") for p in problems(swapped))
    extra = true.replace(
        "| `console_scripts` |",
        "| `runport.adapters` | `ghost` | `a.b:c` | none |\n| `console_scripts` |",
        1,
    )
    assert any("ghost" in p for p in problems(extra))
