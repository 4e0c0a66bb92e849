"""What law 10 plants in an upstream's error answers, and where (docs/upstream-safety.md).

A caller may be shown the provider's own structured error message — nothing else of a response
body. So the suite plants two different things:

- the *message marker* (``WireContext.marker``, words and short hex groups, nothing shaped like
  a key) goes where a protocol writes the provider's message: seeing it is allowed;
- the *body canary* goes everywhere else: beside that message, as a further field of the same
  error object (``runport_conformance_detail``), and as the whole content of a garbage frame
  or body. Seeing it anywhere means the adapter showed a body, not a message.

The canary is planted by the suite around whatever a ``WireProtocol`` writes, so a protocol
written for the suite (built in or an author's own) plants nothing itself.
"""

from __future__ import annotations

import json
import secrets
from typing import Any, Final

from runport.conformance._cases import Case
from runport.conformance._wire_protocol import WireContext, WireProtocol

__all__ = ["DETAIL_FIELD", "Planted", "body_canary", "message_marker", "plant"]

DETAIL_FIELD: Final = "runport_conformance_detail"


def message_marker() -> str:
    """A provider message's marker: unique, and never mistaken for a key by a redactor."""
    return "runport provider says " + " ".join(secrets.token_hex(2) for _ in range(3))


def body_canary() -> str:
    """What stands for the rest of a body: unique, and just as unlike a key."""
    return "runport body beyond the message " + " ".join(secrets.token_hex(2) for _ in range(3))


def _plant_into(value: Any, marker: str, canary: str) -> bool:
    """Add the canary beside every string holding ``marker``; whether one was found."""
    found = False
    if isinstance(value, dict):
        if any(isinstance(item, str) and marker in item for item in value.values()):
            value[DETAIL_FIELD] = canary
            found = True
        for item in list(value.values()):
            found = _plant_into(item, marker, canary) or found
    elif isinstance(value, list):
        for item in value:
            found = _plant_into(item, marker, canary) or found
    return found


def plant(data: bytes, marker: str, canary: str) -> bytes:
    """``data`` (an error body, or a frame around one JSON object) with the canary planted
    beside the provider's message; unchanged when it holds no JSON object with the marker."""
    start, end = data.find(b"{"), data.rfind(b"}")
    if start < 0 or end < start:
        return data
    try:
        value = json.loads(data[start : end + 1])
    except ValueError:
        return data
    if not _plant_into(value, marker, canary):
        return data
    return data[:start] + json.dumps(value).encode() + data[end + 1 :]


class Planted:
    """A ``WireProtocol`` as the upstream plays it: every error answer it writes carries the
    canary beside its message (the upstream plays a garbage case with the canary as its
    context's marker: garbage is no message)."""

    def __init__(self, wire: WireProtocol, canary: str) -> None:
        self._wire = wire
        self._canary = canary

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wire, name)

    def error_body(self, status: int, context: WireContext) -> bytes:
        return plant(self._wire.error_body(status, context), context.marker, self._canary)

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        # a protocol whose frames are binary (an eventstream's CRCs) makes the frame again
        remade = getattr(self._wire, "planted_error_frame", None)
        if remade is not None:
            frame: bytes = remade(case, context, **{DETAIL_FIELD: self._canary})
            return frame
        return plant(self._wire.error_frame(case, context), context.marker, self._canary)

    def error_response(self, case: Case, context: WireContext) -> tuple[int, bytes]:
        # the protocol's default calls error_body on itself: plant whatever came back
        status, body = self._wire.error_response(case, context)
        return status, plant(body, context.marker, self._canary)
