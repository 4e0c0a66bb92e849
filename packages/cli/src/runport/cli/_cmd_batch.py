"""``runport batch CONTRACT --inputs ROWS --out OUT.jsonl``: the contract once per row
(docs/batch.md)."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import Any

from runport.application import (
    AdapterNotFoundError,
    BatchOutputError,
    BatchRowsError,
    BatchSummary,
    create_adapter,
    run_batch,
)
from runport.cli._cmd_run import adapter
from runport.cli._errors import NOT_OK, CliError
from runport.contracts import ErrorCode
from runport.core import ContractError, DocumentError
from runport.mock import AsyncScriptedRuntime, ScriptedRuntime

HELP = "execute a contract once per input row (JSONL, CSV or Parquet), resumably"

INTERRUPTED = 130


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("contract", type=Path, help="contract file (YAML)")
    parser.add_argument(
        "--inputs",
        type=Path,
        required=True,
        help="rows file: .jsonl (one row a line), .csv or .parquet (runport[parquet])",
    )
    parser.add_argument("--adapter", default="mock", help="adapter name (default: mock)")
    parser.add_argument(
        "--scenario", type=Path, help="scenario file for the mock (each row plays it afresh)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=8, help="rows in flight at once (default: 8)"
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="output file (JSON lines); resumed if it exists"
    )
    parser.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local (default) or ray: shard the rows over a Ray cluster (runport[ray])",
    )


def _adapters(args: argparse.Namespace) -> tuple[Any, bool]:
    """The adapter source and whether each row gets a fresh adapter: the mock as a fresh
    async runtime per row (each row plays the scenario from its first turn); any other
    adapter shared (one per Ray shard on the ray engine)."""
    runtime = adapter(args.adapter, args.scenario)
    if isinstance(runtime, ScriptedRuntime):
        return partial(AsyncScriptedRuntime, runtime.scenario), True
    if args.engine == "ray":
        return partial(create_adapter, args.adapter), False
    return runtime, False


def _run(args: argparse.Namespace, on_line: Any) -> BatchSummary:
    source, fresh = _adapters(args)
    options = {"out": args.out, "concurrency": args.concurrency, "on_line": on_line}
    if args.engine == "local":
        return run_batch(args.contract, args.inputs, source, **options)
    try:
        from runport.ray import ray_batch
    except ImportError as error:
        raise CliError(
            "usage", f"--engine ray needs runport-ray (pip install 'runport[ray]'): {error}"
        ) from None
    return ray_batch(args.contract, args.inputs, source, fresh_per_row=fresh, **options)


def _rows_to_run(path: Path) -> int | None:
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        return None
    with path.open("rb") as lines:
        return sum(1 for line in lines if line.strip())


def main(args: argparse.Namespace) -> int:
    if not args.contract.is_file():
        raise CliError(ErrorCode.DATA_INVALID, f"contract file not found: {args.contract}")
    if not args.inputs.exists() or args.inputs.is_dir():  # a named pipe is fine
        raise CliError(ErrorCode.DATA_INVALID, f"rows file not found: {args.inputs}")
    if args.concurrency < 1:
        raise CliError("usage", f"--concurrency must be at least 1, not {args.concurrency}")
    err = sys.stderr
    bar: Any = nullcontext(None)
    if err.isatty():
        from runport.cli._batch_progress import progress_bar

        bar = progress_bar(err, _rows_to_run(args.inputs))
    try:
        with bar as on_line:
            summary = _run(args, on_line)
    except KeyboardInterrupt:
        err.write("runport: interrupted: every finished row is in the output; rerun to resume\n")
        return INTERRUPTED
    except (BatchOutputError, BatchRowsError) as error:
        raise CliError(error.code, error.message) from None
    except ContractError as error:
        raise CliError(error.diagnostics[0].code, str(error)) from None
    except DocumentError as error:
        raise CliError(error.code, str(error)) from None
    except (AdapterNotFoundError, ValueError) as error:
        raise CliError(ErrorCode.DATA_INVALID, str(error)) from None
    for said in summary.lines():
        err.write(f"runport: {said}\n")
    err.write(f"runport: summary written to {BatchSummary.path_for(args.out)}\n")
    return 0 if summary.all_ok else NOT_OK
