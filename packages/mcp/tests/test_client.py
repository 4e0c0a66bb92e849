"""``mcp_tools`` against real MCP server processes (``tools_server.py``, the official SDK's
low-level server), over stdio and streamable HTTP. runport-mcp may not depend on the mock, so
the model here is a small runtime of its own that makes the calls it is given."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from runport.application import RunError, arun_stream, run, run_stream, to_async
from runport.contracts import (
    AdapterDescriptor,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    RunEvent,
    ToolCall,
    ToolProgress,
    ToolResult,
)
from runport.core import build_receipt
from runport.mcp import McpToolset, mcp_tools
from runport.mcp._client import model_name, server_parameters
from runport.ports import PortError, RuntimeAdapter

SERVER = str(Path(__file__).with_name("tools_server.py"))
CONTRACT = Path(__file__).with_name("contracts") / "echo.yaml"
INPUTS = {"topic": "rivers"}
DESCRIPTOR = AdapterDescriptor(
    id="test-calls", version="1.0.0", capabilities=["text", "tool_calls", "streaming"]
)


class Calls(RuntimeAdapter):
    """A model that makes ``calls`` in its first turn, then answers with what its tools said
    (the tool messages' contents, joined by ``|``). ``turns`` counts the turns it was asked."""

    def __init__(self, *calls: tuple[str, dict[str, object]]) -> None:
        self.calls = [
            ToolCall(call_id=f"call_{i}", name=name, arguments=dict(arguments))
            for i, (name, arguments) in enumerate(calls)
        ]
        self.turns = 0

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        self.turns += 1
        messages = request.interaction.messages
        if not any(message.role == "tool" for message in messages):
            return build_receipt(
                request, adapter=DESCRIPTOR, tool_calls=self.calls, finish_reason="tool_calls"
            )
        said = [str(message.content) for message in messages if message.role == "tool"]
        return build_receipt(request, adapter=DESCRIPTOR, text="|".join(said), finish_reason="stop")

    def execute_streaming(self, request: ExecutionRequest, sink: object) -> ExecutionReceipt:
        return self.execute(request)


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "notes.log"


@pytest.fixture(scope="module")
def stdio_tools(log: Path) -> Iterator[McpToolset]:
    """One stdio server process for the module, its tools listed once."""
    with mcp_tools(
        [sys.executable, SERVER, "--log", str(log)],
        env={"RUNPORT_MCP_TEST": "given"},
        cwd=log.parent,
    ) as tools:
        yield tools


def _http_server(*args: str) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, SERVER, "--http", *args], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture(scope="module")
def http_url(log: Path) -> Iterator[str]:
    """A streamable-HTTP server process for the module; each test connects to it anew."""
    yield from _http_server("--log", str(log))


@pytest.fixture(scope="module")
def crowded_url() -> Iterator[str]:
    """A streamable-HTTP server that lists 10,000 tools."""
    yield from _http_server("--tools", "10000")


def _notes(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_the_servers_tools_are_listed_with_their_schemas(stdio_tools: McpToolset) -> None:
    assert [tool.name for tool in stdio_tools] == [
        "add",
        "shout",
        "oops",
        "count",
        "record",
        "files_read",
        "where",
        "die",
    ]
    add = stdio_tools[0]
    assert add.description == "Add two integers."
    assert add.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert add.spec().parameters == dict(add.parameters)


def test_a_name_no_provider_takes_is_offered_mended_and_called_as_the_server_names_it(
    stdio_tools: McpToolset,
) -> None:
    model = Calls(("files_read", {}))
    result = run(CONTRACT, model, inputs=INPUTS, tools=stdio_tools)
    assert result.output == "read by its own name"
    assert model_name("a.b/c d" + "x" * 70) == "a_b_c_d" + "x" * 57


def test_a_stdio_server_gets_the_environment_and_folder_given_and_no_more(
    stdio_tools: McpToolset, log: Path
) -> None:
    assert stdio_tools.call("where", {"variable": "RUNPORT_MCP_TEST"}) == (
        f"given in {log.parent.name}"
    )
    # pytest set this variable in this process's environment before the server started
    assert stdio_tools.call("where", {"variable": "PYTEST_CURRENT_TEST"}).startswith("unset")
    with pytest.raises(ValueError, match="env= and cwd= are for a server started"):
        mcp_tools("http://127.0.0.1:9/mcp", env={"A": "b"})


def test_a_run_calls_the_servers_tools(stdio_tools: McpToolset) -> None:
    model = Calls(("add", {"a": 2, "b": 3}), ("shout", {"text": "hi"}), ("oops", {}))
    events: list[RunEvent] = []
    result = run_stream(CONTRACT, model, inputs=INPUTS, tools=stdio_tools, on_event=events.append)
    shown = [event for event in events if isinstance(event, ToolResult)]
    # the structured result as it is, text as text, an error result for the model to read
    assert [event.output for event in shown] == [
        {"sum": 5},
        "HI",
        "error: the oops tool always fails",
    ]
    assert result.output == '{"sum":5}|HI|error: the oops tool always fails'


def test_the_servers_progress_is_the_runs_tool_progress(stdio_tools: McpToolset) -> None:
    model = Calls(("count", {"n": 3}))
    events: list[RunEvent] = []
    result = run_stream(CONTRACT, model, inputs=INPUTS, tools=stdio_tools, on_event=events.append)
    progress = [event.data for event in events if isinstance(event, ToolProgress)]
    assert progress == [
        {"progress": 1.0, "total": 3.0, "message": "step 1"},
        {"progress": 2.0, "total": 3.0, "message": "step 2"},
        {"progress": 3.0, "total": 3.0, "message": "step 3"},
    ]
    assert result.output == "counted to 3"
    assert stdio_tools.call("count", {"n": 2}) == "counted to 2"


class Ticks:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_the_deadline_cancels_a_call_between_progress_and_the_connection_goes_on(
    stdio_tools: McpToolset,
) -> None:
    events: list[RunEvent] = []
    with pytest.raises(RunError) as raised:
        run_stream(
            CONTRACT,
            Calls(("count", {"n": 500})),
            inputs=INPUTS,
            tools=stdio_tools,
            on_event=events.append,
            deadline=5,
            clock=Ticks(),
        )
    assert raised.value.code == ErrorCode.RUN_DEADLINE
    assert raised.value.stage == "tool"
    assert len([event for event in events if isinstance(event, ToolProgress)]) == 2
    assert stdio_tools.call("add", {"a": 1, "b": 2}) == {"sum": 3}


def test_on_an_event_loop_the_call_is_awaited_with_the_same_progress(
    stdio_tools: McpToolset,
) -> None:
    async def streamed() -> tuple[list[RunEvent], object]:
        events: list[RunEvent] = []
        result = await arun_stream(
            CONTRACT,
            to_async(Calls(("count", {"n": 2}), ("shout", {"text": "loop"}))),
            inputs=INPUTS,
            tools=stdio_tools,
            on_event=events.append,
        )
        return events, result.output

    events, output = asyncio.run(streamed())
    assert [event.data for event in events if isinstance(event, ToolProgress)] == [
        {"progress": 1.0, "total": 2.0, "message": "step 1"},
        {"progress": 2.0, "total": 2.0, "message": "step 2"},
    ]
    assert output == "counted to 2|LOOP"


def test_arguments_the_schema_refuses_are_never_sent(stdio_tools: McpToolset, log: Path) -> None:
    before = _notes(log)
    model = Calls(("record", {"text": "no note"}), ("shout", {"text": "x" * 101}))
    events: list[RunEvent] = []
    run_stream(CONTRACT, model, inputs=INPUTS, tools=stdio_tools, on_event=events.append)
    errors = [event.error for event in events if isinstance(event, ToolResult)]
    assert errors[0] is not None
    assert "note" in errors[0]
    assert errors[1] is not None
    assert "invalid arguments" in errors[1]
    assert _notes(log) == before


def test_a_name_two_tools_share_is_refused_before_anything_runs(
    stdio_tools: McpToolset, log: Path
) -> None:
    def record(note: str) -> str:
        """A local tool under the server's tool's name."""
        return note

    before = _notes(log)
    model = Calls(("record", {"note": "which one?"}))
    with pytest.raises(RunError) as raised:
        run(CONTRACT, model, inputs=INPUTS, tools=[*stdio_tools, record])
    assert raised.value.code == ErrorCode.TOOL_NAME_CLASH
    assert raised.value.stage == "input"
    assert "'record'" in raised.value.message
    assert model.turns == 0
    assert _notes(log) == before


def test_streamable_http_with_a_prefix_beside_the_stdio_server_and_a_closed_set(
    stdio_tools: McpToolset, http_url: str
) -> None:
    with mcp_tools(http_url, include=["add"], prefix="remote_") as remote:
        assert [tool.name for tool in remote] == ["remote_add"]
        assert remote[0].parameters == stdio_tools[0].parameters
        model = Calls(("remote_add", {"a": 40, "b": 2}), ("add", {"a": 1, "b": 1}))
        result = run(CONTRACT, model, inputs=INPUTS, tools=[*stdio_tools, *remote])
    assert result.output == '{"sum":42}|{"sum":2}'
    with pytest.raises(PortError) as raised:
        remote.call("add", {"a": 1, "b": 1})
    assert raised.value.code == ErrorCode.MCP_SERVER_FAILED
    with pytest.raises(PortError) as missing:
        mcp_tools(http_url, include=["add", "tool_10000"])
    assert missing.value.code == ErrorCode.MCP_SERVER_FAILED
    assert "no tool 'tool_10000'" in missing.value.message


def test_a_call_that_needs_approval_pauses_and_runs_once_when_approved(
    http_url: str, log: Path
) -> None:
    with mcp_tools(http_url, include=["record", "add"], needs_approval={"record"}) as tools:
        assert [tool.needs_approval for tool in tools] == [False, True]
        before = _notes(log)
        paused = run(
            CONTRACT, Calls(("record", {"note": "approved once"})), inputs=INPUTS, tools=tools
        )
        assert paused.status == "paused"
        assert [request.name for request in paused.pending] == ["record"]
        assert _notes(log) == before
        resumed = run(
            CONTRACT,
            Calls(),
            tools=tools,
            continuation=paused.continuation,
            approvals={"call_0": True},
        )
        assert resumed.output == "noted"
        with pytest.raises(RunError) as replayed:
            run(
                CONTRACT,
                Calls(),
                tools=tools,
                continuation=paused.continuation,
                approvals={"call_0": True},
            )
        assert replayed.value.code == ErrorCode.CONTINUATION_INVALID
    assert _notes(log) == [*before, "approved once"]


def test_a_listing_of_ten_thousand_tools_is_refused_unless_some_are_picked(
    crowded_url: str,
) -> None:
    with pytest.raises(PortError) as raised:
        mcp_tools(crowded_url)
    assert raised.value.code == ErrorCode.MCP_TOO_MANY_TOOLS
    assert "max_tools=128" in raised.value.message
    # tool_2500 is on the listing's third page: read by its cursor
    with mcp_tools(crowded_url, include={"tool_2500", "tool_7"}) as picked:
        assert sorted(tool.name for tool in picked) == ["tool_2500", "tool_7"]
        assert picked.call("tool_2500", {}) == "tool_2500"
    with pytest.raises(PortError) as clash:  # tool.7 is tool_7 to a model
        mcp_tools(crowded_url, include={"tool.7", "tool_7"})
    assert clash.value.code == ErrorCode.TOOL_NAME_CLASH


def test_a_server_that_dies_mid_call_fails_the_run_coded_and_nothing_runs_twice(
    tmp_path: Path,
) -> None:
    log = tmp_path / "dying.log"
    with mcp_tools([sys.executable, SERVER, "--log", str(log)], include=["die"]) as tools:
        model = Calls(("die", {"note": "once"}))
        with pytest.raises(RunError) as raised:
            run(CONTRACT, model, inputs=INPUTS, tools=tools)
        assert raised.value.code == ErrorCode.TOOL_FAILED
        assert raised.value.stage == "tool"
        cause = raised.value.__cause__
        assert isinstance(cause, PortError)
        assert cause.code == ErrorCode.MCP_SERVER_FAILED
        assert "not sent again" in cause.message
        assert ErrorCode.MCP_SERVER_FAILED in raised.value.message
        with pytest.raises(PortError) as again:  # the dead connection refuses, coded
            tools.call("die", {"note": "twice"})
        assert again.value.code == ErrorCode.MCP_SERVER_FAILED
    assert _notes(log) == ["once"]
    assert model.turns == 1


def test_a_server_that_does_not_start_is_coded() -> None:
    with pytest.raises(PortError) as raised:
        mcp_tools([sys.executable, "-c", "raise SystemExit(3)"], timeout=60)
    assert raised.value.code == ErrorCode.MCP_SERVER_FAILED


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ("https://tools.example/mcp", "https://tools.example/mcp"),
        (" http://127.0.0.1:9/mcp ", "http://127.0.0.1:9/mcp"),
        ("npx -y '@scope/server' --root 'a b'", ["npx", "-y", "@scope/server", "--root", "a b"]),
        (["uvx", "some-server"], ["uvx", "some-server"]),
    ],
)
def test_a_server_is_a_url_or_a_command_line(
    server: str | Sequence[str], expected: str | list[str]
) -> None:
    parameters = server_parameters(server)
    if isinstance(expected, str):
        assert parameters == expected
    else:
        assert not isinstance(parameters, str)
        assert [parameters.command, *parameters.args] == expected


@pytest.mark.parametrize("server", ["", "   ", []])
def test_an_empty_server_is_refused(server: str | Sequence[str]) -> None:
    with pytest.raises(ValueError, match="command line or an http"):
        server_parameters(server)


def test_the_application_offers_the_same_client_by_its_own_name(http_url: str) -> None:
    """``runport.application.mcp_tools`` finds this package's client through the
    ``runport.tool_sources`` entry point: the same tools, called the same way."""
    from runport.application import mcp_tools as offered

    with offered(http_url, include=["add"]) as tools, mcp_tools(http_url, include=["add"]) as own:
        assert isinstance(tools, McpToolset)
        assert [tool.spec() for tool in tools] == [tool.spec() for tool in own]
