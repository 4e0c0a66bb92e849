"""Application services over the runtime port (docs/runs.md): ``execute_contract`` for one turn,
``run``/``run_stream`` for tool turns and correction rounds, ``Fallback``, and adapter discovery.
"""

from runport.application._adapters import (
    ADAPTER_GROUP,
    AdapterNotFoundError,
    adapter_entry_points,
    create_adapter,
)
from runport.application._define import define_contract, output_as
from runport.application._envelope import execute_contract
from runport.application._errors import RunError, RunPartial
from runport.application._fallback import Fallback
from runport.application._history import repair_history
from runport.application._run import RunResult, run, run_stream
from runport.application._tools import Tool

__all__ = [
    "ADAPTER_GROUP",
    "AdapterNotFoundError",
    "Fallback",
    "RunError",
    "RunPartial",
    "RunResult",
    "Tool",
    "adapter_entry_points",
    "create_adapter",
    "define_contract",
    "execute_contract",
    "output_as",
    "repair_history",
    "run",
    "run_stream",
]
