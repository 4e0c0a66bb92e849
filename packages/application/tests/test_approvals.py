"""A person in the loop (docs/runs.md, adr/0059): a call to a tool that needs approval pauses
the run; the sealed continuation alone resumes it, in any process with the key; approved calls
run exactly once, denied ones never, and every bad continuation or set of approvals is refused,
coded, with nothing run."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.application import (
    ContinuationSeal,
    MemoryContinuationLedger,
    RunError,
    RunResult,
    Tool,
    arun,
    arun_stream,
    astream_run,
    define_contract,
    run,
    run_stream,
)
from runport.contracts import ErrorCode, RunEvent, ToolApprovalRequest, ToolResult
from runport.mock import AsyncFunctionRuntime, FunctionRuntime

KEY = b"k" * 32
CONTRACT = define_contract("files", user="Tidy up {{ inputs.folder }}", inputs={"folder": str})
OTHER = define_contract("other", user="Tidy up {{ inputs.folder }}", inputs={"folder": str})


class Desk:
    """Tools that count how often each ran."""

    def __init__(self) -> None:
        self.ran: Counter[str] = Counter()

    def tools(self, **approval: Any) -> list[Tool]:
        def peek(path: str) -> str:
            """Read a file."""
            self.ran[f"peek {path}"] += 1
            return f"contents of {path}"

        def delete_file(path: str) -> str:
            """Delete a file."""
            self.ran[f"delete {path}"] += 1
            return f"deleted {path}"

        return [
            Tool.from_function(peek),
            Tool.from_function(delete_file, needs_approval=approval.get("needs_approval", True)),
        ]


def model(request: Any, emit: Any) -> None:
    messages = request.interaction.messages
    if messages[-1].role == "user":
        emit.tool_call("peek", {"path": "a"}, call_id="c0")
        emit.tool_call("delete_file", {"path": "a"}, call_id="c1")
        emit.tool_call("delete_file", {"path": "b"}, call_id="c2")
        emit.tool_call("peek", {"path": "b"}, call_id="c3")
    else:
        emit.text(" | ".join(m.content for m in messages if m.role == "tool"))


def paused_run(desk: Desk, seal: ContinuationSeal, **options: Any) -> RunResult:
    result = run(
        CONTRACT,
        FunctionRuntime(model),
        inputs={"folder": "tmp"},
        tools=desk.tools(**options),
        continuation_seal=seal,
    )
    assert result.status == "paused"
    return result


def test_a_call_that_needs_approval_pauses_the_run_after_the_others_ran() -> None:
    desk, events = Desk(), []
    result = run_stream(
        CONTRACT,
        FunctionRuntime(model),
        on_event=events.append,
        inputs={"folder": "tmp"},
        tools=desk.tools(),
        continuation_seal=ContinuationSeal(KEY),
    )
    assert result.status == "paused"
    assert result.output is None
    assert not result.output_schema_valid
    assert result.pending == (
        ToolApprovalRequest(call_id="c1", name="delete_file", arguments={"path": "a"}),
        ToolApprovalRequest(call_id="c2", name="delete_file", arguments={"path": "b"}),
    )
    assert desk.ran == Counter({"peek a": 1, "peek b": 1})
    between = [e for e in events if isinstance(e, ToolResult | ToolApprovalRequest)]
    assert [(e.kind, e.call_id) for e in between] == [
        ("ToolResult", "c0"),
        ("ToolResult", "c3"),
        ("ToolApprovalRequest", "c1"),
        ("ToolApprovalRequest", "c2"),
    ]
    assert len(result.receipts) == 1
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "tool"]
    assert result.continuation is not None
    assert result.continuation.startswith("rp1.")
    assert RunResult.model_validate_json(result.model_dump_json()) == result
    assert json.loads(result.model_dump_json())["pending"][0]["kind"] == "ToolApprovalRequest"
    assert (
        run(  # an unpaused run, for comparison
            CONTRACT, FunctionRuntime(model), inputs={"folder": "tmp"}, tools=Desk().tools()
        ).status
        == "paused"
    )


def test_resuming_runs_the_approved_calls_and_tells_the_model_of_the_denied_ones() -> None:
    desk, seal = Desk(), ContinuationSeal(KEY)
    paused = paused_run(desk, seal)
    runtime, events = FunctionRuntime(model), []
    done = run_stream(
        CONTRACT,
        runtime,
        on_event=events.append,
        tools=desk.tools(),
        continuation=paused.continuation,
        approvals={"c1": True, "c2": "keep b, it is the backup"},
        continuation_seal=seal,
    )
    assert done.status == "complete"
    assert done.pending == ()
    assert done.continuation is None
    assert desk.ran == Counter({"peek a": 1, "peek b": 1, "delete a": 1})
    assert done.output == (
        "contents of a | deleted a | denied: tool 'delete_file' was not run: keep b, it is the"
        " backup | contents of b"
    )
    # the model was not asked again for the paused turn: one request, the next turn's
    assert len(runtime.requests) == 1
    # the conversation goes on where it stopped: the contract's user message first
    assert [m.role for m in done.messages] == ["user", "assistant", *["tool"] * 4, "assistant"]
    assert [m.tool_call_id for m in done.messages[2:6]] == ["c0", "c1", "c2", "c3"]
    assert done.receipts[0] == paused.receipts[0]
    assert len(done.receipts) == 2
    shown = [e for e in events if isinstance(e, ToolResult)]
    assert [(e.call_id, e.error) for e in shown] == [
        ("c1", None),
        ("c2", "denied: keep b, it is the backup"),
    ]
    unpaused = run(
        CONTRACT,
        FunctionRuntime(model),
        inputs={"folder": "tmp"},
        tools=Desk().tools(needs_approval=False),
    )
    assert done.messages[:3] == unpaused.messages[:3]


def test_a_denial_without_a_reason_still_says_what_happened() -> None:
    desk, seal = Desk(), ContinuationSeal(KEY)
    paused = paused_run(desk, seal)
    done = run(
        CONTRACT,
        FunctionRuntime(model),
        tools=desk.tools(),
        continuation=paused.continuation,
        approvals={"c1": False, "c2": ""},
        continuation_seal=seal,
    )
    assert "delete a" not in desk.ran
    assert "delete b" not in desk.ran
    assert done.messages[3].content == (
        "denied: tool 'delete_file' was not run: a person denied this call"
    )


def test_a_predicate_asks_for_approval_only_where_it_says_so() -> None:
    desk, seal = Desk(), ContinuationSeal(KEY)
    paused = paused_run(desk, seal, needs_approval=lambda arguments: arguments["path"] == "b")
    assert [p.call_id for p in paused.pending] == ["c2"]
    assert desk.ran == Counter({"peek a": 1, "peek b": 1, "delete a": 1})


def test_a_predicate_that_raises_ends_the_run_before_anything_of_the_round_ran() -> None:
    desk = Desk()

    def broken(arguments: dict[str, Any]) -> bool:
        raise KeyError("nope")

    with pytest.raises(RunError) as raised:
        run(
            CONTRACT,
            FunctionRuntime(model),
            inputs={"folder": "tmp"},
            tools=desk.tools(needs_approval=broken),
        )
    assert (raised.value.stage, raised.value.code) == ("tool", ErrorCode.TOOL_FAILED)
    assert isinstance(raised.value.__cause__, KeyError)
    assert desk.ran == Counter()


def test_another_process_with_the_key_resumes_and_the_default_key_is_this_process_s() -> None:
    desk = Desk()
    paused = paused_run(desk, ContinuationSeal(KEY))
    elsewhere = ContinuationSeal(KEY, ledger=MemoryContinuationLedger())  # a restarted process
    done = run(
        CONTRACT,
        FunctionRuntime(model),
        tools=desk.tools(),
        continuation=paused.continuation,
        approvals={"c1": True, "c2": True},
        continuation_seal=elsewhere,
    )
    assert done.status == "complete"
    assert desk.ran["delete b"] == 1
    # without a seal the process's own random key seals, and opens, the continuation
    mine = run(CONTRACT, FunctionRuntime(model), inputs={"folder": "x"}, tools=desk.tools())
    again = run(
        CONTRACT,
        FunctionRuntime(model),
        tools=desk.tools(),
        continuation=mine.continuation,
        approvals={"c1": True, "c2": False},
    )
    assert again.status == "complete"
    with pytest.raises(RunError) as raised:
        run(
            CONTRACT,
            FunctionRuntime(model),
            tools=desk.tools(),
            continuation=mine.continuation,
            approvals={"c1": True, "c2": False},
            continuation_seal=ContinuationSeal(KEY),
        )
    assert raised.value.code == ErrorCode.CONTINUATION_INVALID


# -- every twin ------------------------------------------------------------------------------


def test_every_twin_pauses_and_resumes_as_run_does() -> None:
    asyncio.run(_every_twin())


async def _every_twin() -> None:
    async def amodel(request: Any, emit: Any) -> None:
        messages = request.interaction.messages
        if messages[-1].role == "user":
            for index, (name, path) in enumerate(
                [("peek", "a"), ("delete_file", "a"), ("delete_file", "b"), ("peek", "b")]
            ):
                await emit.tool_call(name, {"path": path}, call_id=f"c{index}")
        else:
            await emit.text(" | ".join(m.content for m in messages if m.role == "tool"))

    seal = ContinuationSeal(KEY)
    decisions = {"c1": True, "c2": "no"}

    def finished(desk: Desk, paused: RunResult) -> RunResult:
        return run(
            CONTRACT,
            FunctionRuntime(model),
            tools=desk.tools(),
            continuation=paused.continuation,
            approvals=decisions,
            continuation_seal=seal,
        )

    expected_desk = Desk()
    expected_paused = paused_run(expected_desk, seal)
    expected = finished(expected_desk, expected_paused)

    async def via_arun(desk: Desk, **resume: Any) -> RunResult:
        return await arun(CONTRACT, AsyncFunctionRuntime(amodel), tools=desk.tools(), **resume)

    async def via_arun_stream(desk: Desk, **resume: Any) -> RunResult:
        seen: list[RunEvent] = []
        return await arun_stream(
            CONTRACT,
            AsyncFunctionRuntime(amodel),
            on_event=seen.append,
            tools=desk.tools(),
            **resume,
        )

    async def via_astream_run(desk: Desk, **resume: Any) -> RunResult:
        async with astream_run(
            CONTRACT, AsyncFunctionRuntime(amodel), tools=desk.tools(), **resume
        ) as events:
            kinds = [event.kind async for event in events]
        if "continuation" not in resume:
            assert kinds[-2:] == ["ToolApprovalRequest", "ToolApprovalRequest"]
        return events.result

    for twin in (via_arun, via_arun_stream, via_astream_run):
        desk = Desk()
        paused = await twin(desk, inputs={"folder": "tmp"}, continuation_seal=seal)
        assert paused.status == "paused"
        assert paused.messages == expected_paused.messages
        assert paused.receipts == expected_paused.receipts
        done = await twin(
            desk,
            continuation=paused.continuation,
            approvals=decisions,
            continuation_seal=seal,
        )
        assert done == expected, twin.__name__
        assert desk.ran == expected_desk.ran


# -- bad input: coded, nothing run -----------------------------------------------------------


def _resume(desk: Desk, continuation: object, approvals: Any, seal: ContinuationSeal) -> None:
    run(
        CONTRACT,
        FunctionRuntime(model),
        tools=desk.tools(),
        continuation=continuation,  # type: ignore[typeddict-item]
        approvals=approvals,
        continuation_seal=seal,
    )


def _refused(
    code: str, desk: Desk, continuation: object, approvals: Any, seal: ContinuationSeal
) -> RunError:
    before = Counter(desk.ran)
    with pytest.raises(RunError) as raised:
        _resume(desk, continuation, approvals, seal)
    assert (raised.value.stage, raised.value.code) == ("input", code)
    assert raised.value.partial.receipts == ()
    assert raised.value.partial.messages == ()
    assert desk.ran == before  # nothing run
    return raised.value


def _flip(token: str, at: int) -> str:
    swapped = "A" if token[at] != "A" else "B"
    return token[:at] + swapped + token[at + 1 :]


def test_a_forged_foreign_expired_replayed_or_misdirected_continuation_is_refused() -> None:
    desk, now = Desk(), [1_000.0]
    seal = ContinuationSeal(KEY, ttl=60, clock=lambda: now[0])
    both = {"c1": True, "c2": True}
    token = paused_run(desk, seal).continuation
    assert token is not None
    invalid = ErrorCode.CONTINUATION_INVALID
    body_start = token.index(".") + 1
    assert (
        "seal does not match"
        in _refused(invalid, desk, _flip(token, body_start + 10), both, seal).message
    )
    assert "seal does not match" in _refused(invalid, desk, _flip(token, -3), both, seal).message
    for junk in ("", "rp1", "rp1.x.y", "rp2" + token[3:], token + "=", token.replace(".", "..")):
        _refused(invalid, desk, junk, both, seal)
    _refused(invalid, desk, 42, both, seal)
    foreign = ContinuationSeal(b"f" * 32, clock=lambda: now[0])
    _refused(invalid, desk, token, both, foreign)
    with pytest.raises(RunError) as other:
        run(
            OTHER,
            FunctionRuntime(model),
            tools=desk.tools(),
            continuation=token,
            approvals=both,
            continuation_seal=seal,
        )
    assert other.value.code == invalid
    assert "minted for contract 'files'" in other.value.message
    now[0] += 60
    assert "expired" in _refused(invalid, desk, token, both, seal).message
    now[0] -= 1  # still good: the refusals above spent nothing
    _resume(desk, token, both, seal)
    assert desk.ran["delete a"] == desk.ran["delete b"] == 1
    assert "already resumed" in _refused(invalid, desk, token, both, seal).message
    assert desk.ran["delete a"] == desk.ran["delete b"] == 1


def test_approvals_that_do_not_answer_the_pending_calls_are_refused_and_spend_nothing() -> None:
    desk, seal = Desk(), ContinuationSeal(KEY)
    token = paused_run(desk, seal).continuation
    code = ErrorCode.APPROVALS_INVALID
    assert (
        "not pending: 'c0'"
        in _refused(code, desk, token, {"c0": True, "c1": True, "c2": True}, seal).message
    )
    assert "without a decision: 'c2'" in _refused(code, desk, token, {"c1": True}, seal).message
    assert "without a decision: 'c1', 'c2'" in _refused(code, desk, token, None, seal).message
    _refused(code, desk, token, {"c1": 1, "c2": True}, seal)
    _refused(code, desk, token, [("c1", True)], seal)
    with pytest.raises(RunError) as stray:
        run(
            CONTRACT,
            FunctionRuntime(model),
            inputs={"folder": "tmp"},
            tools=desk.tools(),
            approvals={"c1": True},
        )
    assert (stray.value.code, desk.ran["delete a"]) == (code, 0)
    # an approved call whose tool this run was not given cannot run: refused, nothing spent
    with pytest.raises(RunError) as unarmed:
        run(
            CONTRACT,
            FunctionRuntime(model),
            tools=desk.tools()[:1],
            continuation=token,
            approvals={"c1": True, "c2": False},
            continuation_seal=seal,
        )
    assert unarmed.value.code == code
    assert "tools=" in unarmed.value.message
    _resume(desk, token, {"c1": True, "c2": False}, seal)
    assert desk.ran["delete a"] == 1
    assert desk.ran["delete b"] == 0


def test_a_resumed_run_takes_no_inputs_context_or_history() -> None:
    desk, seal = Desk(), ContinuationSeal(KEY)
    token = paused_run(desk, seal).continuation
    with pytest.raises(TypeError, match="inputs cannot be given with continuation="):
        run(
            CONTRACT,
            FunctionRuntime(model),
            inputs={"folder": "tmp"},
            tools=desk.tools(),
            continuation=token,
            approvals={"c1": True, "c2": True},
            continuation_seal=seal,
        )
    assert desk.ran["delete a"] == 0


def test_a_seal_refuses_a_short_key_and_never_shows_its_key() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        ContinuationSeal(b"short")
    with pytest.raises(TypeError):
        ContinuationSeal("k" * 32)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ttl"):
        ContinuationSeal(KEY, ttl=0)
    assert "k" * 8 not in repr(ContinuationSeal(KEY))
    with pytest.raises(TypeError, match="continuation_seal"):
        run(CONTRACT, FunctionRuntime(model), inputs={"folder": "x"}, continuation_seal=KEY)  # type: ignore[typeddict-item]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_changed_continuation_is_refused(data: st.DataObject) -> None:
    desk, seal = Desk(), ContinuationSeal(KEY, clock=lambda: 1_000.0)  # tokens of one length
    token = paused_run(desk, seal).continuation
    assert token is not None
    at = data.draw(st.integers(0, len(token) - 1))
    replacement = data.draw(
        st.sampled_from("ABCXYZabcxyz0189-_.=+/").filter(lambda c: c != token[at])
    )
    _refused(
        ErrorCode.CONTINUATION_INVALID,
        desk,
        token[:at] + replacement + token[at + 1 :],
        {"c1": True, "c2": True},
        seal,
    )


# -- the property: where the pause falls -----------------------------------------------------

Decision = bool | str
STEP_TOOLS = ("safe", "guarded", "maybe")


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[list[str]], dict[str, Decision]]:
    """Model turns, each a list of tool names called, and a person's decision per call."""
    steps = draw(
        st.lists(st.lists(st.sampled_from(STEP_TOOLS), min_size=1, max_size=3), max_size=3)
    )
    decisions: dict[str, Decision] = {}
    for turn, names in enumerate(steps):
        for index in range(len(names)):
            decisions[f"t{turn}c{index}"] = draw(
                st.one_of(st.booleans(), st.sampled_from(["", "not now", "too risky"]))
            )
    return steps, decisions


def _needs(name: str, n: int) -> bool:
    return name == "guarded" or (name == "maybe" and n % 2 == 0)


def _scripted(steps: list[list[str]]) -> Callable[[Any, Any], None]:
    def handler(request: Any, emit: Any) -> None:
        messages = request.interaction.messages
        turn = sum(1 for message in messages if message.role == "assistant")
        if turn < len(steps):
            for index, name in enumerate(steps[turn]):
                tag = f"t{turn}c{index}"
                emit.tool_call(name, {"tag": tag, "n": turn + index}, call_id=tag)
            emit.usage(input_tokens=3 + turn, output_tokens=1)
        else:
            emit.text("answer: " + " | ".join(m.content for m in messages if m.role == "tool"))
            emit.usage(input_tokens=7, output_tokens=2)

    return handler


def _tools(ran: Counter[str], answer: Callable[[str, str, int], str], gated: bool) -> list[Tool]:
    def make(name: str) -> Tool:
        def tool(tag: str, n: int) -> str:
            return answer(name, tag, n)

        rule: Any = (lambda a: _needs(name, a["n"])) if gated else False
        return Tool(
            name=name,
            description=f"the {name} tool",
            parameters={
                "type": "object",
                "properties": {"tag": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["tag", "n"],
                "additionalProperties": False,
            },
            function=tool,
            needs_approval=rule,
        )

    return [make(name) for name in STEP_TOOLS]


@settings(max_examples=60, deadline=None)
@given(plan=runs(), streamed=st.booleans())
def test_approved_calls_run_exactly_once_and_the_result_is_an_unpaused_run_s(
    plan: tuple[list[list[str]], dict[str, Decision]], streamed: bool
) -> None:
    steps, decisions = plan
    ran: Counter[str] = Counter()

    def real(name: str, tag: str, n: int) -> str:
        ran[tag] += 1
        return f"{name} ran {tag}"

    handler = _scripted(steps)
    tools = _tools(ran, real, gated=True)

    def once(**options: Any) -> RunResult:
        if streamed:
            seen: list[RunEvent] = []
            return run_stream(
                CONTRACT, FunctionRuntime(handler), on_event=seen.append, tools=tools, **options
            )
        return run(CONTRACT, FunctionRuntime(handler), tools=tools, **options)

    result = once(inputs={"folder": "tmp"}, continuation_seal=ContinuationSeal(KEY))
    pauses = 0
    while result.status == "paused":
        pauses += 1
        answers = {p.call_id: decisions[p.call_id] for p in result.pending}
        # each resume in a "new process": a fresh seal with the same key
        result = once(
            continuation=result.continuation,
            approvals=answers,
            continuation_seal=ContinuationSeal(KEY),
        )
    expected_pauses = sum(
        any(_needs(name, turn + index) for index, name in enumerate(names))
        for turn, names in enumerate(steps)
    )
    assert pauses == expected_pauses
    for turn, names in enumerate(steps):
        for index, name in enumerate(names):
            tag = f"t{turn}c{index}"
            approved = not _needs(name, turn + index) or decisions[tag] is True
            assert ran[tag] == (1 if approved else 0), tag

    # the same decisions, unpaused: a denied call's tool answers with the denial's words
    def decided(name: str, tag: str, n: int) -> str:
        if not _needs(name, n) or decisions[tag] is True:
            return f"{name} ran {tag}"
        reason = decisions[tag] if isinstance(decisions[tag], str) and decisions[tag] else None
        return f"denied: tool {name!r} was not run: {reason or 'a person denied this call'}"

    reference = run(
        CONTRACT,
        FunctionRuntime(handler),
        inputs={"folder": "tmp"},
        tools=_tools(Counter(), decided, gated=False),
    )
    assert result.status == "complete"
    assert result.output == reference.output
    assert result.messages == reference.messages
    assert result.receipts == reference.receipts
    assert result.usage == reference.usage
    assert result == reference
