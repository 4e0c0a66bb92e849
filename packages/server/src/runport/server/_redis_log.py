"""``RedisEventLog``: runs in Redis Streams, so many server processes share them.

Each run is five keys under one hash tag (``runport:{<run_id>}:…``, one cluster slot):

- ``:e`` the stream: one entry per frame, its id ``0-<seq>`` (so a frame's number is its
  stream id, ``XREAD`` from ``0-<after>`` returns exactly the frames after ``after``, and
  ``XADD`` itself refuses a number twice), fields ``e`` (event), ``d`` (data), ``f`` (final);
- ``:m`` a hash whose ``f`` is ``0`` while the run goes and ``1`` once its final frame is in;
- ``:l`` the producer's lease, a key that expires unless renewed;
- ``:r`` a key each reader refreshes while it reads (it expires when nobody has, for the
  orphan timeout);
- ``:s`` set when a stop was asked, on any process.

Appending, ending a run whose lease lapsed and renewing are Lua scripts, each atomic in Redis,
so a producer that comes back after its lease lapsed cannot append after the ending a reader
wrote, and two readers that find the lease gone at once write one ending. Every key expires
``retention`` seconds after the run's last write; ``MAXLEN ~`` bounds a run's stream.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Awaitable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from runport.ports import check_seconds
from runport.server._event_log import (
    DEFAULT_LEASE_S,
    DEFAULT_RETENTION_S,
    EventLog,
    EventLogError,
    LogEntry,
    LogRead,
    Renewal,
    RunClosed,
    RunState,
    check_retention,
)

if TYPE_CHECKING:
    import redis.asyncio as aioredis

REDIS_HINT = "a Redis event log needs the redis package: pip install 'runport[redis]'"

DEFAULT_MAX_EVENTS = 1_000_000
"""The most frames one run's stream holds (``MAXLEN ~``); older ones are trimmed."""

_APPEND = """
if redis.call('HGET', KEYS[2], 'f') ~= '0' then return 0 end
for i = 4, #ARGV, 4 do
  if ARGV[i + 3] == '1' then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '0-' .. ARGV[i],
               'e', ARGV[i + 1], 'd', ARGV[i + 2], 'f', '1')
    redis.call('HSET', KEYS[2], 'f', '1')
    redis.call('DEL', KEYS[3])
  else
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '0-' .. ARGV[i],
               'e', ARGV[i + 1], 'd', ARGV[i + 2])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
"""
"""KEYS: stream, meta, lease. ARGV: retention ms, max events, a spare slot, then per frame
its seq, event, data and final flag."""

_ABANDON = """
if redis.call('HGET', KEYS[2], 'f') ~= '0' then return 0 end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local seq = 0
if #last > 0 then seq = tonumber(string.sub(last[1][1], 3)) end
if seq + 1 ~= tonumber(ARGV[4]) then return 0 end
"""
"""The conditions under which a reader may end a run: unfinished, lease lapsed, and the
ending numbered right after the last frame. The append follows (same script)."""

_RENEW = """
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[2])
redis.call('PEXPIRE', KEYS[5], ARGV[2])
return {redis.call('EXISTS', KEYS[2]), redis.call('EXISTS', KEYS[3])}
"""
"""KEYS: lease, stop, read, stream, meta. ARGV: lease ms, retention ms."""


@contextlib.contextmanager
def _reaching(url: str) -> Iterator[None]:
    from redis.exceptions import RedisError

    try:
        yield
    except RedisError as error:
        raise EventLogError(f"the event log at {url} failed: {error}") from error
    except OSError as error:
        raise EventLogError(f"the event log at {url} cannot be reached: {error}") from error


def _seq(stream_id: bytes | str) -> int:
    text = stream_id.decode() if isinstance(stream_id, bytes) else stream_id
    return int(text.partition("-")[2])


def _entry(stream_id: bytes, fields: dict[bytes, bytes]) -> LogEntry:
    return LogEntry(
        _seq(stream_id),
        fields[b"e"].decode(),
        fields[b"d"].decode(),
        final=fields.get(b"f") == b"1",
    )


def redacted(url: str) -> str:
    """The URL without its password, fit for messages and logs."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not at:
        return url
    user = userinfo.partition(":")[0]
    return f"{scheme}{sep}{user + ':***' if user else '***'}@{host}"


class RedisEventLog(EventLog):
    """Runs in Redis Streams at ``url`` (``redis://``, ``rediss://`` or ``unix://``), shared by
    every server process pointed at it. A producer's lease lapses ``lease`` seconds after its
    process stops renewing it at the latest; readers then end the run with
    ``TQX_RUN_PRODUCER_LOST`` (docs/server.md)."""

    coalesces = True

    def __init__(
        self,
        url: str,
        *,
        retention: float = DEFAULT_RETENTION_S,
        lease: float = DEFAULT_LEASE_S,
        max_events: int = DEFAULT_MAX_EVENTS,
    ) -> None:
        if importlib.util.find_spec("redis") is None:
            raise ValueError(REDIS_HINT)
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"a Redis URL starts with redis://, rediss:// or unix://: {url!r}")
        checked = check_seconds(lease, "lease")
        if checked is None:
            raise ValueError("lease must be a positive, finite number of seconds")
        if isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 1:
            raise ValueError(f"max_events must be a positive whole number, not {max_events!r}")
        self.url = url
        self.shown = redacted(url)
        self.retention = check_retention(retention)
        self.lease = checked
        # The lease key lives 0.6 of the lease and is renewed every 0.2: a live producer
        # misses two renewals before it lapses, and a reader that checks every 0.2 learns
        # of a dead one within 0.8 of the lease.
        self.tick = checked / 5
        self._lease_ms = max(1, round(checked * 600))
        self._retention_ms = max(1, round(self.retention * 1000))
        self._max_events = max_events
        self._client: aioredis.Redis | None = None

    def check(self) -> None:
        """Reach the server once, blocking (at start, before serving); ``EventLogError`` when
        it cannot be reached."""
        import redis

        client = redis.Redis.from_url(self.url, socket_connect_timeout=3, socket_timeout=3)
        try:
            with _reaching(self.shown):
                client.ping()
        finally:
            client.close()

    def _redis(self) -> aioredis.Redis:
        if self._client is None:
            import redis.asyncio as aioredis

            self._client = aioredis.Redis.from_url(
                self.url,
                socket_connect_timeout=3,
                socket_timeout=max(10.0, 4 * self.tick),
                health_check_interval=30,
            )
            self._append = self._client.register_script(_APPEND)
            self._abandon = self._client.register_script(_ABANDON + _APPEND)
            self._renew = self._client.register_script(_RENEW)
        return self._client

    @staticmethod
    def _keys(run_id: str) -> tuple[str, str, str, str, str]:
        base = f"runport:{{{run_id}}}:"
        return base + "e", base + "m", base + "l", base + "r", base + "s"

    async def open(self) -> None:
        with _reaching(self.shown):
            await cast("Awaitable[bool]", self._redis().ping())

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            with contextlib.suppress(Exception):
                await client.aclose()

    async def create(self, run_id: str) -> None:
        _, meta, lease, _, _ = self._keys(run_id)
        with _reaching(self.shown):
            async with self._redis().pipeline(transaction=True) as pipe:
                pipe.hset(meta, "f", "0")
                pipe.pexpire(meta, self._retention_ms)
                pipe.set(lease, "1", px=self._lease_ms)
                await pipe.execute()

    def _argv(self, entries: Sequence[LogEntry]) -> list[Any]:
        argv: list[Any] = [self._retention_ms, self._max_events, 0]
        for entry in entries:
            argv += [entry.seq, entry.event, entry.data, "1" if entry.final else "0"]
        return argv

    async def append(self, run_id: str, entries: Sequence[LogEntry]) -> None:
        stream, meta, lease, _, _ = self._keys(run_id)
        self._redis()
        with _reaching(self.shown):
            done = await self._append(keys=[stream, meta, lease], args=self._argv(entries))
        if not done:
            raise RunClosed(run_id)

    async def abandon(self, run_id: str, entries: Sequence[LogEntry]) -> None:
        stream, meta, lease, _, _ = self._keys(run_id)
        self._redis()
        with _reaching(self.shown):
            await self._abandon(keys=[stream, meta, lease], args=self._argv(entries))

    async def renew(self, run_id: str) -> Renewal:
        stream, meta, lease, read, stop = self._keys(run_id)
        self._redis()
        with _reaching(self.shown):
            stopped, touched = await self._renew(
                keys=[lease, stop, read, stream, meta], args=[self._lease_ms, self._retention_ms]
            )
        return Renewal(stop=bool(stopped), read=bool(touched))

    async def state(self, run_id: str) -> RunState | None:
        stream, meta, _, _, _ = self._keys(run_id)
        with _reaching(self.shown):
            async with self._redis().pipeline(transaction=True) as pipe:
                pipe.hget(meta, "f")
                pipe.xrevrange(stream, count=1)
                pipe.xrange(stream, count=1)
                finished, last, first = await pipe.execute()
        if finished is None:
            return None
        return RunState(
            last_seq=_seq(last[0][0]) if last else 0,
            first_seq=_seq(first[0][0]) if first else 1,
            finished=finished == b"1",
        )

    async def read(self, run_id: str, after: int, *, wait: float, limit: int) -> LogRead:
        stream, meta, lease, _, _ = self._keys(run_id)
        block = max(1, round(wait * 1000)) if wait > 0 else None
        with _reaching(self.shown):
            got = await self._redis().xread({stream: f"0-{after}"}, count=limit, block=block)
            if got:
                return LogRead([_entry(sid, fields) for sid, fields in got[0][1]])
            async with self._redis().pipeline(transaction=False) as pipe:
                pipe.exists(lease)
                pipe.hget(meta, "f")
                leased, finished = await pipe.execute()
        return LogRead((), alive=bool(leased) or finished == b"1")

    async def touch(self, run_id: str, hold: float) -> None:
        _, _, _, read, _ = self._keys(run_id)
        with _reaching(self.shown):
            await self._redis().set(read, "1", px=max(1, round(hold * 1000)))

    async def link(self, key: str, run_id: str) -> None:
        with _reaching(self.shown):
            await self._redis().set(f"runport:link:{key}", run_id, px=self._retention_ms)

    async def linked(self, key: str) -> str | None:
        with _reaching(self.shown):
            found = await self._redis().get(f"runport:link:{key}")
        return None if found is None else bytes(found).decode()

    async def request_stop(self, run_id: str) -> None:
        _, _, _, _, stop = self._keys(run_id)
        with _reaching(self.shown):
            await self._redis().set(stop, "1", px=self._retention_ms)
