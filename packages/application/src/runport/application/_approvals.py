"""A person in the loop (docs/runs.md, adr/0059): a run pauses before a call whose tool needs
approval, and a later call resumes it from the sealed continuation alone.

Pausing: a tool round first asks every call that could run whether it needs approval (before
anything of the round runs), runs the others in order as usual, then seals the run as it stands
and ends with a paused ``RunResult``. Resuming: the continuation is opened (seal, contract,
expiry), the approvals are checked against its pending calls, the continuation is spent — only
then does anything run — and the decided calls are answered in the calls' order before the
next model turn: approved ones run, denied ones get a denial the model reads. The model is not
called again for the paused turn, and the conversation goes on where it stopped.

Client tools (``Tool.client``, docs/runs.md "Client tools") go the same way: a call to one is
held like a call that needs approval and is pending as a ``ClientToolCall``; the resume gives
its result (``tool_results=``) where an approval gives a decision.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runport.application._continuation import ContinuationInvalid, PausedState
from runport.application._contract import (
    ContractSource,
    Unsupported,
    capability_diagnostic,
    missing_capabilities,
    resolve_contract,
)
from runport.application._errors import RunError, RunPartial
from runport.application._result import RunResult
from runport.application._tools import ClientToolError, tool_result_text
from runport.contracts import (
    AdapterDescriptor,
    ClientToolCall,
    ErrorCode,
    Message,
    ToolApprovalRequest,
    ToolCall,
    ToolResult,
)

if TYPE_CHECKING:
    from runport.application._options import ClientResult, Decision, Settings
    from runport.application._state import Round, RunState

__all__ = ["held_for_approval", "opened", "pause", "refuse_stray_approvals", "resume"]

DENIED = "a person denied this call"
"""The reason a denial gives the model when the person gave none."""


def held_for_approval(
    state: RunState, problems: Sequence[tuple[ToolCall, str | None]]
) -> list[ToolCall]:
    """The calls of a round that wait for the caller: those that could run and whose tool is
    a client tool, or says it needs approval for these arguments. Asked before anything of the
    round runs, so a ``needs_approval`` that raises ends the run (``TQX_TOOL_FAILED``) with
    nothing run."""
    held: list[ToolCall] = []
    for call, problem in problems:
        if problem:
            continue
        assert isinstance(call.arguments, dict)
        if state.tools[call.name].on_client:
            held.append(call)
            continue
        try:
            asks = state.tools[call.name].asks_approval(call.arguments)
        except Exception as error:
            failure = state.fail(
                "tool",
                ErrorCode.TOOL_FAILED,
                f"needs_approval of tool {call.name!r} raised {type(error).__name__}: no tool "
                "of the round was run",
            )
            raise failure from error
        if asks:
            held.append(call)
    return held


Pending = ToolApprovalRequest | ClientToolCall


def pause(state: RunState, held: Sequence[ToolCall]) -> Iterator[Pending]:
    """Seal the run as it stands and make its paused result (``state.paused``); the caller is
    shown, in the calls' order, one ``ClientToolCall`` per held call of a client tool and one
    ``ToolApprovalRequest`` per other held call."""
    requests = tuple(
        (ClientToolCall if state.tools[call.name].on_client else ToolApprovalRequest)(
            call_id=call.call_id,
            name=call.name,
            arguments=call.arguments if isinstance(call.arguments, dict) else {},
        )
        for call in held
    )
    seal = state.options.seal
    sealed = PausedState(
        id=seal.new_id(),
        contract_id=state.interaction.contract_id,
        expires=seal.expiry(),
        interaction=state.interaction.model_copy(update={"messages": list(state.messages)}),
        receipts=list(state.receipts),
        warnings=list(state.warnings),
        corrections=state.corrections,
        pending=list(requests),
    )
    state.paused = RunResult(
        output=None,
        output_schema_valid=False,
        receipts=tuple(state.receipts),
        messages=tuple(state.messages),
        usage=state.usage(),
        warnings=tuple(state.warnings),
        status="paused",
        pending=requests,
        continuation=seal.seal(sealed),
    )
    yield from requests


def _refused(code: str, message: str) -> RunError:
    return RunError("input", code, RunPartial(), message)


def refuse_stray_approvals(options: Settings) -> None:
    """Approvals and client tool results belong to a continuation: given without one, they
    answer nothing."""
    for name, given in (("approvals", options.approvals), ("tool_results", options.tool_results)):
        if given is not None:
            raise _refused(
                ErrorCode.APPROVALS_INVALID,
                f"{name}= answers a paused run: pass the paused result's continuation= with it",
            )


def opened(
    contract_or_path: ContractSource,
    descriptor: AdapterDescriptor,
    inputs: Mapping[str, Any] | None,
    context: Mapping[str, Any] | None,
    options: Settings,
) -> PausedState:
    """The paused run ``options.continuation`` carries, checked before anything runs: sealed by
    this seal's key for this contract and unexpired (``TQX_CONTINUATION_INVALID``), answered
    call by call (``TQX_APPROVALS_INVALID``), and the adapter able to go on with it. The
    contract is only loaded (its compiled form, the conversation with it, is the
    continuation's), so ``inputs``, ``context`` and ``history`` have no place here."""
    given = [
        name
        for name, value in (("inputs", inputs), ("context", context), ("history", options.history))
        if value
    ]
    if given:
        raise TypeError(
            f"a resumed run takes its conversation from the continuation: {', '.join(given)} "
            "cannot be given with continuation="
        )
    contract = resolve_contract(contract_or_path)
    try:
        paused = options.seal.open(options.continuation, contract.id)
    except ContinuationInvalid as invalid:
        raise _refused(
            ErrorCode.CONTINUATION_INVALID, f"the continuation is refused: {invalid}"
        ) from None
    _check_decisions(paused.pending, options.approvals)
    _check_results(paused.pending, options.tool_results)
    missing = missing_capabilities(paused.interaction.required_capabilities, descriptor)
    if missing:
        raise Unsupported(capability_diagnostic(missing, descriptor))
    return paused


def _answers_exactly(
    what: str, kind: type[Pending], pending: Sequence[Pending], answers: object
) -> list[str]:
    """The ids of ``pending``'s calls of ``kind``, which ``answers`` must name, no more and no
    fewer (``TQX_APPROVALS_INVALID`` otherwise)."""
    if answers is None:
        answers = {}
    if not isinstance(answers, Mapping):
        raise _refused(
            ErrorCode.APPROVALS_INVALID,
            f"{what} must map call ids to answers, not {type(answers).__name__}",
        )
    ids = [request.call_id for request in pending if isinstance(request, kind)]
    strays = sorted(map(repr, set(answers) - set(ids)))
    if strays:
        others = [r.call_id for r in pending if not isinstance(r, kind) and r.call_id in answers]
        where = (
            f" ({', '.join(map(repr, others))} pending for the other kind of answer)"
            if others
            else ""
        )
        raise _refused(
            ErrorCode.APPROVALS_INVALID,
            f"{what} name call(s) that are not pending: {', '.join(strays)} "
            f"(pending: {', '.join(map(repr, ids)) or 'none'}){where}",
        )
    missing = [repr(call_id) for call_id in ids if call_id not in answers]
    if missing:
        noun = "a decision" if kind is ToolApprovalRequest else "a result"
        raise _refused(
            ErrorCode.APPROVALS_INVALID,
            f"pending call(s) without {noun}: {', '.join(missing)}",
        )
    return ids


def _check_results(pending: Sequence[Pending], results: Mapping[str, ClientResult] | None) -> None:
    """The client tools' results answer exactly the pending ``ClientToolCall``s."""
    ids = _answers_exactly("tool_results", ClientToolCall, pending, results)
    for call_id in ids:
        assert results is not None
        result = results[call_id]
        if isinstance(result, ClientToolError):
            if not isinstance(result.message, str) or not result.message.strip():
                raise _refused(
                    ErrorCode.APPROVALS_INVALID,
                    f"the error for {call_id!r} needs a message (a non-empty string): it is "
                    "what the model is told",
                )
            continue
        try:
            tool_result_text(result)
        except (TypeError, ValueError) as error:
            raise _refused(
                ErrorCode.APPROVALS_INVALID,
                f"the result for {call_id!r} is not a JSON value: {error}",
            ) from None


def _check_decisions(pending: Sequence[Pending], approvals: Mapping[str, Decision] | None) -> None:
    ids = _answers_exactly("approvals", ToolApprovalRequest, pending, approvals)
    approvals = approvals or {}
    for call_id in ids:
        decision = approvals[call_id]
        if not isinstance(decision, bool | str):
            raise _refused(
                ErrorCode.APPROVALS_INVALID,
                f"the decision for {call_id!r} is {type(decision).__name__}: give True, False "
                "or a reason (a string, which denies)",
            )


def resume(state: RunState, paused: PausedState) -> None:
    """Take up ``paused`` in ``state`` (built from its interaction): the receipts, warnings and
    corrections it had; check that every approved call can run here; spend the continuation;
    and queue the decided calls (``state.resumed``), answered as they are read."""
    state.receipts = list(paused.receipts)
    state.warnings = list(paused.warnings)
    state.corrections = paused.corrections
    approvals = state.options.approvals or {}
    calls = _paused_calls(state, paused)
    for request in paused.pending:
        if isinstance(request, ToolApprovalRequest) and approvals[request.call_id] is True:
            problem = state.problem(calls[request.call_id])
            if problem is not None:
                raise _refused(
                    ErrorCode.APPROVALS_INVALID,
                    f"approved call {request.call_id!r} cannot run here: tool "
                    f"{request.name!r}: {problem} (pass its implementation in tools=)",
                )
    try:
        state.options.seal.spend(paused)
    except ContinuationInvalid as invalid:
        raise _refused(
            ErrorCode.CONTINUATION_INVALID, f"the continuation is refused: {invalid}"
        ) from None
    state.resumed = _answered(state, paused, calls, approvals, state.options.tool_results or {})


def _paused_calls(state: RunState, paused: PausedState) -> dict[str, ToolCall]:
    """The paused turn's calls by id (its assistant message is the conversation's last)."""
    last = next(
        (message for message in reversed(state.messages) if message.role == "assistant"), None
    )
    calls = {} if last is None else {call.call_id: call for call in last.tool_calls or []}
    if any(request.call_id not in calls for request in paused.pending):
        raise _refused(
            ErrorCode.CONTINUATION_INVALID,
            "the continuation is refused: its pending calls are not its last turn's",
        )
    return calls


def _answered(
    state: RunState,
    paused: PausedState,
    calls: Mapping[str, ToolCall],
    approvals: Mapping[str, Decision],
    results: Mapping[str, ClientResult],
) -> Round:
    """Each pending call answered, in the calls' order: a client tool's with the result the
    caller gave, an approved one run (a tool that raises ends the run, ``TQX_TOOL_FAILED``,
    as in any round), a denied one told so."""
    for request in paused.pending:
        call = calls[request.call_id]
        if isinstance(request, ClientToolCall):
            result = results[request.call_id]
            if isinstance(result, ClientToolError):
                told = Message(role="tool", content=result.message, tool_call_id=call.call_id)
                _place(state.messages, told)
                yield ToolResult(call_id=call.call_id, name=call.name, error=result.message)
                continue
            text = tool_result_text(result)
            _place(state.messages, Message(role="tool", content=text, tool_call_id=call.call_id))
            yield ToolResult(call_id=call.call_id, name=call.name, output=result)
            continue
        decision = approvals[request.call_id]
        if decision is True:
            ran = yield from state.call_tool(call)
            if isinstance(ran, RunError):
                yield ToolResult(call_id=call.call_id, name=call.name, error=ran.message)
                raise ran
            text, output = ran
            _place(state.messages, Message(role="tool", content=text, tool_call_id=call.call_id))
            yield ToolResult(call_id=call.call_id, name=call.name, output=output)
            continue
        reason = decision if isinstance(decision, str) and decision.strip() else DENIED
        content = f"denied: tool {call.name!r} was not run: {reason}"
        _place(state.messages, Message(role="tool", content=content, tool_call_id=call.call_id))
        yield ToolResult(call_id=call.call_id, name=call.name, error=f"denied: {reason}")


def _place(messages: list[Message], answer: Message) -> None:
    """Put a tool message among the answers of the last assistant turn in its call's order,
    so the conversation is the one an unpaused round would have made."""
    turn = max(i for i, message in enumerate(messages) if message.role == "assistant")
    calls = messages[turn].tool_calls or []
    order = {call.call_id: index for index, call in enumerate(calls)}
    rank = order[answer.tool_call_id or ""]
    at = turn + 1
    while at < len(messages) and order.get(messages[at].tool_call_id or "", -1) < rank:
        at += 1
    messages.insert(at, answer)
