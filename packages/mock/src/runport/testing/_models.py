"""What the ``scripted_model`` and ``function_model`` fixtures hand a test (no pytest here)."""

from __future__ import annotations

import inspect
from typing import Literal, overload

from runport.core import Scenario
from runport.mock import (
    AsyncFunctionRuntime,
    AsyncHandler,
    AsyncScriptedRuntime,
    FunctionRuntime,
    Handler,
    ScriptedRuntime,
)
from runport.testing._script import Turn, script

__all__ = ["FunctionModels", "ScriptedModels"]


class ScriptedModels:
    """``scripted_model(*turns)``: a ``ScriptedRuntime`` that plays ``turns``, one per model
    call (``script`` says what a turn may be), or plays a ``Scenario`` given alone;
    ``asynchronous=True`` gives the ``AsyncScriptedRuntime`` twin. Every runtime made in the
    test is kept in ``made``."""

    def __init__(self) -> None:
        self.made: list[ScriptedRuntime | AsyncScriptedRuntime] = []

    @overload
    def __call__(
        self, *turns: Turn | Scenario, asynchronous: Literal[False] = False
    ) -> ScriptedRuntime: ...

    @overload
    def __call__(
        self, *turns: Turn | Scenario, asynchronous: Literal[True]
    ) -> AsyncScriptedRuntime: ...

    def __call__(
        self, *turns: Turn | Scenario, asynchronous: bool = False
    ) -> ScriptedRuntime | AsyncScriptedRuntime:
        if len(turns) == 1 and isinstance(turns[0], Scenario):
            scenario = turns[0]
        else:
            if any(isinstance(turn, Scenario) for turn in turns):
                raise TypeError("a Scenario is scripted alone, not beside other turns")
            scenario = script(*turns)  # type: ignore[arg-type]
        runtime = AsyncScriptedRuntime(scenario) if asynchronous else ScriptedRuntime(scenario)
        self.made.append(runtime)
        return runtime


class FunctionModels:
    """``function_model(handler)``: a ``FunctionRuntime`` calling ``handler(request, emit)``
    per model call — an ``AsyncFunctionRuntime`` when ``handler`` is a coroutine function. It
    works as a decorator too. Every runtime made in the test is kept in ``made``."""

    def __init__(self) -> None:
        self.made: list[FunctionRuntime | AsyncFunctionRuntime] = []

    @overload
    def __call__(self, handler: AsyncHandler) -> AsyncFunctionRuntime: ...

    @overload
    def __call__(self, handler: Handler) -> FunctionRuntime: ...

    def __call__(self, handler: Handler | AsyncHandler) -> FunctionRuntime | AsyncFunctionRuntime:
        runtime: FunctionRuntime | AsyncFunctionRuntime
        if inspect.iscoroutinefunction(handler):
            runtime = AsyncFunctionRuntime(handler)  # type: ignore[arg-type]
        else:
            runtime = FunctionRuntime(handler)  # type: ignore[arg-type]
        self.made.append(runtime)
        return runtime
