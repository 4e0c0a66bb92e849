"""runport's test doubles (docs/scenarios.md, docs/testing-with-mocks.md).

``ScriptedRuntime`` plays a ``runport.core.Scenario`` — a ``runport.mock/v1`` file or a
``templiqx.mock/v1alpha1`` manifest — through the ``RuntimeAdapter`` port: one turn per call,
streamed events and receipts byte-identical on every run, a virtual clock instead of sleeps.
``FunctionRuntime`` does the same for a model written as a function of the request. Both keep
the whole streaming law, so tests, examples and the CLI exercise it with no network; their
``Async…`` twins do the same on the event loop. ``create_adapter`` is the
``runport.adapters`` entry point behind ``--adapter mock``; ``create_async_adapter`` its
``runport.async_adapters`` twin.
"""

from runport.mock._async import (
    AsyncEmitter,
    AsyncFunctionRuntime,
    AsyncHandler,
    AsyncScriptedRuntime,
)
from runport.mock._factory import create_adapter, create_async_adapter
from runport.mock._function import Emitter, FunctionRuntime, Handler, RuntimeStats
from runport.mock._scripted import ScriptedRuntime
from runport.mock._turn import TurnUsageError

__all__ = [
    "AsyncEmitter",
    "AsyncFunctionRuntime",
    "AsyncHandler",
    "AsyncScriptedRuntime",
    "Emitter",
    "FunctionRuntime",
    "Handler",
    "RuntimeStats",
    "ScriptedRuntime",
    "TurnUsageError",
    "create_adapter",
    "create_async_adapter",
]
