from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import runport.core
from runport.contracts import OutputSnapshot, StreamEvent


@pytest.fixture
def collect() -> tuple[list[StreamEvent], Callable[[StreamEvent], None]]:
    seen: list[StreamEvent] = []
    return seen, seen.append


class _WholeValues:
    """Test-only stand-in for core's incremental parser while it is being written elsewhere:
    a snapshot whenever the text so far is a whole JSON document with a new value."""

    def __init__(self, output_schema: dict[str, Any]) -> None:
        self._text = ""
        self._last: object = object()

    def feed(self, delta_text: str) -> OutputSnapshot | None:
        self._text += delta_text
        try:
            value = json.loads(self._text)
        except ValueError:
            return None
        if value == self._last:
            return None
        self._last = value
        return OutputSnapshot(value=value, completed=[""])


@pytest.fixture
def partial_output_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """Core's parser once it exists; the stand-in until then."""
    if not hasattr(runport.core, "PartialOutput"):
        monkeypatch.setattr(runport.core, "PartialOutput", _WholeValues, raising=False)
