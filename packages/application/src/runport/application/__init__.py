"""Application services over the runtime port: ``execute_contract`` and adapter discovery
(SPEC §6)."""

from runport.application._adapters import (
    ADAPTER_GROUP,
    AdapterNotFoundError,
    adapter_entry_points,
    create_adapter,
)
from runport.application._envelope import execute_contract

__all__ = [
    "ADAPTER_GROUP",
    "AdapterNotFoundError",
    "adapter_entry_points",
    "create_adapter",
    "execute_contract",
]
