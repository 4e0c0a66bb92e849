"""``--import-mode=importlib`` puts no test folder on ``sys.path``; this adds this one, for the
adapters shared by the tests in ``conformance_doubles.py`` (a name no other package uses)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
