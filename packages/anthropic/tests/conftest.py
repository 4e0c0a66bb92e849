"""``--import-mode=importlib`` puts no test folder on ``sys.path``: this adds this folder (the
wire shapes in ``anthropic_wire.py``) and runport-http's (its loopback server and the checks
every provider codec's tests share)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
# Appended, not prepended: other packages' tests import their own ``conftest`` by name.
sys.path.append(str(HERE))
sys.path.append(str(HERE.parents[1] / "http" / "tests"))

from provider_checks import client, playback  # noqa: E402, F401  (fixtures, found by name)
