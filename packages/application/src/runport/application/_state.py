"""The run loop's decisions, with no I/O (docs/runs.md).

``RunState`` knows the conversation, the budgets and what happens after each model turn: run
the tools, ask for a correction, answer, retry, or fail with the evidence. It never calls an
adapter or a sink; ``run_plan`` (in ``_plan``) walks it for the sync and async drivers.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from runport.application._approvals import held_for_approval, pause
from runport.application._contract import not_json, unusable_turn
from runport.application._errors import RunError, RunPartial, Stage
from runport.application._history import place_history
from runport.application._options import Settings
from runport.application._relay import TurnWatch, failure_message
from runport.application._result import RunResult as RunResult
from runport.application._subrun import Nested
from runport.application._tools import Output, Tool, tool_result_text
from runport.contracts import (
    AnswerRejected,
    ClientToolCall,
    CompiledInteraction,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    Message,
    SubRunEvent,
    ToolApprovalRequest,
    ToolCall,
    ToolProgress,
    ToolResult,
    ToolSpec,
    Usage,
    canonical_json,
)
from runport.core import is_text_schema, parse_json_text, schema_errors, validate_output
from runport.ports import CorrectionStage, PortError, RunScope, error_type

_BACKOFF_BASE_S = 0.5
_BACKOFF_CAP_S = 8.0

log = logging.getLogger("runport.application")


Between = (
    ToolResult | ToolProgress | SubRunEvent | AnswerRejected | ToolApprovalRequest | ClientToolCall
)
"""What the caller is shown between two turns of a run."""

Ran = tuple[str, JsonValue] | RunError
"""A call's outcome: the text the model gets and the value the caller is shown, or the
``RunError`` that ends the run."""


@dataclass(frozen=True)
class Retry:
    """Try the turn again after ``seconds``; ``code`` is what the failed attempt raised."""

    seconds: float
    code: str


@dataclass(frozen=True)
class GiveUp:
    """The turn failed for good: show ``event`` (if any), then raise ``error``."""

    error: RunError
    event: Failed | None


def _assistant_content(receipt: ExecutionReceipt) -> str:
    if receipt.text is not None:
        return receipt.text
    if receipt.output is None or receipt.tool_calls:
        return ""
    if isinstance(receipt.output, str):
        return receipt.output
    return canonical_json(receipt.output).decode("utf-8")


def _duplicate_id(calls: Sequence[ToolCall]) -> str | None:
    """The first call id that two of ``calls`` share, else ``None``."""
    seen: set[str] = set()
    for call in calls:
        if call.call_id in seen:
            return call.call_id
        seen.add(call.call_id)
    return None


@dataclass(frozen=True, slots=True)
class Await:
    """What a tool round asks of the driver: await ``awaitable`` (an async tool's coroutine,
    or one step of an async generator tool) and send back ``Awaited`` — or what awaiting it
    raised, as the plan's ``Raised``."""

    awaitable: Awaitable[Any]


@dataclass(frozen=True, slots=True)
class Awaited:
    """What an ``Await`` gave."""

    value: Any


def _awaited(got: Any) -> Any:
    """The value sent back for an ``Await``; what awaiting it raised is raised here."""
    if isinstance(got, Awaited):
        return got.value
    raise got.error


Shown = ToolProgress | SubRunEvent | Await
"""What a tool call hands up while it runs: events for the caller, and awaits for the driver."""

Round = Generator[Between | Await, Any, None]
"""A tool round: the events the caller is shown, and the awaits the driver performs, whose
outcome is sent back in."""


class _Overdue(Exception):
    """A generator tool stopped by the run's deadline (carries the run's error)."""

    def __init__(self, error: RunError) -> None:
        super().__init__(error.message)
        self.error = error


class RunState:
    """One run's state: the conversation, the receipts, the budgets. Used once."""

    def __init__(
        self,
        interaction: CompiledInteraction,
        tools: Mapping[str, Tool],
        offered: Mapping[str, ToolSpec],
        history: Sequence[Message],
        warnings: list[str],
        options: Settings,
    ) -> None:
        self.interaction = interaction
        self.tools = tools
        self.offered = offered
        self.messages = place_history(list(interaction.messages), history)
        self.warnings = warnings
        self.receipts: list[ExecutionReceipt] = []
        self.options = options
        self.corrections = 0
        self.scope = RunScope()
        self.resumed: Iterator[Between | Await] = iter(())
        """A resumed run's decided calls, run as they are read, before its next turn."""
        self.paused: RunResult | None = None
        """Set when the round just read paused the run for a person's decisions."""
        self.nested_usage = Usage()
        """What the run's sub-runs (tools that are runs) spent; part of the run's usage."""
        self.ends = None if options.deadline is None else options.clock() + options.deadline
        """When the run's deadline passes, on ``options.clock`` (``None``: never)."""

    def overdue(self, stage: Stage, what: str) -> RunError | None:
        """The ``TQX_RUN_DEADLINE`` error when the run's deadline has passed, else ``None``."""
        if self.ends is None or self.options.clock() < self.ends:
            return None
        return self.fail(
            stage,
            ErrorCode.RUN_DEADLINE,
            f"the run passed its deadline={self.options.deadline:g} s {what}",
        )

    def partial(self, text: str | None = None) -> RunPartial:
        return RunPartial(tuple(self.receipts), tuple(self.messages), text)

    def fail(self, stage: Stage, code: str, message: str, text: str | None = None) -> RunError:
        return RunError(stage, code, self.partial(text), message)

    def stopped(self, error: BaseException, text: str | None) -> RunError:
        """The run's end when the caller's event handler raised ``error``."""
        return self.fail(
            "model",
            ErrorCode.CALLER_STOPPED,
            f"the event handler raised {type(error).__name__}",
            text,
        )

    def next_request(self) -> ExecutionRequest:
        """The request of the next model turn (``RunError`` when ``max_turns`` is spent)."""
        late = self.overdue("model", "before its next model turn")
        if late is not None:
            raise late
        if len(self.receipts) >= self.options.max_turns:
            raise self.fail(
                "model",
                ErrorCode.RUN_TURNS_EXHAUSTED,
                f"no final answer within max_turns={self.options.max_turns}",
            )
        interaction = self.interaction.model_copy(
            update={"messages": list(self.messages), "tools": list(self.offered.values()) or None}
        )
        return ExecutionRequest(interaction=interaction)

    def after_turn(self, receipt: ExecutionReceipt) -> RunResult | Iterator[Between | Await]:
        """Take a finished turn: the result when it is the answer, else what happens before
        the next turn, as the events the caller is shown of it — a ``ToolResult`` as each
        tool has run, or the ``AnswerRejected`` of a correction round. The iterator does the
        work as it is read, and raises the ``RunError`` that ends the run (a tool that raised,
        a budget spent) after the event that says so.

        The turn's assistant message carries its reasoning (``Message.reasoning``, signatures
        and all) and the tools the provider ran itself (``Message.server_tools``), so the next
        turn sends them back to the provider that made them.

        A turn's end is judged first (docs/runs.md, "per finish"): a paused turn is sent back
        as it is and the model asked again (within ``max_turns``); a turn cut by the token
        limit or withheld by the provider ends the run, its receipt in ``partial`` and nothing
        of it acted on — no tool run, no correction round."""
        self.receipts.append(receipt)
        paused = receipt.finish == "pause"
        unusable = None if paused else unusable_turn(receipt)
        if unusable is not None:
            raise self.fail("model", unusable.code, unusable.message)
        self.messages.append(
            Message(
                role="assistant",
                content=_assistant_content(receipt),
                tool_calls=None if paused else receipt.tool_calls,
                reasoning=receipt.reasoning,
                server_tools=receipt.server_tools,
            )
        )
        if paused:
            return iter(())
        if receipt.tool_calls:
            return self.run_tools(receipt.tool_calls)
        answer = self._continued(receipt)
        if answer.output_schema_valid:
            return self.result(answer)
        return self.correct(answer)

    def _continued(self, receipt: ExecutionReceipt) -> ExecutionReceipt:
        """The answer ``receipt`` ends: with the text of the paused turns just before it (each
        continued by the next, adr/0050) joined in front, its output and validity derived
        again from the whole text by the text/structured rule. A structured answer whole in
        the last turn stands when the joined text is no valid answer (the paused turns said
        what they were doing first, such as "Searching…"). Only the answer is joined: the
        receipts stay each turn's own, as the provider gave them."""
        paused: list[ExecutionReceipt] = []
        for earlier in reversed(self.receipts[:-1]):
            if earlier.finish != "pause":
                break
            paused.append(earlier)
        if not any(earlier.text for earlier in paused):
            return receipt
        text = "".join(earlier.text or "" for earlier in reversed(paused)) + (receipt.text or "")
        schema = self.interaction.output_schema
        parsed, output = (True, text) if is_text_schema(schema) else parse_json_text(text)
        valid = parsed and not validate_output(schema, output)
        if not valid and receipt.output_schema_valid:
            return receipt
        return receipt.model_copy(
            update={"text": text, "output": output, "output_schema_valid": valid}
        )

    def turn_failed(
        self, error: Exception, attempt: int, watch: TurnWatch | None
    ) -> Retry | GiveUp:
        """What to do after attempt ``attempt`` of a turn raised ``error``.

        A retryable failure is retried while attempts are left, unless the caller already saw
        part of the turn (nothing shown is ever replayed) or the upstream asked for a longer
        wait than ``max_retry_wait``. Waits without a hint back off with full jitter.
        """
        text = None if watch is None else "".join(watch.text)
        if watch is not None and watch.stopped is not None and error is watch.stopped:
            # The caller was handed this turn's receipt before it stopped: keep it.
            self.receipts.extend(watch.completed)
            return GiveUp(self.stopped(error, text), None)
        if not isinstance(error, PortError):
            error = PortError(
                ErrorCode.RUNTIME_INVALID_RESPONSE,
                f"the adapter raised {type(error).__name__} instead of a PortError",
            )
        held = None
        if watch is not None:
            held = watch.held or Failed(code=error.code, message=failure_message(error))
        wait = self._wait(error, attempt, shown=watch is not None and watch.shown)
        if isinstance(wait, tuple):
            return GiveUp(self.fail("model", *wait, text), held)
        return Retry(wait, error.code)

    def _wait(self, error: PortError, attempt: int, *, shown: bool) -> float | tuple[str, str]:
        """Seconds to wait before the next attempt, or the code and message to fail with."""
        options = self.options
        message = failure_message(error)
        if not error.retryable or shown:
            return error.code, message
        if attempt >= options.max_attempts:
            return (
                ErrorCode.HOST_RETRY_EXHAUSTED,
                f"{attempt} attempt(s) failed; the last with {error.code}: {message}",
            )
        hint = error.retry_after_ms
        if hint is not None:
            if hint > options.max_retry_wait * 1000:
                return error.code, (
                    f"{message} (the upstream asked to wait {hint} ms, more than "
                    f"max_retry_wait={options.max_retry_wait:g} s)"
                )
            return hint / 1000
        ceiling = min(_BACKOFF_BASE_S * 2.0 ** min(attempt - 1, 32), _BACKOFF_CAP_S)
        return min(options.random() * ceiling, options.max_retry_wait)

    def spend_correction(self, stage: CorrectionStage, why: str, details: Sequence[str]) -> None:
        if self.corrections >= self.options.max_corrections:
            raise self.fail(
                stage,
                ErrorCode.RUN_CORRECTIONS_EXHAUSTED,
                f"{why}, and max_corrections={self.options.max_corrections} is spent",
            )
        self.corrections += 1
        log.warning(
            "correction round %d of %s, %s rejected: %s",
            self.corrections,
            self.interaction.contract_id,
            stage,
            ", ".join(details),
        )
        self.scope.correction(self.corrections, stage, tuple(details))

    def run_tools(self, calls: Sequence[ToolCall]) -> Round:
        """Answer every call, in order, and say how each went. Rejected calls spend one
        correction for the batch before anything runs (past the budget, nothing runs). Two
        calls under one id end the run before anything runs: their results could not be told
        apart, and every provider refuses such a history (adr/0044). Calls whose tool needs a
        person's approval are held, and the round ends by pausing the run (adr/0059)."""
        duplicate = _duplicate_id(calls)
        if duplicate is not None:
            raise self.fail(
                "model",
                ErrorCode.RUNTIME_INVALID_RESPONSE,
                f"the model made two tool calls under one id {duplicate!r}: no tool was run",
            )
        problems = [(call, self.problem(call)) for call in calls]
        held = held_for_approval(self, problems)
        rejected = [f"{call.name}: {problem}" for call, problem in problems if problem]
        if rejected:
            self.spend_correction(
                "tool",
                "the model's tool calls were rejected: " + "; ".join(rejected),
                sorted({call.name for call, problem in problems if problem}),
            )
        for call, problem in problems:
            if problem:
                content = f"rejected: tool {call.name!r} was not run: {problem}"
                self.messages.append(self._tool_message(call, content))
                yield ToolResult(call_id=call.call_id, name=call.name, error=problem)
                continue
            if call in held:
                continue
            ran = yield from self.call_tool(call)
            if isinstance(ran, RunError):
                yield ToolResult(call_id=call.call_id, name=call.name, error=ran.message)
                raise ran
            text, output = ran
            self.messages.append(self._tool_message(call, text))
            yield ToolResult(call_id=call.call_id, name=call.name, output=output)
        if held:
            yield from pause(self, held)

    @staticmethod
    def _tool_message(call: ToolCall, content: str) -> Message:
        return Message(role="tool", content=content, tool_call_id=call.call_id)

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

    def call_tool(self, call: ToolCall) -> Generator[Shown, Any, Ran]:
        """Run ``call``: the text the model gets and the value the caller is shown, or the
        ``RunError`` (``from`` what the tool raised) that ends the run. A tool that is a
        generator (or an async generator) is shown a ``ToolProgress`` per value it yields, as
        it yields it; its result is what it returns, or (when it returns ``None``, and always
        for an async generator) the last value it yielded. An async function's coroutine, and
        each step of an async generator, is handed to the driver as an ``Await`` (awaited on
        the run's loop, or on a loop of the sync run's own). The run's deadline is read before
        the call and between yields: past it, the generator is closed and the run ends
        ``TQX_RUN_DEADLINE``."""
        assert isinstance(call.arguments, dict)
        late = self.overdue("tool", f"before tool {call.name!r} ran")
        if late is not None:
            return late
        self.scope.tool_started(call.name, call.call_id)
        try:
            value = self.tools[call.name].call(call.arguments)
            if inspect.isgenerator(value) or inspect.isasyncgen(value):
                value = yield from self._progress(call, value)
            elif inspect.isawaitable(value):
                value = _awaited((yield Await(value)))
            if isinstance(value, RunResult):  # a sub-run's: its output, its usage added
                self.nested_usage = self.nested_usage + value.usage
                value = value.output
            text = tool_result_text(value)
        except _Overdue as overdue:
            self.scope.tool_finished(call.name, call.call_id, ErrorCode.RUN_DEADLINE)
            return overdue.error
        except BaseException as error:
            self.scope.tool_finished(call.name, call.call_id, error_type(error))
            if not isinstance(error, Exception):
                raise
            raised = f"tool {call.name!r} raised {type(error).__name__}"
            if isinstance(error, PortError | RunError):  # coded; its message names no secret
                raised += f" {error.code}: {error.message}"
            failure = self.fail("tool", ErrorCode.TOOL_FAILED, raised)
            failure.__cause__ = error
            return failure
        self.scope.tool_finished(call.name, call.call_id, None)
        return text, value if isinstance(value, str) else json.loads(text)

    def _progress(
        self, call: ToolCall, values: Generator[Any, Any, Any] | AsyncGenerator[Any, Any]
    ) -> Generator[Shown, Any, Any]:
        """Show what a generator tool yields, and return its result; closed however it ends
        (an async one, when the run stops between two of its steps, by its loop's finalizer)."""
        last: Any = None
        ended = False
        try:
            while True:
                late = self.overdue("tool", f"while tool {call.name!r} ran: it was stopped")
                if late is not None:
                    raise _Overdue(late)
                if isinstance(values, Generator):
                    try:
                        value = next(values)
                    except StopIteration as stop:
                        ended = True
                        return last if stop.value is None else stop.value
                else:
                    got = yield Await(values.__anext__())
                    if not isinstance(got, Awaited) and isinstance(got.error, StopAsyncIteration):
                        ended = True
                        return last
                    value = _awaited(got)
                if isinstance(value, Nested):  # a sub-run's event, under this call
                    yield SubRunEvent(call_id=call.call_id, event=value.event)
                    continue
                if isinstance(value, RunResult | Output):  # the result, shown as no progress
                    last = value.value if isinstance(value, Output) else value
                    continue
                last = value
                data = value if isinstance(value, str) else json.loads(tool_result_text(value))
                yield ToolProgress(call_id=call.call_id, data=data)
        except (Exception, _Overdue):
            if not ended and not isinstance(values, Generator):
                yield Await(values.aclose())  # its own finally runs, on the run's loop
            raise
        finally:
            if isinstance(values, Generator):
                values.close()

    def correct(self, receipt: ExecutionReceipt) -> Iterator[AnswerRejected]:
        """A correction round for an answer the schema rejects: the ``AnswerRejected`` the
        caller is shown (``correcting`` false when the budget is spent, and the run then
        ends), then the message asking for a new answer."""
        problems = validate_output(self.interaction.output_schema, receipt.output)
        correcting = self.corrections < self.options.max_corrections
        yield AnswerRejected(diagnostics=problems or [not_json()], correcting=correcting)
        lines = [f"- {d.json_pointer or '(root)'}: {d.message}" for d in problems] or [
            "- the answer is not a JSON document"
        ]
        self.spend_correction(
            "output",
            "the answer failed the output schema",
            sorted({str(diagnostic.code) for diagnostic in problems}) or [ErrorCode.OUTPUT_SCHEMA],
        )
        self.messages.append(
            Message(
                role="user",
                content="Your answer does not satisfy the required output schema:\n"
                + "\n".join(lines)
                + "\nAnswer again with output that satisfies the schema.",
            )
        )

    def usage(self) -> Usage:
        usage = self.nested_usage
        for receipt in self.receipts:
            if receipt.usage is not None:
                usage = usage + receipt.usage
        return usage

    def result(self, final: ExecutionReceipt) -> RunResult:
        return RunResult(
            output=final.output,
            output_schema_valid=True,
            receipts=tuple(self.receipts),
            messages=tuple(self.messages),
            usage=self.usage(),
            warnings=tuple(self.warnings),
        )
