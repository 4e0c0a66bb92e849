"""AG-UI: its event stream, its ``RunAgentInput``, and the protocol object the server's
routes are made from."""

from runport.server._frontends.agui._frontend import AGUI
from runport.server._frontends.agui._stream import AGUI_HEADERS, agui_stream

__all__ = ["AGUI", "AGUI_HEADERS", "agui_stream"]
