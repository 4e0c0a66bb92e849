"""runport over HTTP (docs/server.md): an ASGI app on Starlette that lists contracts and runs
them — the envelope as JSON, or every stream event as a server-sent event — with a
playground page at ``/``.

``ui_message_stream`` and ``agui_stream`` turn any run's events into the two protocols chat
frontends speak (the Vercel AI SDK's UI message stream, AG-UI), for any ASGI app
(docs/frontends.md); ``runport serve`` answers in them on its chat and AG-UI routes.

``runport serve`` is the usual way in; ``create_app`` builds the app over any catalog and
adapter (or adapter factory), to mount in a service of your own. What the server guards
against, and how, is in docs/security.md; its bounds are in docs/limits.md.
"""

from runport.server._agui import AGUI_HEADERS, agui_stream
from runport.server._app import AdapterFactory, AdapterSource, create_app
from runport.server._body import DEFAULT_BODY_TIMEOUT_S, DEFAULT_MAX_BODY_BYTES
from runport.server._protocol import DEFAULT_HEADER_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS
from runport.server._serve import prepare, run_server, serve_in_background
from runport.server._ui_stream import UI_MESSAGE_STREAM_HEADERS, ui_message_stream

__all__ = [
    "AGUI_HEADERS",
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONNECTIONS",
    "UI_MESSAGE_STREAM_HEADERS",
    "AdapterFactory",
    "AdapterSource",
    "agui_stream",
    "create_app",
    "prepare",
    "run_server",
    "serve_in_background",
    "ui_message_stream",
]
