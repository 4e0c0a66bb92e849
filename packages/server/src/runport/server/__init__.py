"""runport over HTTP (docs/server.md): an ASGI app on Starlette that lists contracts and runs
them — the envelope as JSON, or every stream event as a server-sent event — with a
playground page at ``/``.

``ui_message_stream`` and ``agui_stream`` turn any run's events into the two protocols chat
frontends speak (the Vercel AI SDK's UI message stream, AG-UI), for any ASGI app
(docs/frontends.md); ``runport serve`` answers in them on its chat and AG-UI routes.

``runport serve`` is the usual way in; ``create_app`` builds the app over any catalog and
adapter (or adapter factory), to mount in a service of your own. What the server guards
against, and how, is in docs/security.md; its bounds are in docs/limits.md.

With an ``EventLog`` (``MemoryEventLog`` in this process, ``RedisEventLog`` shared by many
server processes) streamed runs outlive their connections and are resumed by
``Last-Event-ID``. ``RedisEventLog`` needs the ``redis`` package (``runport[redis]``), which
is imported only when one is made.
"""

from runport.server._app import AdapterFactory, AdapterSource, create_app
from runport.server._body import DEFAULT_BODY_TIMEOUT_S, DEFAULT_MAX_BODY_BYTES
from runport.server._event_log import (
    DEFAULT_LEASE_S,
    DEFAULT_RETENTION_S,
    EventLog,
    EventLogError,
    LogEntry,
    LogRead,
    MemoryEventLog,
    Renewal,
    RunClosed,
    RunState,
)
from runport.server._frontends import (
    AGUI_HEADERS,
    UI_MESSAGE_STREAM_HEADERS,
    agui_stream,
    ui_message_stream,
)
from runport.server._protocol import DEFAULT_HEADER_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS
from runport.server._redis_log import RedisEventLog
from runport.server._runs import DEFAULT_ORPHAN_TIMEOUT_S
from runport.server._serve import prepare, run_server, serve_in_background
from runport.server._sse import DEFAULT_HEARTBEAT_S

__all__ = [
    "AGUI_HEADERS",
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "DEFAULT_HEARTBEAT_S",
    "DEFAULT_LEASE_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_ORPHAN_TIMEOUT_S",
    "DEFAULT_RETENTION_S",
    "UI_MESSAGE_STREAM_HEADERS",
    "AdapterFactory",
    "AdapterSource",
    "EventLog",
    "EventLogError",
    "LogEntry",
    "LogRead",
    "MemoryEventLog",
    "RedisEventLog",
    "Renewal",
    "RunClosed",
    "RunState",
    "agui_stream",
    "create_app",
    "prepare",
    "run_server",
    "serve_in_background",
    "ui_message_stream",
]
