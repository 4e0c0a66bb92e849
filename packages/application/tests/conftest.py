from __future__ import annotations

from collections.abc import Callable

import pytest

from runport.contracts import StreamEvent


@pytest.fixture
def collect() -> tuple[list[StreamEvent], Callable[[StreamEvent], None]]:
    seen: list[StreamEvent] = []
    return seen, seen.append
