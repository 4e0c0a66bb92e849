"""AG-UI: its event stream, its ``RunAgentInput``, and the protocol object the server's
routes are made from."""

from runport.server._frontends.agui._frontend import AGUI

__all__ = ["AGUI"]
