"""Partial output: the structured answer parsed while it streams (``OutputSnapshot``).

The parser is core's ``PartialOutput``; this module decides when a turn gets one — only when
the caller asked and the contract's answer is structured (a text answer is its own ``Delta``s)
— and gives each answer its own, so a tool round or a correction round starts afresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from runport.contracts import OutputSnapshot
from runport.core import PartialOutput, is_text_schema


class Snapshots(Protocol):
    """What a relay feeds each ``Delta``'s text (the snapshot that text made, if any) and
    closes when the answer's ``Complete`` comes (the snapshot its end made, if any)."""

    def feed(self, text: str, /) -> OutputSnapshot | None: ...

    def close(self) -> OutputSnapshot | None: ...


def snapshots_for(output_schema: Mapping[str, Any], wanted: bool) -> Snapshots | None:
    """A fresh parser for one answer, or ``None`` when no snapshot is to be made."""
    if not wanted or is_text_schema(output_schema):
        return None
    return PartialOutput(output_schema)
