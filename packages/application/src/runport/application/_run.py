from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import JsonValue

from runport.application._define import output_as
from runport.application._envelope import (
    ContractSource,
    capability_diagnostic,
    missing_capabilities,
    resolve_contract,
)
from runport.application._errors import RunError, RunPartial, Stage
from runport.application._history import repair_history
from runport.application._tools import Tool, as_tool, tool_result_text
from runport.contracts import (
    CompiledInteraction,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Message,
    StreamEvent,
    ToolCall,
    ToolSpec,
    Usage,
    canonical_json,
)
from runport.core import ContractError, compile_contract, schema_errors, validate_output
from runport.ports import PortError, RuntimeAdapter

ToolLike = Tool | Callable[..., Any]
EventHandler = Callable[[StreamEvent], None]

T = TypeVar("T")

_INPUT_CODES = frozenset(
    {ErrorCode.VALUE_REQUIRED, ErrorCode.VALUE_SCHEMA, ErrorCode.VALUE_UNKNOWN}
)


@dataclass(frozen=True)
class RunResult:
    """The canonical outcome of a run; equal for ``run`` and ``run_stream`` on the same upstream."""

    output: JsonValue
    output_schema_valid: bool
    receipts: tuple[ExecutionReceipt, ...]
    messages: tuple[Message, ...]
    usage: Usage
    warnings: tuple[str, ...] = ()

    def output_as(self, kind: type[T]) -> T:
        """The answer as an instance of ``kind`` (the contract's output type: a pydantic model,
        ``str``, …), so a caller gets a typed value without re-parsing JSON."""
        return output_as(self.output, kind)


def _backoff_seconds(error: PortError, attempt: int) -> float:
    if error.retry_after_ms is not None:
        return error.retry_after_ms / 1000
    return float(min(0.5 * 2 ** (attempt - 1), 8.0))


def _assistant_content(receipt: ExecutionReceipt) -> str:
    if receipt.text is not None:
        return receipt.text
    if receipt.output is None or receipt.tool_calls:
        return ""
    if isinstance(receipt.output, str):
        return receipt.output
    return canonical_json(receipt.output).decode("utf-8")


class _Run:
    """One run's state: the conversation, the receipts, the budgets. Used once."""

    def __init__(
        self,
        interaction: CompiledInteraction,
        adapter: RuntimeAdapter,
        tools: Mapping[str, Tool],
        offered: Mapping[str, ToolSpec],
        history: Sequence[Message],
        warnings: list[str],
        *,
        max_turns: int,
        max_corrections: int,
        max_attempts: int,
        sleep: Callable[[float], None],
        on_event: EventHandler | None,
    ) -> None:
        self.interaction = interaction
        self.adapter = adapter
        self.tools = tools
        self.offered = offered
        self.messages = _place_history(list(interaction.messages), history)
        self.warnings = warnings
        self.receipts: list[ExecutionReceipt] = []
        self.max_turns = max_turns
        self.max_corrections = max_corrections
        self.corrections = 0
        self.max_attempts = max_attempts
        self.sleep = sleep
        self.on_event = on_event

    def partial(self, text: str | None = None) -> RunPartial:
        return RunPartial(tuple(self.receipts), tuple(self.messages), text)

    def fail(self, stage: Stage, code: str, message: str, text: str | None = None) -> RunError:
        return RunError(stage, code, self.partial(text), message)

    def request(self) -> ExecutionRequest:
        interaction = self.interaction.model_copy(
            update={"messages": list(self.messages), "tools": list(self.offered.values()) or None}
        )
        return ExecutionRequest(interaction=interaction)

    def execute(self) -> RunResult:
        while True:
            if len(self.receipts) >= self.max_turns:
                raise self.fail(
                    "model",
                    ErrorCode.RUN_TURNS_EXHAUSTED,
                    f"no final answer within max_turns={self.max_turns}",
                )
            receipt = self.turn(self.request())
            self.receipts.append(receipt)
            self.messages.append(
                Message(
                    role="assistant",
                    content=_assistant_content(receipt),
                    tool_calls=receipt.tool_calls,
                )
            )
            if receipt.tool_calls:
                self.run_tools(receipt.tool_calls)
                continue
            if receipt.output_schema_valid:
                return self.result(receipt)
            self.correct(receipt)

    def turn(self, request: ExecutionRequest) -> ExecutionReceipt:
        if self.on_event is not None:
            return self.streamed_turn(request, self.on_event)
        attempt = 0
        while True:
            attempt += 1
            try:
                return self.adapter.execute(request)
            except PortError as error:
                if not error.retryable:
                    raise self.fail("model", error.code, error.message) from error
                if attempt >= self.max_attempts:
                    raise self.fail(
                        "model",
                        ErrorCode.HOST_RETRY_EXHAUSTED,
                        f"{attempt} attempt(s) failed; the last with {error.code}: {error.message}",
                    ) from error
                self.sleep(_backoff_seconds(error, attempt))

    def streamed_turn(self, request: ExecutionRequest, on_event: EventHandler) -> ExecutionReceipt:
        text: list[str] = []
        completed: list[ExecutionReceipt] = []
        stopped: list[BaseException] = []

        def sink(event: StreamEvent) -> None:
            if isinstance(event, Delta):
                text.append(event.text)
            elif isinstance(event, Complete):
                completed.append(event.receipt)
            try:
                on_event(event)
            except Exception as error:
                stopped.append(error)
                raise

        try:
            return self.adapter.execute_streaming(request, sink)
        except Exception as error:
            if stopped and error is stopped[0]:
                # The caller was handed this turn's receipt before it stopped: keep it.
                self.receipts.extend(completed)
                raise self.fail(
                    "model",
                    ErrorCode.CALLER_STOPPED,
                    f"the event handler raised {type(error).__name__}",
                    "".join(text),
                ) from error
            if isinstance(error, PortError):
                raise self.fail("model", error.code, error.message, "".join(text)) from error
            raise

    def spend_correction(self, stage: Stage, why: str) -> None:
        if self.corrections >= self.max_corrections:
            raise self.fail(
                stage,
                ErrorCode.RUN_CORRECTIONS_EXHAUSTED,
                f"{why}, and max_corrections={self.max_corrections} is spent",
            )
        self.corrections += 1

    def run_tools(self, calls: Sequence[ToolCall]) -> None:
        problems = [(call, self.problem(call)) for call in calls]
        rejected = [f"{call.name}: {problem}" for call, problem in problems if problem]
        if rejected:
            self.spend_correction(
                "tool", "the model's tool calls were rejected: " + "; ".join(rejected)
            )
        for call, problem in problems:
            if problem:
                content = f"rejected: tool {call.name!r} was not run: {problem}"
            else:
                content = self.call_tool(call)
            self.messages.append(Message(role="tool", content=content, tool_call_id=call.call_id))

    def problem(self, call: ToolCall) -> str | None:
        """Why ``call`` cannot be run (``None`` when it can)."""
        if call.name not in self.offered:
            return "no such tool was offered"
        if call.name not in self.tools:
            return "no implementation is available for this tool"
        if not isinstance(call.arguments, dict):
            return "the arguments must be a JSON object"
        errors = schema_errors(self.offered[call.name].parameters, call.arguments)
        if isinstance(errors, str):
            return f"the tool's parameters schema is invalid: {errors}"
        if errors:
            return "invalid arguments: " + "; ".join(
                f"{pointer or '(root)'}: {message}" for pointer, message in errors
            )
        refused = self.tools[call.name].check(call.arguments)
        return None if refused is None else f"invalid arguments: {refused}"

    def call_tool(self, call: ToolCall) -> str:
        assert isinstance(call.arguments, dict)
        try:
            return tool_result_text(self.tools[call.name].call(call.arguments))
        except Exception as error:
            raise self.fail(
                "tool", ErrorCode.TOOL_FAILED, f"tool {call.name!r} raised {type(error).__name__}"
            ) from error

    def correct(self, receipt: ExecutionReceipt) -> None:
        problems = validate_output(self.interaction.output_schema, receipt.output)
        lines = [f"- {d.json_pointer or '(root)'}: {d.message}" for d in problems] or [
            "- the answer is not a JSON document"
        ]
        self.spend_correction("output", "the answer failed the output schema")
        self.messages.append(
            Message(
                role="user",
                content="Your answer does not satisfy the required output schema:\n"
                + "\n".join(lines)
                + "\nAnswer again with output that satisfies the schema.",
            )
        )

    def result(self, final: ExecutionReceipt) -> RunResult:
        usage = Usage()
        for receipt in self.receipts:
            if receipt.usage is not None:
                usage = usage + receipt.usage
        return RunResult(
            output=final.output,
            output_schema_valid=True,
            receipts=tuple(self.receipts),
            messages=tuple(self.messages),
            usage=usage,
            warnings=tuple(self.warnings),
        )


def _place_history(messages: list[Message], history: Sequence[Message]) -> list[Message]:
    """History goes after the contract's leading system/developer messages."""
    lead = 0
    while lead < len(messages) and messages[lead].role in ("system", "developer"):
        lead += 1
    return [*messages[:lead], *history, *messages[lead:]]


def _start(
    contract_or_path: ContractSource,
    adapter: RuntimeAdapter,
    *,
    inputs: Mapping[str, Any],
    context: Mapping[str, Any] | None,
    tools: Sequence[ToolLike],
    history: Sequence[Message] | None,
    max_turns: int,
    max_corrections: int,
    max_attempts: int,
    sleep: Callable[[float], None],
    on_event: EventHandler | None,
) -> _Run:
    try:
        contract = resolve_contract(contract_or_path)
        interaction = compile_contract(contract, inputs=inputs, context=context)
    except ContractError as error:
        first = error.diagnostics[0]
        stage: Stage = "input" if first.code in _INPUT_CODES else "compile"
        raise RunError(
            stage,
            first.code,
            RunPartial(),
            str(error),
            diagnostics=tuple(error.diagnostics),
        ) from error
    missing = missing_capabilities(interaction.required_capabilities, adapter)
    if missing:
        diagnostic = capability_diagnostic(missing, adapter)
        raise RunError(
            "compile", diagnostic.code, RunPartial(), diagnostic.message, diagnostics=(diagnostic,)
        )
    implementations = {tool.name: tool for tool in map(as_tool, tools)}
    offered = {spec.name: spec for spec in interaction.tools or []}
    for tool in implementations.values():
        offered.setdefault(tool.name, tool.spec())
    repaired, warnings = repair_history(history or ())
    return _Run(
        interaction,
        adapter,
        implementations,
        offered,
        repaired,
        warnings,
        max_turns=max_turns,
        max_corrections=max_corrections,
        max_attempts=max_attempts,
        sleep=sleep,
        on_event=on_event,
    )


def run(
    contract_or_path: ContractSource,
    adapter: RuntimeAdapter,
    *,
    inputs: Mapping[str, Any],
    context: Mapping[str, Any] | None = None,
    tools: Sequence[ToolLike] = (),
    history: Sequence[Message] | None = None,
    max_turns: int = 8,
    max_corrections: int = 2,
    max_attempts: int = 3,
    sleep: Callable[[float], None] = time.sleep,
) -> RunResult:
    """Drive model turns until a schema-valid answer: tools run, corrections asked, retryable
    failures retried (docs/runs.md). Raises :class:`RunError` with the partial evidence
    otherwise."""
    return _start(
        contract_or_path,
        adapter,
        inputs=inputs,
        context=context,
        tools=tools,
        history=history,
        max_turns=max_turns,
        max_corrections=max_corrections,
        max_attempts=max_attempts,
        sleep=sleep,
        on_event=None,
    ).execute()


def run_stream(
    contract_or_path: ContractSource,
    adapter: RuntimeAdapter,
    *,
    inputs: Mapping[str, Any],
    on_event: EventHandler,
    context: Mapping[str, Any] | None = None,
    tools: Sequence[ToolLike] = (),
    history: Sequence[Message] | None = None,
    max_turns: int = 8,
    max_corrections: int = 2,
    max_attempts: int = 3,
    sleep: Callable[[float], None] = time.sleep,
) -> RunResult:
    """``run``, with every event of every turn handed to ``on_event`` as it arrives.

    Streamed turns are single-attempt (``max_attempts`` and ``sleep`` are accepted for symmetry
    and unused): a fragment already shown cannot be replayed. An exception raised by
    ``on_event`` ends the run as ``RunError(stage="model", code="TQX_CALLER_STOPPED")``.
    """
    return _start(
        contract_or_path,
        adapter,
        inputs=inputs,
        context=context,
        tools=tools,
        history=history,
        max_turns=max_turns,
        max_corrections=max_corrections,
        max_attempts=max_attempts,
        sleep=sleep,
        on_event=on_event,
    ).execute()
