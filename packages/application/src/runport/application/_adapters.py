from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from runport.ports import RuntimeAdapter

ADAPTER_GROUP = "runport.adapters"

AdapterFactory = Callable[..., RuntimeAdapter]


class AdapterNotFoundError(LookupError):
    """No installed distribution offers an adapter under that name."""


def adapter_entry_points() -> dict[str, EntryPoint]:
    """Installed adapters by name: every ``runport.adapters`` entry point."""
    return {ep.name: ep for ep in entry_points(group=ADAPTER_GROUP)}


def create_adapter(name: str, **options: Any) -> RuntimeAdapter:
    """Build the adapter registered as ``name`` — how surfaces reach providers without
    importing them. ``options`` go to the factory (e.g. ``scenario=`` for the mock)."""
    found = adapter_entry_points()
    if name not in found:
        known = ", ".join(sorted(found)) or "none"
        raise AdapterNotFoundError(f"no adapter named {name!r} is installed (installed: {known})")
    entry_point = found[name]
    logging.getLogger("runport.application").debug(
        "adapter %r from %s (%s)",
        name,
        entry_point.value,
        entry_point.dist.name if entry_point.dist else "?",
    )
    factory: AdapterFactory = entry_point.load()
    adapter = factory(**options)
    if not isinstance(adapter, RuntimeAdapter):
        raise TypeError(f"the {name!r} adapter factory returned {type(adapter).__name__}")
    return adapter
