"""Every test gets an SDK pipeline that keeps what it records in memory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .otel_doubles import Recorded


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    pipeline = Recorded.start()
    yield pipeline
    pipeline.shutdown()
