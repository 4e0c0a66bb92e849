"""``runport mcp`` end to end: a real subprocess driven by the MCP SDK's own stdio client.

Every server message is recorded in arrival order by a tap between the stdio transport and
the client, so "progress before the result" is checked on the wire, not on callbacks (which
the SDK runs as separate tasks).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, JSONRPCNotification, JSONRPCResponse, TextContent, Tool
from pydantic import TypeAdapter

from runport.application import execute_contract
from runport.contracts import OperationEnvelope, StreamEvent
from runport.core import load_contract
from runport.mock import ScriptedRuntime

# one runport mcp process serves every test: on one pytest-xdist worker,
# the module fixture is made once
pytestmark = pytest.mark.xdist_group("test_mcp_e2e")

QUICK = Path(__file__).with_name("data") / "quick"
INPUTS = {"topic": "rivers"}

Wire = list[SessionMessage | Exception]
EVENT: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)


def make_contracts(folder: Path) -> Path:
    folder.mkdir()
    shutil.copy(QUICK / "contract.yaml", folder / "echo.yaml")
    # Loaded by nobody: reported on stderr at start and skipped.
    (folder / "broken.yaml").write_text(
        "api_version: runport/v1alpha1\nid: broken\nversion: one\n", encoding="utf-8"
    )
    # Not a contract at all: passed over quietly.
    shutil.copy(QUICK / "scenario.yaml", folder / "scenario.yaml")
    return folder


@pytest.fixture
def contracts(tmp_path: Path) -> Path:
    return make_contracts(tmp_path / "contracts")


def _params(*args: str | Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "runport.cli", "mcp", *map(str, args)],
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )


@asynccontextmanager
async def _tapped(
    transport: AbstractAsyncContextManager[Any], wire: Wire
) -> AsyncIterator[tuple[Any, Any]]:
    """The transport's streams, with every inbound message appended to ``wire`` first."""
    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            async with send:
                async for item in read:
                    wire.append(item)
                    await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            yield receive, write
            group.cancel_scope.cancel()


@dataclass
class Call:
    """One tool call and the slice of the wire that arrived while it ran."""

    result: CallToolResult
    wire: Wire


@dataclass
class Session:
    tools: dict[str, Tool]
    calls: dict[str, Call]
    stderr: str


async def _ignore(progress: float, total: float | None, message: str | None) -> None:
    """Progress is checked on the wire; the callback only makes the client send a token."""


CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "list": ("list_contracts", {}),
    "plain": ("execute_contract", {"contract": "cli.echo", "inputs": INPUTS}),
    # A second identical call: each call plays the scenario from its first turn.
    "plain_again": ("execute_contract", {"contract": "cli.echo", "inputs": INPUTS}),
    "stream": ("execute_contract", {"contract": "cli.echo", "inputs": INPUTS, "stream": True}),
    "unknown": ("execute_contract", {"contract": "no.such", "inputs": INPUTS}),
    "missing_input": ("execute_contract", {"contract": "cli.echo", "inputs": {}}),
    "inputs_not_object": ("execute_contract", {"contract": "cli.echo", "inputs": "rivers"}),
    "no_contract": ("execute_contract", {"inputs": INPUTS}),
    "stream_not_bool": (
        "execute_contract",
        {"contract": "cli.echo", "inputs": INPUTS, "stream": "yes"},
    ),
    "unknown_argument": (
        "execute_contract",
        {"contract": "cli.echo", "inputs": INPUTS, "model": "x"},
    ),
}


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """One ``runport mcp`` process for every call above (starting one costs ~1.5 s)."""
    root = tmp_path_factory.mktemp("mcp")
    folder = make_contracts(root / "contracts")
    wire: Wire = []
    found: dict[str, Any] = {}

    async def main() -> None:
        transport = stdio_client(
            _params("--contracts", folder, "--scenario", QUICK / "scenario.yaml"),
            errlog=errlog,
        )
        async with Client(_tapped(transport, wire)) as client:
            found["tools"] = {tool.name: tool for tool in (await client.list_tools()).tools}
            calls: dict[str, Call] = {}
            for key, (tool, arguments) in CALLS.items():
                before = len(wire)
                result = await client.call_tool(tool, arguments, progress_callback=_ignore)
                calls[key] = Call(result, wire[before:])
            found["calls"] = calls

    with (root / "stderr.txt").open("w+", encoding="utf-8") as errlog:
        anyio.run(main)
        errlog.seek(0)
        stderr = errlog.read()
    return Session(found["tools"], found["calls"], stderr)


def in_process(*, stream: bool, inputs: dict[str, Any] = INPUTS) -> OperationEnvelope:
    events: list[StreamEvent] = []
    return execute_contract(
        load_contract(QUICK / "contract.yaml"),
        ScriptedRuntime.from_scenario(QUICK / "scenario.yaml"),
        inputs=inputs,
        on_event=events.append if stream else None,
    )


def envelope_of(result: CallToolResult) -> OperationEnvelope:
    assert not result.is_error, result.content
    envelope = OperationEnvelope.model_validate(result.structured_content)
    [block] = result.content
    assert isinstance(block, TextContent)
    assert OperationEnvelope.model_validate_json(block.text) == envelope
    return envelope


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


def _progress(item: SessionMessage | Exception) -> dict[str, Any] | None:
    if not isinstance(item, SessionMessage):
        return None
    message = item.message
    if isinstance(message, JSONRPCNotification) and message.method == "notifications/progress":
        return dict(message.params or {})
    return None


def _is_response(item: SessionMessage | Exception) -> bool:
    return isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCResponse)


def test_lists_tools_and_contracts(session: Session) -> None:
    assert set(session.tools) == {"list_contracts", "execute_contract"}
    assert session.tools["execute_contract"].input_schema["required"] == ["contract", "inputs"]
    listing = session.calls["list"].result
    assert not listing.is_error
    assert listing.structured_content == {
        "contracts": [
            {
                "id": "cli.echo",
                "version": "1.0.0",
                "description": "Say something about a topic.",
                "input_schema": {
                    "type": "object",
                    "properties": {"topic": {"type": "string", "minLength": 1}},
                    "required": ["topic"],
                    "additionalProperties": False,
                },
            }
        ]
    }


def test_a_file_that_fails_to_load_is_reported_and_skipped(session: Session) -> None:
    assert "runport: warning: skipped " in session.stderr
    assert "broken.yaml" in session.stderr
    assert "scenario.yaml" not in session.stderr
    assert "Traceback" not in session.stderr


def test_execute_without_streaming_equals_in_process(session: Session) -> None:
    expected = in_process(stream=False)
    assert expected.ok
    assert expected.stream_events is None
    for key in ("plain", "plain_again"):
        envelope = envelope_of(session.calls[key].result)
        assert envelope == expected
        assert envelope.fingerprints == expected.fingerprints
        assert not any(_progress(item) for item in session.calls[key].wire)


def test_streaming_sends_every_event_as_progress_before_the_result(session: Session) -> None:
    expected = in_process(stream=True)
    assert expected.stream_events is not None
    call = session.calls["stream"]
    envelope = envelope_of(call.result)
    assert envelope == expected
    assert envelope.stream_events == expected.stream_events

    progress = [(i, p) for i, item in enumerate(call.wire) if (p := _progress(item)) is not None]
    responses = [i for i, item in enumerate(call.wire) if _is_response(item)]
    assert [p["progress"] for _, p in progress] == list(range(1, len(expected.stream_events) + 1))
    assert [EVENT.validate_json(p["message"]) for _, p in progress] == expected.stream_events
    assert progress[-1][1]["message"].startswith('{"kind":"Complete"')
    assert responses
    assert max(i for i, _ in progress) < min(responses)


def test_an_unknown_contract_is_a_tool_error(session: Session) -> None:
    text = error_text(session.calls["unknown"].result)
    assert text.startswith("TQX_CONTRACT_NOT_FOUND: ")
    assert "no.such" in text


def test_a_missing_input_is_a_not_ok_envelope(session: Session) -> None:
    envelope = envelope_of(session.calls["missing_input"].result)
    assert envelope == in_process(stream=False, inputs={})
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == ["TQX_VALUE_REQUIRED"]


@pytest.mark.parametrize(
    "key", ["inputs_not_object", "no_contract", "stream_not_bool", "unknown_argument"]
)
def test_malformed_arguments_are_a_tool_error(session: Session, key: str) -> None:
    assert error_text(session.calls[key].result).startswith("TQX_DATA_INVALID: ")


def run_main(*args: str | Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The command in-process: start failures happen before anything is served."""
    from runport.cli._main import main

    status = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return status, out, err


def test_two_contracts_with_one_id_stop_the_start(
    contracts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(contracts / "echo.yaml", contracts / "again.yaml")
    status, out, err = run_main(
        "mcp", "--contracts", contracts, "--scenario", QUICK / "scenario.yaml", capsys=capsys
    )
    assert status == 1
    assert out == ""
    [line] = [line for line in err.splitlines() if line.startswith("runport: error:")]
    assert line.startswith("runport: error: TQX_DATA_INVALID: contract id 'cli.echo' is defined")
    assert "again.yaml" in line
    assert "echo.yaml" in line


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--adapter", "no-such-adapter"], "no adapter named 'no-such-adapter'"),
        ([], "needs a scenario file"),
        (["--scenario", "missing.yaml"], "missing.yaml"),
    ],
)
def test_an_adapter_that_cannot_start_stops_the_start(
    contracts: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run_main("mcp", "--contracts", contracts, *extra, capsys=capsys)
    assert status == 1
    assert out == ""
    [line] = [line for line in err.splitlines() if line.startswith("runport: error:")]
    assert line.startswith("runport: error: TQX_")
    assert message in line


def test_a_missing_contracts_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_main(
        "mcp",
        "--contracts",
        tmp_path / "nope",
        "--scenario",
        QUICK / "scenario.yaml",
        capsys=capsys,
    )
    assert status == 1
    assert err.startswith("runport: error: TQX_DATA_INVALID: contracts folder not found")
    assert len(err.splitlines()) == 1


def test_without_runport_mcp_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], contracts: Path
) -> None:
    from runport.cli._main import main

    monkeypatch.setitem(sys.modules, "runport.mcp", None)
    assert main(["mcp", "--contracts", str(contracts)]) == 1
    err = capsys.readouterr().err
    assert err == (
        "runport: error: usage: runport mcp needs the runport-mcp package: "
        "pip install 'runport[mcp]'\n"
    )
