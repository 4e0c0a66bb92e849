"""The ``runport`` command line (SPEC §10)."""

import sys

from runport.cli._main import main as _main

__all__ = ["main"]


def main() -> None:
    """Console-script entry point."""
    sys.exit(_main())
