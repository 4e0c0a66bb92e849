"""``event_log_for``: the event log ``runport serve --event-log`` names, made and reached."""

from __future__ import annotations

from runport.application import CatalogError
from runport.server._event_log import (
    DEFAULT_LEASE_S,
    DEFAULT_RETENTION_S,
    EventLog,
    EventLogError,
    MemoryEventLog,
)
from runport.server._redis_log import RedisEventLog


def event_log_for(
    url: str, *, retention: float = DEFAULT_RETENTION_S, lease: float = DEFAULT_LEASE_S
) -> EventLog:
    """``"memory"`` or a ``redis://`` URL as a log. ``ValueError`` for a URL that is neither
    (or when the redis package is missing); ``CatalogError`` with
    ``TQX_EVENT_LOG_UNAVAILABLE`` when Redis cannot be reached, so the server does not start
    on a log it cannot write."""
    if url == "memory":
        return MemoryEventLog(retention=retention)
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"--event-log is 'memory' or a redis:// URL, not {url!r}")
    log = RedisEventLog(url, retention=retention, lease=lease)
    try:
        log.check()
    except EventLogError as error:
        raise CatalogError(error.code, error.message) from None
    return log
