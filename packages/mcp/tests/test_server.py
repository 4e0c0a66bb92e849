"""In-process tests of the MCP server. runport-mcp may not import (or depend on) the mock,
so these tests bring their own small, deterministic runtimes."""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.types import CallToolResult, TextContent

from runport.application import CallerGone, CatalogError, execute_contract, load_catalog
from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    Finish,
    OperationEnvelope,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
)
from runport.core import build_receipt
from runport.mcp import create_server, prepare
from runport.ports import AsyncRuntimeAdapter, AsyncSink, PortError, RuntimeAdapter, Sink, deliver

CONTRACTS = Path(__file__).with_name("contracts")
DESCRIPTOR = AdapterDescriptor(
    id="test-runtime", version="1.0.0", capabilities=["streaming", "structured_output", "text"]
)


class Chunks(RuntimeAdapter):
    """Streams ``thinking`` as reasoning and ``chunks`` as deltas, then completes (or fails
    with ``fail``)."""

    def __init__(
        self, chunks: Sequence[str], *, fail: str | None = None, thinking: Sequence[str] = ()
    ) -> None:
        self.chunks = list(chunks)
        self.fail = fail
        self.thinking = list(thinking)

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.execute_streaming(request, lambda event: None)

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        for thought in self.thinking:
            sink(ReasoningDelta(text=thought))
        for chunk in self.chunks:
            sink(Delta(text=chunk))
        if self.fail is not None:
            sink(Failed(code=ErrorCode.RUNTIME_UNAVAILABLE, message=self.fail))
            raise PortError(ErrorCode.RUNTIME_UNAVAILABLE, self.fail)
        reasoning = [ReasoningPart(text="".join(self.thinking))] if self.thinking else []
        receipt = build_receipt(
            request,
            adapter=DESCRIPTOR,
            text="".join(self.chunks),
            finish_reason="stop",
            reasoning=reasoning,
        )
        sink(Complete(receipt=receipt))
        return receipt


class Endless(RuntimeAdapter):
    """Streams deltas until its sink raises (or ``limit`` is reached), recording how it
    stopped: the stand-in for an upstream that a cancelled call must close."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self.sent = 0
        self.stopped_by: BaseException | None = None
        self.finished = threading.Event()

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise NotImplementedError("only streamed")

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        try:
            for _ in range(self.limit):
                sink(Delta(text="x"))
                self.sent += 1
            receipt = build_receipt(request, adapter=DESCRIPTOR, text="x" * self.sent)
            sink(Complete(receipt=receipt))
            return receipt
        except BaseException as error:
            self.stopped_by = error
            raise
        finally:
            self.finished.set()


CATALOG = load_catalog(CONTRACTS, warn=print)
ECHO = {"contract": "mcp.echo", "inputs": {"topic": "rivers"}}
CHUNKS = ["Rivers ", "run ", "downhill."]

# "legacy": JSON-RPC over in-memory streams (the framing stdio uses); "auto": the SDK's
# direct in-process dispatcher. The server must behave the same on both.
MODES = ["legacy", "auto"]

Body = Callable[[Client], Awaitable[Any]]


def served(
    adapter_factory: Callable[[], RuntimeAdapter | AsyncRuntimeAdapter], body: Body, *, mode: str
) -> Any:
    server = create_server(CATALOG, adapter_factory)
    found: list[Any] = []

    async def main() -> None:
        async with Client(server, mode=mode) as client:
            found.append(await body(client))

    anyio.run(main)
    return found[0]


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


def in_process(adapter: RuntimeAdapter, *, stream: bool, **call: Any) -> OperationEnvelope:
    events: list[StreamEvent] = []
    return execute_contract(
        CATALOG[call.get("contract", "mcp.echo")],
        adapter,
        inputs=call.get("inputs", {"topic": "rivers"}),
        context=call.get("context"),
        on_event=events.append if stream else None,
    )


@pytest.mark.parametrize("mode", MODES)
def test_tools_are_listed_with_their_schemas(mode: str) -> None:
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in served(lambda: Chunks(CHUNKS), body, mode=mode)}
    assert set(tools) == {"list_contracts", "execute_contract"}
    execute = tools["execute_contract"]
    assert execute.input_schema["required"] == ["contract", "inputs"]
    assert execute.output_schema is not None
    assert "app.extract, mcp.echo" in (execute.description or "")


@pytest.mark.parametrize("mode", MODES)
def test_list_contracts_returns_the_catalog(mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("list_contracts", {})

    result = served(lambda: Chunks(CHUNKS), body, mode=mode)
    assert not result.is_error
    assert result.structured_content == {"contracts": CATALOG.describe()}


@pytest.mark.parametrize("mode", MODES)
def test_execute_equals_in_process(mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("execute_contract", ECHO)

    envelope = envelope_of(served(lambda: Chunks(CHUNKS), body, mode=mode))
    assert envelope == in_process(Chunks(CHUNKS), stream=False)
    assert envelope.ok
    assert envelope.stream_events is None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fail", [None, "upstream reset"])
def test_streaming_reports_every_event_as_progress(mode: str, fail: str | None) -> None:
    progress: list[tuple[float, str | None]] = []

    async def record(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def body(client: Client) -> Any:
        result = await client.call_tool(
            "execute_contract", {**ECHO, "stream": True}, progress_callback=record
        )
        # Callbacks may run as tasks of their own; let them finish before looking.
        await anyio.wait_all_tasks_blocked()
        return result

    envelope = envelope_of(served(lambda: Chunks(CHUNKS, fail=fail), body, mode=mode))
    expected = in_process(Chunks(CHUNKS, fail=fail), stream=True)
    assert envelope == expected
    assert expected.stream_events is not None
    assert envelope.ok is (fail is None)
    progress.sort()
    assert [value for value, _ in progress] == list(range(1, len(expected.stream_events) + 1))
    assert [message for _, message in progress] == [
        event.model_dump_json() for event in expected.stream_events
    ]


@pytest.mark.parametrize("mode", MODES)
def test_reasoning_is_sent_as_progress_and_never_as_answer_text(mode: str) -> None:
    thinking = ["Rivers… ", "flow downhill."]
    progress: list[tuple[float, str | None]] = []

    async def record(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def body(client: Client) -> Any:
        result = await client.call_tool(
            "execute_contract", {**ECHO, "stream": True}, progress_callback=record
        )
        await anyio.wait_all_tasks_blocked()
        return result

    def adapter() -> Chunks:
        return Chunks(CHUNKS, thinking=thinking)

    envelope = envelope_of(served(adapter, body, mode=mode))
    assert envelope == in_process(adapter(), stream=True)
    progress.sort()
    events = [json.loads(message) for _, message in progress if message]
    assert [event["kind"] for event in events] == ["ReasoningDelta"] * 2 + ["Delta"] * 3 + [
        "Complete"
    ]
    assert [event["text"] for event in events[:2]] == thinking
    assert envelope.result is not None
    assert envelope.result.text == "".join(CHUNKS)
    assert envelope.result.reasoning == [ReasoningPart(text="".join(thinking))]


@pytest.mark.parametrize("mode", MODES)
def test_streaming_without_a_progress_token_still_keeps_the_events(mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("execute_contract", {**ECHO, "stream": True})

    envelope = envelope_of(served(lambda: Chunks(CHUNKS), body, mode=mode))
    assert envelope == in_process(Chunks(CHUNKS), stream=True)


@pytest.mark.parametrize("mode", MODES)
def test_each_call_gets_a_fresh_adapter(mode: str) -> None:
    made: list[RuntimeAdapter] = []

    def factory() -> RuntimeAdapter:
        made.append(Chunks(CHUNKS))
        return made[-1]

    async def body(client: Client) -> Any:
        for _ in range(3):
            await client.call_tool("execute_contract", ECHO)

    served(factory, body, mode=mode)
    assert len(made) == 3
    assert len({id(adapter) for adapter in made}) == 3


@pytest.mark.parametrize("mode", MODES)
def test_a_not_ok_envelope_is_a_normal_result(mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool(
            "execute_contract", {"contract": "mcp.echo", "inputs": {"topic": ""}}
        )

    envelope = envelope_of(served(lambda: Chunks(CHUNKS), body, mode=mode))
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == ["TQX_VALUE_SCHEMA"]
    assert envelope == in_process(Chunks(CHUNKS), stream=False, inputs={"topic": ""})


MALFORMED: list[dict[str, Any] | None] = [
    None,
    {},
    {"inputs": {}},
    {"contract": "", "inputs": {}},
    {"contract": 7, "inputs": {}},
    {"contract": "mcp.echo"},
    {"contract": "mcp.echo", "inputs": ["topic"]},
    {"contract": "mcp.echo", "inputs": {}, "context": "nope"},
    {"contract": "mcp.echo", "inputs": {}, "stream": 1},
    {"contract": "mcp.echo", "inputs": {}, "streaming": True},
]


@pytest.mark.parametrize("mode", MODES)
def test_malformed_arguments_are_tool_errors_with_a_stable_code(mode: str) -> None:
    async def body(client: Client) -> Any:
        return [await client.call_tool("execute_contract", args) for args in MALFORMED]

    for args, result in zip(
        MALFORMED, served(lambda: Chunks(CHUNKS), body, mode=mode), strict=True
    ):
        assert error_text(result).startswith("TQX_DATA_INVALID: "), args


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_contract_is_a_tool_error(mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("execute_contract", {"contract": "nope", "inputs": {}})

    text = error_text(served(lambda: Chunks(CHUNKS), body, mode=mode))
    assert text.startswith("TQX_CONTRACT_NOT_FOUND: no contract with id 'nope'")


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_tool_is_a_protocol_error(mode: str) -> None:
    async def body(client: Client) -> Any:
        with pytest.raises(MCPError, match="unknown tool"):
            await client.call_tool("delete_everything", {})

    served(lambda: Chunks(CHUNKS), body, mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_an_adapter_that_fails_to_start_is_a_tool_error(mode: str) -> None:
    def factory() -> RuntimeAdapter:
        raise PortError(ErrorCode.RUNTIME_UNAVAILABLE, "no route to upstream")

    async def body(client: Client) -> Any:
        return await client.call_tool("execute_contract", ECHO)

    text = error_text(served(factory, body, mode=mode))
    assert text == "TQX_RUNTIME_UNAVAILABLE: cannot start the adapter: no route to upstream"


@pytest.mark.parametrize("mode", MODES)
def test_cancelling_the_call_stops_the_run_like_a_raising_sink(mode: str) -> None:
    adapter = Endless()

    async def body(client: Client) -> Any:
        first = anyio.Event()
        outcome: list[Any] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            first.set()

        async def call(scope: anyio.CancelScope) -> None:
            with scope:
                outcome.append(
                    await client.call_tool(
                        "execute_contract", {**ECHO, "stream": True}, progress_callback=on_progress
                    )
                )

        scope = anyio.CancelScope()
        async with anyio.create_task_group() as group:
            group.start_soon(call, scope)
            await first.wait()
            scope.cancel()
        # Waiting for the bridge's worker thread is not a timing assumption: it ends once its
        # sink raises; the bound only turns a regression into a failure instead of a hang.
        assert await anyio.to_thread.run_sync(adapter.finished.wait, 60)
        # The session is still usable after a cancelled call.
        listing = await client.call_tool("list_contracts", {})
        return outcome, listing

    outcome, listing = served(lambda: adapter, body, mode=mode)
    assert outcome == []
    # a sync adapter runs bridged (to_async): its sink raises CallerGone once the task is gone
    assert isinstance(adapter.stopped_by, CallerGone)
    assert adapter.sent < adapter.limit
    assert not listing.is_error


class Broken(Chunks):
    """Breaks the port's promise: raises something other than ``PortError``."""

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise KeyError("secret-looking upstream detail")


@pytest.mark.parametrize("mode", MODES)
def test_an_adapter_that_breaks_the_port_is_a_coded_envelope_and_the_session_survives(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def body(client: Client) -> Any:
        return (
            await client.call_tool("execute_contract", ECHO),
            await client.call_tool("list_contracts", {}),
        )

    result, listing = served(lambda: Broken(CHUNKS), body, mode=mode)
    envelope = OperationEnvelope.model_validate(result.structured_content)
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_INVALID_RESPONSE"]
    assert "KeyError" in envelope.diagnostics[0].message
    assert "secret-looking" not in result.content[0].text
    assert not listing.is_error
    assert "secret-looking" in caplog.text  # the operator still sees what happened


def test_prepare_refuses_an_adapter_that_is_not_installed() -> None:
    with pytest.raises(CatalogError) as caught:
        prepare(CONTRACTS, adapter="no-such-adapter", warn=print)
    assert caught.value.code == "TQX_DATA_INVALID"
    assert "no adapter named 'no-such-adapter'" in caught.value.message


class AsyncChunks(AsyncRuntimeAdapter):
    """``Chunks`` on the event loop: records the thread each call ran on."""

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return await self.execute_streaming(request, lambda event: None)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        self.threads.add(threading.get_ident())
        for chunk in CHUNKS:
            await deliver(sink, Delta(text=chunk))
        receipt = build_receipt(
            request, adapter=DESCRIPTOR, text="".join(CHUNKS), finish_reason="stop"
        )
        await deliver(sink, Complete(receipt=receipt))
        return receipt


@pytest.mark.parametrize("mode", MODES)
def test_an_async_adapter_runs_on_the_event_loop_with_no_thread_hop(mode: str) -> None:
    adapter = AsyncChunks()

    async def body(client: Client) -> Any:
        progress: list[str | None] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        result = await client.call_tool(
            "execute_contract", {**ECHO, "stream": True}, progress_callback=on_progress
        )
        return result, progress, threading.get_ident()

    result, progress, loop_thread = served(lambda: adapter, body, mode=mode)
    envelope = envelope_of(result)
    assert envelope.ok
    assert envelope.result is not None
    assert envelope.result.text == "".join(CHUNKS)
    assert [json.loads(m)["kind"] for m in progress if m] == ["Delta"] * 3 + ["Complete"]
    assert adapter.threads == {loop_thread}


@pytest.mark.parametrize("mode", MODES)
def test_partial_output_sends_snapshots_as_progress_and_keeps_the_envelope(mode: str) -> None:
    chunks = ['{"city": "Delft", ', '"day": "2026-12-02"}']
    extract = {"contract": "app.extract", "inputs": {"text": "Delft, tomorrow"}, "stream": True}
    progress: list[tuple[float, str | None]] = []

    async def record(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def body(client: Client) -> Any:
        result = await client.call_tool(
            "execute_contract", {**extract, "partial_output": True}, progress_callback=record
        )
        await anyio.wait_all_tasks_blocked()
        return result

    envelope = envelope_of(served(lambda: Chunks(chunks), body, mode=mode))
    plain = envelope_of(
        served(
            lambda: Chunks(chunks), lambda c: c.call_tool("execute_contract", extract), mode=mode
        )
    )
    assert envelope == plain  # snapshots are not kept in stream_events
    progress.sort()
    sent = [json.loads(message or "{}") for _, message in progress]
    kinds = [event["kind"] for event in sent]
    assert [kind for kind in kinds if kind != "OutputSnapshot"] == ["Delta", "Delta", "Complete"]
    assert kinds[1] == kinds[3] == "OutputSnapshot"  # one after each Delta that changed it
    assert sent[3]["value"] == {"city": "Delft", "day": "2026-12-02"}


def test_partial_output_must_be_a_boolean() -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("execute_contract", {**ECHO, "partial_output": "yes"})

    text = error_text(served(lambda: Chunks(CHUNKS), body, mode="auto"))
    assert text.startswith("TQX_DATA_INVALID: 'partial_output' must be a boolean")


class Kept(Chunks):
    """One adapter for the whole session: counts its calls and its closing."""

    def __init__(self) -> None:
        super().__init__(CHUNKS)
        self.calls = 0
        self.closed = 0

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        self.calls += 1
        return super().execute_streaming(request, sink)

    def close(self) -> None:
        self.closed += 1


@pytest.mark.parametrize("mode", MODES)
def test_one_adapter_given_serves_every_call_and_is_closed_when_the_session_ends(
    mode: str,
) -> None:
    kept = Kept()
    server = create_server(CATALOG, kept)
    seen: list[tuple[int, int]] = []

    async def main() -> None:
        async with Client(server, mode=mode) as client:
            for _ in range(3):
                envelope = envelope_of(await client.call_tool("execute_contract", ECHO))
                assert envelope.ok
                seen.append((kept.calls, kept.closed))

    anyio.run(main)
    assert seen == [(1, 0), (2, 0), (3, 0)]
    assert kept.closed == 1


class Cut(Chunks):
    """Streams the chunks, then ends as a turn cut by its token limit (Anthropic's word)."""

    ending: tuple[str, Finish] = ("max_tokens", "length")

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        for chunk in self.chunks:
            sink(Delta(text=chunk))
        receipt = build_receipt(
            request,
            adapter=DESCRIPTOR,
            text="".join(self.chunks),
            finish_reason=self.ending[0],
            finish=self.ending[1],
        )
        sink(Complete(receipt=receipt))
        return receipt


@pytest.mark.parametrize("mode", MODES)
def test_a_cut_answer_is_a_normal_result_that_names_the_cut(mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool(
            "execute_contract", {"contract": "mcp.echo", "inputs": {"topic": "rivers"}}
        )

    result = served(lambda: Cut(["Rivers ", "ru"]), body, mode=mode)
    assert result.structured_content["result"]["finish"] == "length"
    envelope = envelope_of(result)
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == ["TQX_OUTPUT_TRUNCATED"]
    assert envelope.result is not None
    assert (envelope.result.finish, envelope.result.finish_reason) == ("length", "max_tokens")
    assert envelope == in_process(Cut(["Rivers ", "ru"]), stream=False)


class Refused(Cut):
    """Ends as a refused turn (Anthropic's word)."""

    ending = ("refusal", "content_filter")


def test_a_refused_answer_is_a_normal_result_that_names_the_refusal() -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool(
            "execute_contract", {"contract": "mcp.echo", "inputs": {"topic": "rivers"}}
        )

    result = served(lambda: Refused(["Rivers ", "ru"]), body, mode="auto")
    envelope = envelope_of(result)
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == ["TQX_OUTPUT_REFUSED"]
    assert envelope.result is not None
    assert (envelope.result.finish, envelope.result.finish_reason) == ("content_filter", "refusal")
