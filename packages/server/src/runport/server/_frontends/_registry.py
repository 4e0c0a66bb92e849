"""The frontend protocols the server speaks: one line each, one route each (adr/0041)."""

from __future__ import annotations

from runport.server._frontends._protocol import FrontendProtocol
from runport.server._frontends.agui import AGUI
from runport.server._frontends.ui_message_stream import UIMessageStream

FRONTENDS: tuple[type[FrontendProtocol], ...] = (
    UIMessageStream,
    AGUI,
)


def registered(*, reasoning_key: bytes) -> list[FrontendProtocol]:
    """One of each registered protocol, read from ``FRONTENDS`` when called (a test adds a
    protocol by replacing it), their reasoning sealed with ``reasoning_key``."""
    return [frontend(reasoning_key=reasoning_key) for frontend in FRONTENDS]
