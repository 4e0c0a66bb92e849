"""``--import-mode=importlib`` puts no test folder on ``sys.path``, so this one adds its own
folder for the shared doubles in ``http_faults.py`` (a name no other package's tests use)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
