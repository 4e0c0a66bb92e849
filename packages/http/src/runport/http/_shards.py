"""The pool an async adapter makes for itself: a few ``httpx.AsyncClient`` shards, not one.

httpcore looks at every connection of a pool each time a request is queued or a response
closed, so one pool holding hundreds of live streams spends most of the client's CPU on that
scan. Calls fill the first shard with room, so a pool never holds more than ``SHARD_SIZE``
exchanges and the scan stays short; calls made one at a time all land on the first shard and
reuse its keep-alive connection. The shards share ``DEFAULT_ASYNC_LIMITS`` between them, so
together they never open more connections, or keep more alive, than one client would.
"""

from __future__ import annotations

from typing import Final

import httpx

__all__ = ["DEFAULT_ASYNC_LIMITS", "SHARD_SIZE", "Shard", "Shards"]

DEFAULT_ASYNC_LIMITS: Final = httpx.Limits(max_connections=1000, max_keepalive_connections=200)
"""What the clients an async adapter makes itself may open together: a thousand streams at once
(httpx's own default is a hundred, which would queue the hundred-and-first)."""

SHARD_SIZE: Final = 50
"""Exchanges one shard holds before the next call opens, or moves to, another (measured in
benchmarks/async_streams.py; a divisor of the thousand connections, so none is left over)."""


class Shard:
    """One client and the number of exchanges it carries now."""

    __slots__ = ("busy", "client")

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.busy = 0


class Shards:
    """The shards of one event loop; ``take`` a slot before an exchange, ``give`` it back after."""

    def __init__(
        self,
        timeout: httpx.Timeout,
        limits: httpx.Limits = DEFAULT_ASYNC_LIMITS,
        size: int = SHARD_SIZE,
    ) -> None:
        connections = limits.max_connections or size
        self._size = size
        self._most = max(1, connections // size)
        kept = limits.max_keepalive_connections
        self._limits = httpx.Limits(
            max_connections=min(size, connections),
            max_keepalive_connections=None if kept is None else kept // self._most,
        )
        self._timeout = timeout
        self._shards: list[Shard] = []

    def take(self) -> Shard:
        """The first shard with room (a new one if none has and the limits allow it; else the
        least busy, whose pool then queues the call as one client's would)."""
        for shard in self._shards:
            if shard.busy < self._size:
                break
        else:
            if len(self._shards) < self._most:
                shard = Shard(httpx.AsyncClient(timeout=self._timeout, limits=self._limits))
                self._shards.append(shard)
            else:
                shard = min(self._shards, key=lambda each: each.busy)
        shard.busy += 1
        return shard

    @staticmethod
    def give(shard: Shard) -> None:
        shard.busy -= 1

    @property
    def busy(self) -> list[int]:
        """Exchanges in flight, shard by shard."""
        return [shard.busy for shard in self._shards]

    @property
    def limits(self) -> httpx.Limits:
        """Each shard's share of the limits."""
        return self._limits

    @property
    def clients(self) -> list[httpx.AsyncClient]:
        return [shard.client for shard in self._shards]

    async def aclose(self) -> None:
        shards, self._shards = self._shards, []
        for shard in shards:
            await shard.client.aclose()
