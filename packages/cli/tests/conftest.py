"""What the CLI tests share: the command in a real subprocess, and throwaway adapter plugins."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

DATA = Path(__file__).with_name("data")


@dataclass(frozen=True)
class Cli:
    """``python -m runport.cli`` as a subprocess, with ``plugins`` on ``PYTHONPATH``."""

    plugins: Path | None = None

    def env(self) -> dict[str, str]:
        env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
        if self.plugins is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                filter(None, [str(self.plugins), env.get("PYTHONPATH")])
            )
        return env

    def argv(self, *args: str | Path) -> list[str]:
        return [sys.executable, "-m", "runport.cli", *map(str, args)]

    def __call__(
        self, *args: str | Path, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args),
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
            env=self.env(),
            cwd=cwd,
            check=False,
        )


PluginMaker = Callable[[str, Mapping[str, str]], Cli]


@pytest.fixture
def with_plugins(tmp_path: Path) -> PluginMaker:
    """Write module ``source`` and a distribution registering ``entry_points`` (name →
    ``module:attr``, the module ``test_plugins``) in the ``runport.adapters`` group; the
    :class:`Cli` that sees them."""

    def make(source: str, entry_points: Mapping[str, str]) -> Cli:
        root = tmp_path / "plugins"
        root.mkdir()
        (root / "test_plugins.py").write_text(source, encoding="utf-8")
        info = root / "test_plugins-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: test-plugins\nVersion: 0.1\n", encoding="utf-8"
        )
        lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
        (info / "entry_points.txt").write_text(f"[runport.adapters]\n{lines}", encoding="utf-8")
        return Cli(plugins=root)

    return make


@pytest.fixture
def runport() -> Cli:
    """The command, by the name a reader expects in a test."""
    return Cli()
