"""Application services over the runtime port (docs/runs.md): ``execute_contract`` for one turn,
``run``/``run_stream`` for tool turns and correction rounds, ``Fallback``, and adapter discovery.
"""

from runport.application._adapters import (
    ADAPTER_GROUP,
    AdapterNotFoundError,
    adapter_entry_points,
    create_adapter,
)
from runport.application._envelope import execute_contract
from runport.application._errors import RunError, RunPartial
from runport.application._fallback import Fallback
from runport.application._history import repair_history
from runport.application._options import RunOptions
from runport.application._run import run, run_stream
from runport.application._state import RunResult
from runport.application._tools import Tool

__all__ = [
    "ADAPTER_GROUP",
    "AdapterNotFoundError",
    "Fallback",
    "RunError",
    "RunOptions",
    "RunPartial",
    "RunResult",
    "Tool",
    "adapter_entry_points",
    "create_adapter",
    "execute_contract",
    "repair_history",
    "run",
    "run_stream",
]
