from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

from runport.application._bridges import to_async
from runport.application._catalog import CatalogError
from runport.application._prepared import PreparedFactory, entry_point_named, prepared_factory
from runport.contracts import ErrorCode
from runport.core import ScenarioError
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter

ADAPTER_GROUP = "runport.adapters"
ASYNC_ADAPTER_GROUP = "runport.async_adapters"

AdapterFactory = Callable[..., RuntimeAdapter]

_T = TypeVar("_T")


class AdapterNotFoundError(LookupError):
    """No installed distribution offers an adapter under that name."""


def adapter_entry_points(group: str = ADAPTER_GROUP) -> dict[str, EntryPoint]:
    """Installed adapters by name: every entry point of ``group`` (``runport.adapters``, or
    ``runport.async_adapters`` for the event-loop twins)."""
    return {ep.name: ep for ep in entry_points(group=group)}


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


def create_async_adapter(name: str, **options: Any) -> AsyncRuntimeAdapter:
    """The event-loop adapter registered as ``name``.

    A distribution that has an async twin registers it under ``runport.async_adapters`` (one
    name in both groups), so an async surface runs it with no thread hop per event. An adapter
    with no twin is bridged with ``to_async``: it works, on a worker thread.
    """
    twins = adapter_entry_points(ASYNC_ADAPTER_GROUP)
    if name not in twins:
        return to_async(create_adapter(name, **options))
    factory: Callable[..., AsyncRuntimeAdapter] = twins[name].load()
    adapter = factory(**options)
    if not isinstance(adapter, AsyncRuntimeAdapter):
        raise TypeError(f"the {name!r} async adapter factory returned {type(adapter).__name__}")
    return adapter


def _tried(build: Callable[[], _T], name: str) -> _T:
    try:
        return build()
    except AdapterNotFoundError as error:
        raise CatalogError(ErrorCode.DATA_INVALID, str(error)) from None
    except ScenarioError as error:
        raise CatalogError(error.code, str(error)) from None
    except (TypeError, ValueError, OSError) as error:
        raise CatalogError(
            ErrorCode.DATA_INVALID, f"cannot start adapter {name!r}: {error}"
        ) from None


def _options(scenario: str | os.PathLike[str] | None) -> dict[str, Any]:
    return {} if scenario is None else {"scenario": os.fspath(scenario)}


def _not_found(name: str) -> AdapterNotFoundError:
    known = ", ".join(sorted(adapter_entry_points())) or "none"
    return AdapterNotFoundError(f"no adapter named {name!r} is installed (installed: {known})")


def _checked(name: str) -> Callable[[object], RuntimeAdapter]:
    def check(adapter: object) -> RuntimeAdapter:
        if not isinstance(adapter, RuntimeAdapter):
            raise TypeError(f"the {name!r} adapter factory returned {type(adapter).__name__}")
        return adapter

    return check


def _checked_async(name: str) -> Callable[[object], AsyncRuntimeAdapter]:
    def check(adapter: object) -> AsyncRuntimeAdapter:
        if not isinstance(adapter, AsyncRuntimeAdapter):
            raise TypeError(f"the {name!r} async adapter factory returned {type(adapter).__name__}")
        return adapter

    return check


def adapter_factory(
    name: str, *, scenario: str | os.PathLike[str] | None = None
) -> Callable[[], RuntimeAdapter]:
    """A factory for the adapter ``name``, tried once now.

    A surface builds a fresh adapter per call, so calls stay independent (the scripted mock
    plays its scenario from the first turn every time). Trying it at start turns a missing
    adapter or a broken scenario file into one ``CatalogError`` before any client connects,
    instead of a failure on every call. The entry point is found and loaded here, once, and a
    factory that can be prepared (the mock's: its scenario file is parsed here) builds every
    adapter from that, with no file read per call (the factory's ``blocking`` is then
    ``False``).
    """
    options = _options(scenario)

    def made() -> PreparedFactory[RuntimeAdapter]:
        entry_point = entry_point_named(name, ADAPTER_GROUP)
        if entry_point is None:
            raise _not_found(name)
        return prepared_factory(entry_point, options, _checked(name))

    build = _tried(made, name)
    close_adapter(_tried(build, name))
    return build


def async_adapter_factory(
    name: str, *, scenario: str | os.PathLike[str] | None = None
) -> Callable[[], AsyncRuntimeAdapter]:
    """``adapter_factory`` for event-loop surfaces (``create_async_adapter``'s choice: the
    async twin, or the sync adapter bridged with ``to_async``)."""
    options = _options(scenario)

    def made() -> PreparedFactory[AsyncRuntimeAdapter]:
        twin = entry_point_named(name, ASYNC_ADAPTER_GROUP)
        if twin is not None:
            return prepared_factory(twin, options, _checked_async(name))
        entry_point = entry_point_named(name, ADAPTER_GROUP)
        if entry_point is None:
            raise _not_found(name)
        sync = _checked(name)
        return prepared_factory(entry_point, options, lambda adapter: to_async(sync(adapter)))

    build = _tried(made, name)
    close_adapter(_tried(build, name))
    return build


def close_adapter(adapter: RuntimeAdapter | AsyncRuntimeAdapter) -> None:
    """Release what a sync adapter holds (an HTTP client, say), when it has anything to
    release; an async adapter's ``aclose`` is left to ``aclose_adapter``."""
    close = getattr(adapter, "close", None)
    if callable(close) and not inspect.iscoroutinefunction(close):
        close()


async def aclose_adapter(adapter: AsyncRuntimeAdapter) -> None:
    """Release what an async adapter holds: its ``aclose()``, or a plain ``close()``."""
    aclose = getattr(adapter, "aclose", None)
    if callable(aclose):
        await aclose()
        return
    close_adapter(adapter)
