"""Client tools (docs/runs.md, "Client tools"; adr/0059): a tool the caller only declares
(``Tool.client``) pauses the run at a call to it with a ``ClientToolCall`` pending; the sealed
continuation and the caller's result resume it, and the conversation is the one a server-run
tool would have made. Every bad set of results is refused, coded, with nothing run twice."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.application import (
    ClientToolError,
    ContinuationSeal,
    MemoryContinuationLedger,
    RunError,
    RunResult,
    Tool,
    define_contract,
    run,
    run_stream,
)
from runport.contracts import ClientToolCall, ErrorCode, RunEvent, ToolApprovalRequest, ToolResult
from runport.mock import FunctionRuntime

KEY = b"c" * 32
CONTRACT = define_contract("where", user="Where is {{ inputs.who }}?", inputs={"who": str})
LOCATE = {
    "type": "object",
    "properties": {"who": {"type": "string"}},
    "required": ["who"],
    "additionalProperties": False,
}


def located(who: str) -> dict[str, str]:
    return {"who": who, "city": f"city of {who}"}


class Desk:
    """The tools, counting how often the server-side ones ran."""

    def __init__(self) -> None:
        self.ran: Counter[str] = Counter()

    def tools(self, on_client: bool = True) -> list[Tool]:
        """The tools, ``locate`` a client tool, or (``on_client=False``) one the server runs
        under the very same declaration."""

        def locate(who: str) -> dict[str, str]:
            self.ran[f"locate {who}"] += 1
            return located(who)

        def weather(city: str) -> str:
            """The weather in a city."""
            self.ran[f"weather {city}"] += 1
            return f"sunny in {city}"

        def forget(who: str) -> str:
            """Forget a person."""
            self.ran[f"forget {who}"] += 1
            return f"forgot {who}"

        client = Tool.client("locate", "Where a person is (the browser knows).", LOCATE)
        return [
            client if on_client else Tool(client.name, client.description, LOCATE, locate),
            Tool.from_function(weather),
            Tool.from_function(forget, needs_approval=True),
        ]


def scripted(calls: list[tuple[str, str, dict[str, Any]]]) -> FunctionRuntime:
    """A model that makes ``calls`` (name, id, arguments) in its first turn, then says what
    every tool message told it."""

    def model(request: Any, emit: Any) -> None:
        messages = request.interaction.messages
        if messages[-1].role == "user":
            for name, call_id, arguments in calls:
                emit.tool_call(name, arguments, call_id=call_id)
        else:
            emit.text(" | ".join(m.content for m in messages if m.role == "tool"))

    return FunctionRuntime(model)


ONE = [("locate", "c0", {"who": "ada"})]
MIXED = [
    ("weather", "c0", {"city": "Oslo"}),
    ("locate", "c1", {"who": "ada"}),
    ("forget", "c2", {"who": "bob"}),
    ("locate", "c3", {"who": "cy"}),
]


def paused(
    desk: Desk, calls: list[tuple[str, str, dict[str, Any]]], seal: ContinuationSeal
) -> tuple[RunResult, list[RunEvent]]:
    events: list[RunEvent] = []
    result = run_stream(
        CONTRACT,
        scripted(calls),
        inputs={"who": "ada"},
        tools=desk.tools(),
        continuation_seal=seal,
        on_event=events.append,
    )
    return result, events


def test_a_call_to_a_client_tool_pauses_the_run_and_its_result_resumes_it() -> None:
    desk, seal = Desk(), ContinuationSeal(KEY)
    result, events = paused(desk, ONE, seal)
    assert result.status == "paused"
    assert result.output is None
    assert result.pending == (
        ClientToolCall(call_id="c0", name="locate", arguments={"who": "ada"}),
    )
    assert [e for e in events if isinstance(e, ClientToolCall)] == list(result.pending)
    assert not [e for e in events if isinstance(e, ToolResult)]  # nothing answered the call
    assert RunResult.model_validate_json(result.model_dump_json()) == result  # kinds kept
    resumed = run(
        CONTRACT,
        scripted(ONE),
        tools=desk.tools(),
        continuation=result.continuation,
        tool_results={"c0": located("ada")},
        continuation_seal=seal,
    )
    whole = run(CONTRACT, scripted(ONE), inputs={"who": "ada"}, tools=desk.tools(False))
    assert resumed.status == "complete"
    assert resumed.output == whole.output == '{"city":"city of ada","who":"ada"}'
    assert resumed.messages == whole.messages


def test_a_client_tool_that_failed_tells_the_model_its_error_and_shows_it() -> None:
    desk, seal = Desk(), ContinuationSeal(KEY)
    result, _ = paused(desk, ONE, seal)
    events: list[RunEvent] = []
    resumed = run_stream(
        CONTRACT,
        scripted(ONE),
        tools=desk.tools(),
        continuation=result.continuation,
        tool_results={"c0": ClientToolError("the user blocked location access")},
        continuation_seal=seal,
        on_event=events.append,
    )
    assert resumed.status == "complete"
    assert resumed.output == "the user blocked location access"  # what the model was told
    (shown,) = [e for e in events if isinstance(e, ToolResult)]
    assert shown == ToolResult(
        call_id="c0", name="locate", error="the user blocked location access"
    )
    assert shown.output is None


def test_client_calls_approvals_and_server_tools_share_one_pause() -> None:
    desk, seal = Desk(), ContinuationSeal(KEY)
    result, _ = paused(desk, MIXED, seal)
    assert [(type(p), p.call_id) for p in result.pending] == [
        (ClientToolCall, "c1"),
        (ToolApprovalRequest, "c2"),
        (ClientToolCall, "c3"),
    ]
    assert desk.ran == Counter({"weather Oslo": 1})  # the server's own call ran at once
    events: list[RunEvent] = []
    resumed = run_stream(
        CONTRACT,
        scripted(MIXED),
        tools=desk.tools(),
        continuation=result.continuation,
        approvals={"c2": True},
        tool_results={"c3": "in cy's city", "c1": located("ada")},
        continuation_seal=seal,
        on_event=events.append,
    )
    answered = [(e.call_id, e.output) for e in events if isinstance(e, ToolResult)]
    assert answered == [("c1", located("ada")), ("c2", "forgot bob"), ("c3", "in cy's city")]
    assert resumed.output == (
        'sunny in Oslo | {"city":"city of ada","who":"ada"} | forgot bob | in cy\'s city'
    )
    assert desk.ran == Counter({"weather Oslo": 1, "forget bob": 1})


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("a result for a call never made", {"tool_results": {"c1": "x", "c3": "y", "zz": 1}}, "'zz'"),
    (
        "a result for a call pending for approval",
        {"tool_results": {"c1": "x", "c2": "y", "c3": "z"}},
        "'c2'",
    ),
    (
        "a result for a call already answered",
        {"tool_results": {"c0": "x", "c1": "y", "c3": 3}},
        "'c0'",
    ),
    ("a missing result", {"tool_results": {"c1": "x"}}, "without a result: 'c3'"),
    ("no results at all", {"tool_results": None}, "without a result: 'c1', 'c3'"),
    ("results that are not a mapping", {"tool_results": ["x"]}, "must map call ids"),
    ("a result that is not JSON", {"tool_results": {"c1": "x", "c3": {1, 2}}}, "not a JSON value"),
    ("an approval for a client call", {"approvals": {"c1": True, "c2": True}}, "'c1'"),
    (
        "a client error without a message",
        {"tool_results": {"c1": "x", "c3": ClientToolError("  ")}},
        "the error for 'c3' needs a message",
    ),
]


@pytest.mark.parametrize(("case", "answers", "says"), BAD, ids=[case for case, _, _ in BAD])
def test_bad_results_are_refused_with_nothing_run_and_the_continuation_kept(
    case: str, answers: dict[str, Any], says: str
) -> None:
    desk, seal = Desk(), ContinuationSeal(KEY)
    result, _ = paused(desk, MIXED, seal)
    given_answers = {"approvals": {"c2": True}, "tool_results": {"c1": "x", "c3": "y"}} | answers
    with pytest.raises(RunError) as refused:
        run(
            CONTRACT,
            scripted(MIXED),
            tools=desk.tools(),
            continuation=result.continuation,
            continuation_seal=seal,
            **given_answers,
        )
    assert refused.value.code == ErrorCode.APPROVALS_INVALID, case
    assert says in refused.value.message
    assert desk.ran == Counter({"weather Oslo": 1})
    fixed = run(  # a refusal spends nothing: the same continuation resumes once fixed
        CONTRACT,
        scripted(MIXED),
        tools=desk.tools(),
        continuation=result.continuation,
        continuation_seal=seal,
        approvals={"c2": True},
        tool_results={"c1": "x", "c3": "y"},
    )
    assert fixed.status == "complete"
    assert desk.ran == Counter({"weather Oslo": 1, "forget bob": 1})


def test_a_replayed_continuation_and_stray_results_are_refused() -> None:
    desk, seal = Desk(), ContinuationSeal(KEY, ledger=MemoryContinuationLedger())
    result, _ = paused(desk, MIXED, seal)
    answers: dict[str, Any] = {"approvals": {"c2": True}, "tool_results": {"c1": 1, "c3": 3}}
    run(
        CONTRACT,
        scripted(MIXED),
        tools=desk.tools(),
        continuation=result.continuation,
        continuation_seal=seal,
        **answers,
    )
    with pytest.raises(RunError) as replayed:
        run(
            CONTRACT,
            scripted(MIXED),
            tools=desk.tools(),
            continuation=result.continuation,
            continuation_seal=seal,
            **answers,
        )
    assert replayed.value.code == ErrorCode.CONTINUATION_INVALID
    with pytest.raises(RunError) as stray:
        run(CONTRACT, scripted(MIXED), inputs={"who": "a"}, tool_results={"c1": 1})
    assert stray.value.code == ErrorCode.APPROVALS_INVALID
    assert desk.ran == Counter({"weather Oslo": 1, "forget bob": 1})


def test_a_client_tool_is_declared_not_run() -> None:
    tool = Tool.client("locate", "Where a person is.", LOCATE)
    assert tool.on_client
    assert tool.spec().parameters == LOCATE
    assert Tool.client("ping").spec().parameters == {"type": "object", "properties": {}}
    with pytest.raises(RuntimeError, match="run by the caller"):
        tool.call({"who": "ada"})
    with pytest.raises(ValueError, match="non-empty"):
        Tool.client("")


@settings(deadline=None, max_examples=25)
@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from(["ada", "bob", "cy"])), min_size=1, max_size=4
    )
)
def test_resuming_with_the_client_results_equals_running_the_tool_on_the_server(
    turn: list[tuple[bool, str]],
) -> None:
    """Wherever the client calls fall among the turn's calls, the resumed run's answer and
    conversation are the unpaused run's, and every server-side call ran exactly once."""
    calls = [
        ("locate" if client else "weather", f"c{i}", {"who": who} if client else {"city": who})
        for i, (client, who) in enumerate(turn)
    ]
    whole_desk, desk, seal = Desk(), Desk(), ContinuationSeal(KEY)
    whole = run(CONTRACT, scripted(calls), inputs={"who": "x"}, tools=whole_desk.tools(False))
    result = run(
        CONTRACT, scripted(calls), inputs={"who": "x"}, tools=desk.tools(), continuation_seal=seal
    )
    clients = {call_id: located(args["who"]) for name, call_id, args in calls if name == "locate"}
    if not clients:
        assert result == whole
        return
    assert [p.call_id for p in result.pending] == list(clients)
    resumed = run(
        CONTRACT,
        scripted(calls),
        tools=desk.tools(),
        continuation=result.continuation,
        tool_results=clients,
        continuation_seal=seal,
    )
    assert isinstance(resumed, RunResult)
    assert (resumed.output, resumed.messages) == (whole.output, whole.messages)
    served = Counter(f"weather {args['city']}" for name, _, args in calls if name == "weather")
    assert desk.ran == served  # each server-side call ran once; the client's never here
