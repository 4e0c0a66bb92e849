"""``--import-mode=importlib`` puts no test folder on ``sys.path``: this adds this folder for
``port_doubles.py``, the request and receipt the sync and async port tests share."""

from __future__ import annotations

import sys
from pathlib import Path

# Appended, not prepended: other packages' tests import their own ``conftest`` by name.
sys.path.append(str(Path(__file__).parent))
