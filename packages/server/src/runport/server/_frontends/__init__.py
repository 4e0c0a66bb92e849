"""The server's frontend wing: each chat frontend's protocol as one ``FrontendProtocol`` in a
folder of its own, one registry (``_registry.FRONTENDS``), one route per entry, and one job
that runs a chat whether or not the server is resumable (adr/0041, docs/frontends.md).

What the rest of the server takes from the wing is named here: nothing outside it imports a
module of its own (import-linter's ``private-stays-home`` contract)."""

from runport.server._frontends._registry import registered
from runport.server._frontends._routes import frontend_routes
from runport.server._frontends.agui import AGUI_HEADERS, agui_stream
from runport.server._frontends.ui_message_stream import (
    UI_MESSAGE_STREAM_HEADERS,
    ui_message_stream,
)

__all__ = [
    "AGUI_HEADERS",
    "UI_MESSAGE_STREAM_HEADERS",
    "agui_stream",
    "frontend_routes",
    "registered",
    "ui_message_stream",
]
