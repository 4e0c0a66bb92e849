"""The pool an async adapter makes for itself: a few ``httpx.AsyncClient`` shards, not one.

httpcore looks at every connection of a pool each time a request is queued or a response
closed, so one pool holding hundreds of live streams spends most of the client's CPU on that
scan. Calls fill the first shard with room, so a pool never holds more than ``SHARD_SIZE``
exchanges and the scan stays short; calls made one at a time all land on the first shard and
reuse its keep-alive connection. The shards share ``DEFAULT_ASYNC_LIMITS`` between them, so
together they never open more connections, or keep more alive, than one client would. The
keep-alive allowance goes to the first shards, whole: those are the ones steady traffic
fills, so a service that never has more streams open than the allowance keeps every
connection, as it would with one client; the later shards carry bursts and close their
connections when the exchange ends.

On the ``aiohttp`` transport the shards are the same, each client's connections aiohttp's
(``AiohttpTransport``, given the shard's share of the limits): the same limits, the same
fairness, the same keep-alive allowance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import httpx

__all__ = ["DEFAULT_ASYNC_LIMITS", "SHARD_SIZE", "Shard", "Shards", "TransportMaker"]

TransportMaker = Callable[[httpx.Limits], httpx.AsyncBaseTransport]
"""What makes a shard's transport from its share of the limits (``None``: httpx's own)."""

DEFAULT_ASYNC_LIMITS: Final = httpx.Limits(max_connections=1000, max_keepalive_connections=200)
"""What the clients an async adapter makes itself may open together: a thousand streams at once
(httpx's own default is a hundred, which would queue the hundred-and-first)."""

SHARD_SIZE: Final = 50
"""Exchanges one shard holds before the next call opens, or moves to, another (measured in
benchmarks/async_streams.py; a divisor of the thousand connections, so none is left over)."""


class Shard:
    """One client, its share of the limits, and the number of exchanges it carries now."""

    __slots__ = ("busy", "client", "limits")

    def __init__(
        self,
        timeout: httpx.Timeout,
        limits: httpx.Limits,
        transport: TransportMaker | None = None,
    ) -> None:
        self.client = (
            httpx.AsyncClient(timeout=timeout, limits=limits)
            if transport is None
            else httpx.AsyncClient(timeout=timeout, transport=transport(limits))
        )
        self.limits = limits
        self.busy = 0


class Shards:
    """The shards of one event loop; ``take`` a slot before an exchange, ``give`` it back after."""

    def __init__(
        self,
        timeout: httpx.Timeout,
        limits: httpx.Limits = DEFAULT_ASYNC_LIMITS,
        size: int = SHARD_SIZE,
        transport: TransportMaker | None = None,
    ) -> None:
        self._transport = transport
        connections = limits.max_connections or size
        self._size = size
        self._most = max(1, connections // size)
        self._connections = min(size, connections)
        self._kept = limits.max_keepalive_connections
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
                shard = Shard(self._timeout, self._share(len(self._shards)), self._transport)
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

    def _share(self, number: int) -> httpx.Limits:
        """The limits of the shard made ``number``-th: its connections, and what is left of
        the keep-alive allowance after the shards before it took theirs."""
        kept = self._kept
        if kept is not None:
            kept = max(0, min(self._connections, kept - number * self._connections))
        return httpx.Limits(max_connections=self._connections, max_keepalive_connections=kept)

    @property
    def limits(self) -> list[httpx.Limits]:
        """Each shard's share of the limits, shard by shard."""
        return [shard.limits for shard in self._shards]

    @property
    def clients(self) -> list[httpx.AsyncClient]:
        return [shard.client for shard in self._shards]

    async def aclose(self) -> None:
        shards, self._shards = self._shards, []
        for shard in shards:
            await shard.client.aclose()
