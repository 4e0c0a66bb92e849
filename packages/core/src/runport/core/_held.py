"""What is derived once from an immutable object, found again by that object's identity."""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

_V = TypeVar("_V")


class HeldCache(Generic[_V]):
    """A bounded map from a live frozen object (a contract, a value declaration, a scenario, an
    interaction) to a value derived from it, found by identity: no hashing or encoding of the
    object per lookup.

    An entry holds only a weak reference and leaves when its object is collected, so an object
    at a reused address never finds an old entry; a copy is a new object. The owner promises
    the object is not changed after construction (frozen models, whose containers nobody
    mutates). Lookups take no lock; inserts take one, so threads sharing a cache (a batch, an
    ``asyncio.to_thread`` worker) never see a torn entry. Past ``limit`` live entries the
    oldest is dropped and found again by deriving it anew.
    """

    def __init__(self, limit: int = 256) -> None:
        self._entries: dict[int, tuple[weakref.ref[object], _V]] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, holder: object) -> _V | None:
        found = self._entries.get(id(holder))
        if found is not None and found[0]() is holder:
            return found[1]
        return None

    def put(self, holder: object, value: _V) -> _V:
        key = id(holder)
        reference = weakref.ref(holder, self._forget(key))
        with self._lock:
            if len(self._entries) >= self._limit and key not in self._entries:
                # a collection may empty or change the map meanwhile
                with contextlib.suppress(StopIteration, RuntimeError):
                    self._entries.pop(next(iter(self._entries)), None)
            self._entries[key] = (reference, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def _forget(self, key: int) -> Callable[[weakref.ref[object]], None]:
        entries = self._entries

        def forget(gone: weakref.ref[object]) -> None:
            entry = entries.get(key)
            if entry is not None and entry[0] is gone:
                entries.pop(key, None)

        return forget
