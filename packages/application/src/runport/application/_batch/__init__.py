"""Running a contract over many rows: rows in, one output line per row, a summary
(docs/batch.md). Private: the public names are re-exported by ``runport.application``."""

from runport.application._batch._output import BatchLine, BatchOutput, BatchOutputError
from runport.application._batch._rows import BatchRow, BatchRowsError, read_rows, request_parts
from runport.application._batch._run import abatch, run_batch
from runport.application._batch._runner import RowRunner
from runport.application._batch._summary import BatchSummary

__all__ = [
    "BatchLine",
    "BatchOutput",
    "BatchOutputError",
    "BatchRow",
    "BatchRowsError",
    "BatchSummary",
    "RowRunner",
    "abatch",
    "read_rows",
    "request_parts",
    "run_batch",
]
