"""Adapter factories made once per surface: the entry point found and loaded once, and the
options' own work (the mock's scenario file, read and parsed) done once.

A surface that starts a fresh adapter per call — ``runport serve`` with the mock, a batch —
used to scan the installed distributions' entry points and re-read the scenario on every call.
``prepared_factory`` does both once, when the surface starts; what it returns builds each
adapter from what was prepared. A factory offers that by having a ``prepare(**options)`` that
returns a zero-argument builder (the mock's ``create_adapter`` and ``create_async_adapter``
do); a factory without one is called with its options per build, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

__all__ = ["PreparedFactory", "entry_point_named", "prepared_factory"]

A = TypeVar("A")

_log = logging.getLogger("runport.application")


class PreparedFactory(Generic[A]):
    """A zero-argument factory for one named adapter with its options.

    ``blocking`` is ``False`` when its factory was prepared (``prepare(**options)``): then a
    build does no I/O and may run on the event loop; otherwise each build calls the factory,
    which may read files or start clients, so a surface calls it off the loop.
    """

    def __init__(self, build: Callable[[], Any], check: Callable[[Any], A], blocking: bool) -> None:
        self._build = build
        self._check = check
        self.blocking = blocking

    def __call__(self) -> A:
        return self._check(self._build())


def entry_point_named(name: str, group: str) -> EntryPoint | None:
    """The entry point registered as ``name`` in ``group``, or ``None`` (one scan)."""
    for entry_point in entry_points(group=group):
        if entry_point.name == name:
            return entry_point
    return None


def prepared_factory(
    entry_point: EntryPoint, options: dict[str, Any], check: Callable[[Any], A]
) -> PreparedFactory[A]:
    """Load ``entry_point``'s factory once and prepare it for ``options`` when it can be."""
    _log.debug(
        "adapter %r from %s (%s)",
        entry_point.name,
        entry_point.value,
        entry_point.dist.name if entry_point.dist else "?",
    )
    factory = entry_point.load()
    prepare = getattr(factory, "prepare", None)
    if callable(prepare):
        build = prepare(**options)
        if not callable(build):
            raise TypeError(
                f"the {entry_point.name!r} adapter factory's prepare returned "
                f"{type(build).__name__}, not a factory"
            )
        return PreparedFactory(build, check, blocking=False)

    def call() -> Any:
        return factory(**options)

    return PreparedFactory(call, check, blocking=True)
