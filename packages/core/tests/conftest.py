"""``--import-mode=importlib`` puts no test folder on ``sys.path``: this adds this folder, for the
JSON-text strategies in ``partial_texts.py`` (a name no other package's tests use)."""

from __future__ import annotations

import sys
from pathlib import Path

# Appended, not prepended: other packages' tests import their own ``conftest`` by name.
sys.path.append(str(Path(__file__).parent))
