"""The docs/architecture.md import contracts hold, and they bite: a planted forbidden import fails
them."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("importlinter") is None, reason="import-linter is not installed"
)


def _lint(root: Path, src_paths: list[Path]) -> subprocess.CompletedProcess[str]:
    """lint-imports over a copy of the tree. ``-S`` skips ``.pth`` files, so the editable
    installs of the real packages cannot shadow the copy being checked."""
    paths = [
        *src_paths,
        Path(sysconfig.get_paths()["purelib"]),
        Path(sysconfig.get_paths()["platlib"]),
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}
    code = (
        "import sys; from importlinter.cli import lint_imports_command; "
        "sys.exit(lint_imports_command())"
    )
    return subprocess.run(
        [sys.executable, "-S", "-c", code, "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _copy(tmp_path: Path) -> tuple[Path, list[Path]]:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    srcs = []
    for package in [*sorted((ROOT / "packages").iterdir()), ROOT / "conformance"]:
        if (package / "src").is_dir():
            target = tmp_path / "packages" / package.name / "src"
            shutil.copytree(package / "src", target, ignore=shutil.ignore_patterns("__pycache__"))
            srcs.append(target)
    return tmp_path, srcs


def test_the_contracts_hold_on_the_real_tree(tmp_path: Path) -> None:
    root, srcs = _copy(tmp_path)
    result = _lint(root, srcs)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("core/src/runport/core/_receipt.py", "import runport.cli", "runport layers"),
        ("contracts/src/runport/contracts/_models.py", "import runport.ports", "runport layers"),
        ("mock/src/runport/mock/__init__.py", "import runport.application", "runport layers"),
        ("core/src/runport/core/_schema.py", "import httpx", "import no HTTP client"),
        (
            "application/src/runport/application/_envelope.py",
            "import runport.mock",
            "application and mcp reach adapters only through entry points",
        ),
        (
            "ray/src/runport/ray/_engine.py",
            "from runport.application._batch._runner import RowRunner as _Private",
            "ray reaches application only through its public names",
        ),
        (
            "cli/src/runport/cli/_check.py",
            "from runport.core._receipt import parse_json_text as _Private",
            "no package imports another package's private module",
        ),
        (
            "openai/src/runport/openai/_chunks.py",
            "import runport.http._json",
            "no package imports another package's private module",
        ),
    ],
)
def test_a_planted_forbidden_import_breaks_a_contract(
    tmp_path: Path, module: str, planted: str, contract: str
) -> None:
    root, srcs = _copy(tmp_path)
    target = root / "packages" / module
    target.write_text(target.read_text(encoding="utf-8") + "\n" + planted + "\n", encoding="utf-8")
    result = _lint(root, srcs)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert contract in result.stdout


def test_ray_is_kept_from_every_private_module_of_application() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(
        c
        for c in contracts["tool"]["importlinter"]["contracts"]
        if c["id"] == "ray-public-application"
    )
    package = ROOT / "packages" / "application" / "src" / "runport" / "application"
    private = {
        f"runport.application.{path.name.removesuffix('.py')}"
        for path in package.iterdir()
        if path.name.startswith("_") and path.name not in ("__init__.py", "__pycache__")
    }
    assert set(contract["forbidden_modules"]) == private


def test_a_new_unplaced_package_breaks_the_exhaustive_layers(tmp_path: Path) -> None:
    root, srcs = _copy(tmp_path)
    extra = root / "packages" / "stray" / "src" / "runport" / "stray"
    extra.mkdir(parents=True)
    (extra / "__init__.py").write_text("", encoding="utf-8")
    result = _lint(root, [*srcs, extra.parent.parent])
    assert result.returncode != 0
    assert "stray" in result.stdout
