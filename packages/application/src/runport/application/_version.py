from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("runport-application")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    VERSION = "0.1.0"
