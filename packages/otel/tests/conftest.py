"""``--import-mode=importlib`` puts no test folder on ``sys.path``; this adds this one, for the
helpers shared by the tests in ``otel_doubles.py`` (a name no other package uses), and gives
every test an SDK pipeline that keeps what it records in memory."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from otel_doubles import Recorded


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    pipeline = Recorded.start()
    yield pipeline
    pipeline.shutdown()
