"""What the commands that serve a folder of contracts (``mcp``, ``serve``) share: their
options, their warnings on stderr, and telling a missing optional extra from a broken one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_folder_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--contracts", type=Path, required=True, help="folder of contract files")
    parser.add_argument("--adapter", default="mock", help="adapter name (default: mock)")
    parser.add_argument("--scenario", type=Path, help="scenario file for the mock adapter")


def extra_missing(error: ModuleNotFoundError, *modules: str) -> bool:
    """Whether the import failed because one of ``modules`` (an extra's packages) is not
    installed, rather than because something inside them is broken."""
    name = error.name or ""
    return any(name == module or name.startswith(f"{module}.") for module in modules)


def warn(message: str) -> None:
    sys.stderr.write(f"runport: warning: {message}\n")
    sys.stderr.flush()
