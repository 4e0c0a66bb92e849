"""``runport run … --tools MODULE:ATTR --mcp CMD_OR_URL``: a run with tool turns and corrections
from the shell, with local tools and MCP servers' tools."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TextIO

from runport.application import RunError, RunResult, Tool, run, run_stream
from runport.cli._errors import NOT_OK, CliError
from runport.cli._output import (
    ReasoningToStderr,
    diagnostic_line,
    write_reasoning,
    write_sources,
    write_tool_calls,
)
from runport.cli._paused import PAUSED, paused_json, write_pending
from runport.cli._sinks import run_sink
from runport.cli._surfaces import extra_missing
from runport.contracts import (
    AnswerRejected,
    ClientToolCall,
    Complete,
    Delta,
    ErrorCode,
    Failed,
    OutputSnapshot,
    RunEvent,
    StreamEvent,
    SubRunEvent,
    ToolApprovalRequest,
    ToolProgress,
    ToolResult,
)
from runport.ports import PortError, RuntimeAdapter

MCP_INSTALL_HINT = "runport run --mcp needs the runport-mcp package: pip install 'runport[mcp]'"


def load_tools(spec: str) -> list[Tool | Callable[..., Any]]:
    """Import ``MODULE:ATTR`` — a list of ``Tool``s or plain functions (the current folder is
    importable, as it is for ``python -m``)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise CliError("usage", f"--tools takes MODULE:ATTR, not {spec!r}")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise CliError(
            ErrorCode.DATA_INVALID,
            f"cannot import {module_name!r} for --tools: {type(error).__name__}: {error}",
        ) from None
    try:
        value = getattr(module, attribute)
    except AttributeError:
        raise CliError(ErrorCode.DATA_INVALID, f"{module_name!r} has no {attribute!r}") from None
    tools = list(value) if isinstance(value, list | tuple) else [value]
    for tool in tools:
        if not isinstance(tool, Tool) and not callable(tool):
            raise CliError(
                ErrorCode.DATA_INVALID,
                f"--tools {spec}: {type(tool).__name__} is neither a Tool nor a function",
            )
    return tools


@contextmanager
def mcp_servers(servers: Sequence[str]) -> Iterator[list[Tool]]:
    """The tools of every ``--mcp`` server, connected for the block and closed after it
    (``runport.mcp`` is imported only when one is given). A server that does not start or
    lists too many tools is a one-line error with its code."""
    if not servers:
        yield []
        return
    try:
        from runport.mcp import mcp_tools
    except ModuleNotFoundError as error:
        if not extra_missing(error, "runport.mcp", "mcp"):
            raise
        raise CliError("usage", MCP_INSTALL_HINT) from None
    with ExitStack() as stack:
        tools: list[Tool] = []
        for server in servers:
            try:
                toolset = mcp_tools(server)
            except PortError as error:
                raise CliError(error.code, error.message) from None
            except ValueError as error:
                raise CliError("usage", f"--mcp {server!r}: {error}") from None
            stack.enter_context(toolset)
            tools.extend(toolset)
        yield tools


class TurnStream:
    """Plain streaming of a run: text as it arrives, each turn's sources and tool calls when it
    ends (reasoning never: ``--reasoning`` sends it to stderr)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._ends_with_newline = True

    def __call__(self, event: StreamEvent) -> None:
        if isinstance(event, Delta):
            self.out.write(event.text)
            self._ends_with_newline = event.text.endswith("\n")
        elif isinstance(event, Complete | Failed):
            if not self._ends_with_newline:
                self.out.write("\n")
                self._ends_with_newline = True
            if isinstance(event, Complete):
                write_sources(self.out, event.receipt)
                write_tool_calls(self.out, event.receipt)
        self.out.flush()


def turn_events(sink: Callable[[StreamEvent], None]) -> Callable[[RunEvent], None]:
    """The run's own events (tool results, rejections, snapshots) for a sink that draws them
    (the terminal's, which says so with ``partial_output``); any other sink gets every turn's
    events only, as before the run had any of its own."""
    if getattr(sink, "partial_output", False):
        return sink  # type: ignore[return-value]

    def turns_only(event: RunEvent) -> None:
        if not isinstance(
            event,
            ToolResult
            | ToolProgress
            | SubRunEvent
            | AnswerRejected
            | OutputSnapshot
            | ToolApprovalRequest
            | ClientToolCall,
        ):
            sink(event)

    return turns_only


def _result_json(result: RunResult) -> dict[str, Any]:
    return {
        "output": result.output,
        "output_schema_valid": result.output_schema_valid,
        "receipts": [r.model_dump(mode="json") for r in result.receipts],
        "messages": [m.model_dump(mode="json") for m in result.messages],
        "usage": result.usage.model_dump(mode="json"),
        "warnings": list(result.warnings),
    }


def run_command(
    contract: Path,
    adapter: RuntimeAdapter,
    *,
    inputs: Mapping[str, Any],
    context: Mapping[str, Any] | None,
    tools: list[Tool | Callable[..., Any]],
    stream: bool,
    json_lines: bool,
    reasoning: bool = False,
    save_to: Path | None = None,
    resume: Mapping[str, Any] | None = None,
) -> int:
    """Run with tools and print the result; a run that paused prints what waits on stderr
    and its result (with its continuation) on stdout, and exits ``PAUSED``."""
    out = sys.stdout
    keywords = dict(resume or {})
    try:
        if stream or json_lines:
            with run_sink(json_lines=json_lines, out=out) as sink:
                if getattr(sink, "partial_output", False):
                    from runport.cli._cmd_run import structured

                    sink.structured = structured(contract)  # type: ignore[attr-defined]
                result = run_stream(
                    contract,
                    adapter,
                    inputs=inputs,
                    context=context,
                    tools=tools,
                    on_event=turn_events(ReasoningToStderr(sink) if reasoning else sink),
                    partial_output=getattr(sink, "partial_output", False),
                    **keywords,
                )
        else:
            result = run(contract, adapter, inputs=inputs, context=context, tools=tools, **keywords)
            if reasoning:
                write_reasoning(sys.stderr, list(result.receipts))
    except RunError as error:
        if error.diagnostics:
            for diagnostic in error.diagnostics:
                sys.stderr.write(
                    f"runport: error: {diagnostic_line(diagnostic)} (stage {error.stage})\n"
                )
        else:
            sys.stderr.write(
                f"runport: error: {error.code}: {error.message} (stage {error.stage})\n"
            )
        return NOT_OK
    paused = result.status == "paused"
    if paused:
        write_pending(sys.stderr, result, keyed="continuation_seal" in keywords)
    if not json_lines:
        document = _result_json(result)
        if stream:
            document = {k: document[k] for k in ("output", "usage", "warnings")}
            document["turns"] = len(result.receipts)
        if paused:
            document.update(paused_json(result))
        out.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    elif paused:  # the events were written as they came: the paused result is the last line
        out.write(json.dumps(paused_json(result), ensure_ascii=False) + "\n")
    if save_to is not None:
        from runport.cli._cmd_run import saved
        from runport.cli._save_files import save_files

        saved(save_files(save_to, list(result.receipts)))
    for warning in result.warnings:
        sys.stderr.write(f"runport: warning: {warning}\n")
    return PAUSED if paused else 0
