r"""Application services over the runtime port (docs/runs.md, docs/async.md):
``execute_contract`` for one turn, ``run``/``run_stream`` for tool turns and correction rounds,
``Fallback``, adapter discovery, a person in the loop (a run paused for approvals, resumed
from its sealed continuation: ``ContinuationSeal``) — and their event-loop twins
(``aexecute_contract``, ``arun``, ``arun_stream``, ``astream``, ``astream_run``,
``AsyncFallback``) with the bridges
``to_async``/``to_sync`` — and what every surface shares: the folder of contracts it serves
(``load_catalog``) and the adapter it builds per call (``adapter_factory``,
``async_adapter_factory``); and ``run_batch``/``abatch``, a contract over many rows, with the
two halves another engine builds on (``RowRunner`` on the workers, ``BatchOutput`` on the
driver) (docs/batch.md); and ``SnapshotPace``, which thins a run's ``OutputSnapshot``\s for a
surface that sends each whole.
"""

from runport.application._adapters import (
    ADAPTER_GROUP,
    ASYNC_ADAPTER_GROUP,
    AdapterNotFoundError,
    aclose_adapter,
    adapter_entry_points,
    adapter_factory,
    async_adapter_factory,
    close_adapter,
    create_adapter,
    create_async_adapter,
)
from runport.application._astream import EventStream, RunStream, astream, astream_run
from runport.application._batch import (
    BatchLine,
    BatchOutput,
    BatchOutputError,
    BatchRow,
    BatchRowsError,
    BatchSummary,
    RowRunner,
    abatch,
    read_rows,
    request_parts,
    run_batch,
)
from runport.application._bridges import BridgeUsageError, CallerGone, to_async, to_sync
from runport.application._catalog import Catalog, CatalogError, input_schema, load_catalog
from runport.application._continuation import (
    ContinuationLedger,
    ContinuationSeal,
    MemoryContinuationLedger,
)
from runport.application._define import define_contract, output_as
from runport.application._errors import RunError, RunPartial
from runport.application._execute import aexecute_contract, execute_contract
from runport.application._fallback import AsyncFallback, Fallback
from runport.application._history import repair_history
from runport.application._options import RunOptions
from runport.application._result import RunResult
from runport.application._run import arun, arun_stream, run, run_stream
from runport.application._snapshot_pace import (
    DEFAULT_SNAPSHOT_EVERY_BELOW,
    DEFAULT_SNAPSHOT_RATIO,
    SnapshotPace,
)
from runport.application._tool_sources import TOOL_SOURCE_GROUP, ToolSet, mcp_tools
from runport.application._tools import ClientToolError, Tool

__all__ = [
    "ADAPTER_GROUP",
    "ASYNC_ADAPTER_GROUP",
    "DEFAULT_SNAPSHOT_EVERY_BELOW",
    "DEFAULT_SNAPSHOT_RATIO",
    "TOOL_SOURCE_GROUP",
    "AdapterNotFoundError",
    "AsyncFallback",
    "BatchLine",
    "BatchOutput",
    "BatchOutputError",
    "BatchRow",
    "BatchRowsError",
    "BatchSummary",
    "BridgeUsageError",
    "CallerGone",
    "Catalog",
    "CatalogError",
    "ClientToolError",
    "ContinuationLedger",
    "ContinuationSeal",
    "EventStream",
    "Fallback",
    "MemoryContinuationLedger",
    "RowRunner",
    "RunError",
    "RunOptions",
    "RunPartial",
    "RunResult",
    "RunStream",
    "SnapshotPace",
    "Tool",
    "ToolSet",
    "abatch",
    "aclose_adapter",
    "adapter_entry_points",
    "adapter_factory",
    "aexecute_contract",
    "arun",
    "arun_stream",
    "astream",
    "astream_run",
    "async_adapter_factory",
    "close_adapter",
    "create_adapter",
    "create_async_adapter",
    "define_contract",
    "execute_contract",
    "input_schema",
    "load_catalog",
    "mcp_tools",
    "output_as",
    "read_rows",
    "repair_history",
    "request_parts",
    "run",
    "run_batch",
    "run_stream",
    "to_async",
    "to_sync",
]
