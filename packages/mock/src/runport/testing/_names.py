"""The names the guard and runport's HTTP adapters agree on (``runport.http`` reads the same
variable; neither package imports the other)."""

from __future__ import annotations

from typing import Final

__all__ = ["ALLOW_MODEL_REQUESTS", "MARKER"]

ALLOW_MODEL_REQUESTS: Final = "RUNPORT_ALLOW_MODEL_REQUESTS"
MARKER: Final = "allow_model_requests"
