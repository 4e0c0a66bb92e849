"""The mock's entry points: ``create_adapter`` and ``create_async_adapter``, each a factory that
can also be prepared once and then build many runtimes (``prepare``).

A surface that starts a fresh runtime per call (``runport serve``, a batch) calls
``prepare(scenario=FILE)`` once: the file is read and parsed there, and every runtime built
afterwards plays that parsed scenario from its first turn, with no file read and no YAML parse
per call (``runport.application.adapter_factory`` does this for any factory that has a
``prepare``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Generic, TypeVar

from runport.core import Scenario, load_scenario
from runport.mock._async import AsyncScriptedRuntime
from runport.mock._scripted import ScriptedRuntime

__all__ = ["ScenarioFactory", "create_adapter", "create_async_adapter"]

D = TypeVar("D")


class ScenarioFactory(Generic[D]):
    """Builds a runtime that plays a scenario file: ``factory(scenario=FILE)``.

    A scripted runtime has nothing to play without a scenario, so there is no silent default:
    ``scenario=None`` is a ``ValueError``. ``prepare(scenario=FILE)`` parses the file once and
    returns what builds runtimes of it without reading it again.
    """

    def __init__(self, runtime: Callable[[Scenario], D], doc: str) -> None:
        self._runtime = runtime
        self.__doc__ = doc

    def __call__(self, *, scenario: str | os.PathLike[str] | None = None) -> D:
        return self.prepare(scenario=scenario)()

    def prepare(self, *, scenario: str | os.PathLike[str] | None = None) -> Callable[[], D]:
        """The scenario file read and parsed now; each call of the result is a fresh runtime
        over the parsed scenario, at its first turn."""
        if scenario is None:
            raise ValueError("the mock adapter needs a scenario file (--scenario FILE)")
        return functools.partial(self._runtime, load_scenario(scenario))


create_adapter: ScenarioFactory[ScriptedRuntime] = ScenarioFactory(
    ScriptedRuntime,
    """The ``runport.adapters`` entry point: ``--adapter mock --scenario FILE``, a
    ``ScriptedRuntime`` playing the file; ``create_adapter.prepare(scenario=FILE)`` parses it
    once for many runtimes.""",
)
create_async_adapter: ScenarioFactory[AsyncScriptedRuntime] = ScenarioFactory(
    AsyncScriptedRuntime,
    """The ``runport.async_adapters`` entry point: ``--adapter mock --scenario FILE`` on an
    event-loop surface (``runport serve``), an ``AsyncScriptedRuntime`` with no thread hop per
    event; ``create_async_adapter.prepare(scenario=FILE)`` parses the file once.""",
)
