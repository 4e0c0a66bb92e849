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
import math
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

_APPEND = r"""
if redis.call('HGET', KEYS[2], 'f') ~= '0' then return 0 end
local packed, pos = ARGV[4], 1
while pos <= #packed do
  local head_end = string.find(packed, '\n', pos, true)
  local data_end = string.find(packed, '\n', head_end + 1, true)
  local space = string.find(packed, ' ', pos, true)
  local seq = string.sub(packed, pos, space - 1)
  local final = string.sub(packed, space + 1, space + 1)
  local event = string.sub(packed, space + 3, head_end - 1)
  local data = string.sub(packed, head_end + 1, data_end - 1)
  pos = data_end + 1
  if final == '1' then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '0-' .. seq,
               'e', event, 'd', data, 'f', '1')
    redis.call('HSET', KEYS[2], 'f', '1')
    redis.call('DEL', KEYS[3])
  else
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '0-' .. seq, 'e', event, 'd', data)
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
"""
"""KEYS: stream, meta, lease. ARGV: retention ms, max events, the first frame's seq, then the
frames packed in one string, two lines each (``<seq> <final> <event>``, then the data: a
frame's data is one line), so a group of frames is four arguments to encode, not four each."""

_ABANDON = """
if redis.call('HGET', KEYS[2], 'f') ~= '0' then return 0 end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local seq = 0
if #last > 0 then seq = tonumber(string.sub(last[1][1], 3)) end
if seq + 1 ~= tonumber(ARGV[3]) then return 0 end
"""
"""The conditions under which a reader may end a run: unfinished, lease lapsed, and the
ending numbered right after the last frame. The append follows (same script)."""

_READ = """
local got = redis.call('XREAD', 'COUNT', ARGV[2], 'STREAMS', KEYS[1], '0-' .. ARGV[1])
if not got then
  return {'', redis.call('EXISTS', KEYS[3]) == 1 and redis.call('HGET', KEYS[2], 'f') == '0'
              and 1 or 0}
end
local out = {}
for _, entry in ipairs(got[1][2]) do
  local fields, event, data, final = entry[2], '', '', '0'
  for i = 1, #fields, 2 do
    local name = fields[i]
    if name == 'e' then event = fields[i + 1]
    elseif name == 'd' then data = fields[i + 1]
    elseif name == 'f' then final = fields[i + 1] end
  end
  out[#out + 1] = string.sub(entry[1], 3) .. ' ' .. final .. ' ' .. event
  out[#out + 1] = data
end
return {table.concat(out, '\\n'), 1}
"""
"""KEYS: stream, meta, lease. ARGV: after, limit. The frames after ``after`` as one string,
two lines a frame (``<seq> <final> <event>``, then the data: a frame's data is one line),
which is one reply to parse instead of a dozen per frame; or none, and whether more may come
(the run is unfinished and its lease stands): not when the run is gone (expired), finished
with nothing after ``after``, or its producer lost (the reader then ends it)."""

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


def _unpack(text: bytes) -> list[LogEntry]:
    lines = text.split(b"\n")
    entries: list[LogEntry] = []
    for index in range(0, len(lines), 2):
        seq, final, event = lines[index].split(b" ", 2)
        entries.append(
            LogEntry(int(seq), event.decode(), lines[index + 1].decode(), final=final == b"1")
        )
    return entries


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
            self._read = self._client.register_script(_READ)
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
        packed = "".join(
            f"{entry.seq} {'1' if entry.final else '0'} {entry.event}\n{entry.data}\n"
            for entry in entries
        )
        return [self._retention_ms, self._max_events, entries[0].seq if entries else 0, packed]

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
        keys, args = [stream, meta, lease], [after, limit]
        client = self._redis()
        with _reaching(self.shown):
            text, alive = await self._read(keys=keys, args=args)
            if text or not alive or wait <= 0:
                return LogRead(_unpack(text) if text else (), alive=bool(alive))
            # Nothing yet: wait for the next frame (a blocking command, which a script may
            # not run), then look again.
            block = max(1, round(wait * 1000))
            got = await client.xread({stream: f"0-{after}"}, count=limit, block=block)
            if got:
                return LogRead([_entry(sid, fields) for sid, fields in got[0][1]])
            text, alive = await self._read(keys=keys, args=args)
        return LogRead(_unpack(text) if text else (), alive=bool(alive))

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

    async def spend(self, key: str, expires: float) -> bool:
        """``SET NX`` with the key's expiry: one of many processes spends it."""
        with _reaching(self.shown):
            done = await self._redis().set(
                f"runport:spent:{key}", "1", nx=True, exat=max(1, math.ceil(expires))
            )
        return bool(done)

    async def request_stop(self, run_id: str) -> None:
        _, _, _, _, stop = self._keys(run_id)
        with _reaching(self.shown):
            await self._redis().set(stop, "1", px=self._retention_ms)
