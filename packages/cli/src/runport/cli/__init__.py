"""The ``runport`` command line (docs/cli.md)."""

import sys

from runport.cli._main import main as _main

__all__ = ["main"]


def main() -> None:
    """Console-script entry point."""
    sys.exit(_main())
