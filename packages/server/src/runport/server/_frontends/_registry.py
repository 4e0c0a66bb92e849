"""The frontend protocols the server speaks: one line each, one route each (adr/0041)."""

from __future__ import annotations

from runport.server._frontends._protocol import FrontendProtocol
from runport.server._frontends.agui import AGUI
from runport.server._frontends.ui_message_stream import UIMessageStream

FRONTENDS: tuple[type[FrontendProtocol], ...] = (
    UIMessageStream,
    AGUI,
)
