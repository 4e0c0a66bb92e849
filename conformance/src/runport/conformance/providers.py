"""The kit an HTTP provider adapter's own tests use beside the suite: requests to send, a
streamed call judged by the streaming law as its events arrive, and the checks every provider's
adapters pass — the entry point, the async twin, a caller's stop, cancellation, error statuses
and oversize streams — each against the shared loopback upstream
(``runport.conformance.loopback``).

A ``Provider`` names a provider's sync and async adapter classes, taking the keyword base every
``runport.http`` adapter takes (``base_url``, ``model``, ``api_key``, ``http_client``). The
``client`` and ``playback`` fixtures are the kit's: a test folder's ``conftest.py`` imports them
by name to use them.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import (
    FaultServer,
    Handler,
    Playback,
    fixed_reply,
    json_reply,
    rechunk,
    serving,
    stream_reply,
)
from runport.contracts import (
    CompiledInteraction,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    Message,
    StreamEvent,
    ToolCallDelta,
    ToolSpec,
)
from runport.core import StreamAssembler, compile_contract, parse_contract
from runport.ports import AsyncRuntimeAdapter, PortError, RuntimeAdapter

__all__ = [
    "OBJECT_SCHEMA",
    "PARTS_CONTRACT",
    "PDF",
    "PHOTO",
    "PHOTO_URL",
    "PNG",
    "REPORT",
    "TEXT_SCHEMA",
    "TIMEOUT",
    "WEATHER",
    "Outcome",
    "Provider",
    "Stop",
    "b64",
    "client",
    "make_request",
    "parts_request",
    "playback",
    "run_streamed",
    "run_streamed_async",
    "wired",
]


def wired(upstream: Any) -> dict[str, Any]:
    """The upstream's address, model, planted key and read timeout, as both flavours take
    them."""
    return {
        "base_url": upstream.base_url,
        "model": upstream.model,
        "api_key": upstream.api_key,
        "timeout": upstream.read_timeout,
    }


TEXT_SCHEMA: dict[str, Any] = {"type": "string"}
OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
}
WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def make_request(
    schema: dict[str, Any] | None = None,
    *,
    messages: list[Message] | None = None,
    tools: list[ToolSpec] | None = None,
    runtime_policy: dict[str, Any] | None = None,
) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test/0",
            contract_id="provider-test",
            contract_version="1.0.0",
            messages=messages or [Message(role="user", content="Say hello.")],
            output_schema=TEXT_SCHEMA if schema is None else schema,
            runtime_policy=runtime_policy or {},
            tools=tools,
        )
    )


@pytest.fixture(scope="module")
def playback() -> Iterator[Playback]:
    """One ``Playback`` upstream for a module's tests."""
    player = Playback()
    yield player
    player.close()


# --- the streaming law, checked on every streamed call -------------------------------------


@dataclass
class Outcome:
    events: list[StreamEvent]
    receipt: ExecutionReceipt | None = None
    error: PortError | None = None

    @property
    def deltas(self) -> list[str]:
        return [event.text for event in self.events if isinstance(event, Delta)]

    @property
    def text(self) -> str:
        return "".join(self.deltas)

    @property
    def tool_deltas(self) -> list[ToolCallDelta]:
        return [event for event in self.events if isinstance(event, ToolCallDelta)]


def _judged(assembler: StreamAssembler, receipt: Any, failure: PortError | None) -> Outcome:
    terminal = assembler.terminal
    if failure is not None:
        assert isinstance(terminal, Failed), f"raised {failure!r} but the terminal is {terminal!r}"
        assert (terminal.code, terminal.message) == (failure.code, failure.message)
        return Outcome(assembler.events, error=failure)
    assert isinstance(terminal, Complete), f"returned, but the terminal is {terminal!r}"
    assert terminal.receipt == receipt
    assert assembler.assembly_problems(receipt) == []
    return Outcome(assembler.events, receipt=receipt)


def run_streamed(adapter: RuntimeAdapter, request: ExecutionRequest) -> Outcome:
    """``execute_streaming`` with a sink that checks the grammar as events arrive (law 1),
    then the terminal against the outcome (laws 2, 3 and 5)."""
    assembler = StreamAssembler()
    try:
        receipt = adapter.execute_streaming(request, assembler.feed)
    except PortError as error:
        return _judged(assembler, None, error)
    return _judged(assembler, receipt, None)


def run_streamed_async(adapter: AsyncRuntimeAdapter, request: ExecutionRequest) -> Outcome:
    """``run_streamed`` for an async adapter, on a fresh event loop; the adapter's client
    for that loop is released before the loop ends."""

    async def main() -> Outcome:
        assembler = StreamAssembler()
        try:
            receipt = await adapter.execute_streaming(request, assembler.feed)
        except PortError as error:
            return _judged(assembler, None, error)
        finally:
            await adapter.aclose()  # type: ignore[attr-defined]
        return _judged(assembler, receipt, None)

    return asyncio.run(main())


# --- one provider's adapters, and the checks every provider shares --------------------------

TIMEOUT = httpx.Timeout(5.0, read=0.5)
"""A short read timeout, so a stalled stream fails fast; no test asserts on timing."""


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=TIMEOUT) as http:
        yield http


@dataclass(frozen=True)
class Provider:
    """A provider's sync and async adapter classes with the model and key its tests use, each
    pointed at a loopback server by ``adapter_for`` / ``async_adapter_for``."""

    adapter: Callable[..., Any]
    async_adapter: Callable[..., Any]
    model: str
    api_key: str

    def adapter_for(self, server: FaultServer, client: httpx.Client, **kwargs: Any) -> Any:
        return self.adapter(
            base_url=server.base_url.removesuffix("/v1"),
            model=self.model,
            api_key=self.api_key,
            http_client=client,
            **kwargs,
        )

    def async_adapter_for(self, server: FaultServer) -> Any:
        return self.async_adapter(
            base_url=server.base_url.removesuffix("/v1"), model=self.model, api_key=self.api_key
        )

    def streamed(self, client: httpx.Client, *handlers: Handler, **kwargs: Any) -> Outcome:
        """One streamed call of the default request against a server playing ``handlers``."""
        with serving(*handlers) as server:
            return run_streamed(self.adapter_for(server, client, **kwargs), make_request())

    def streamed_receipt(self, playback: Playback, body: bytes, cuts: list[int]) -> Any:
        """The receipt of a streamed call whose reply is ``body`` cut at ``cuts``."""
        playback.answer = stream_reply(rechunk(body, cuts))
        with httpx.Client() as http:
            adapter = self.adapter(
                base_url=playback.base_url, model=self.model, api_key=self.api_key, http_client=http
            )
            receipt = run_streamed(adapter, make_request(tools=[WEATHER])).receipt
        assert receipt is not None
        return receipt

    def unstreamed_receipt(self, playback: Playback, body: Any) -> Any:
        """The receipt of an unstreamed call answered with the JSON ``body``."""
        playback.answer = json_reply(body)
        with httpx.Client() as http:
            adapter = self.adapter(
                base_url=playback.base_url, model=self.model, api_key=self.api_key, http_client=http
            )
            return adapter.execute(make_request(tools=[WEATHER]))

    def check_the_entry_point(self, name: str, create_adapter: object) -> None:
        """``create_adapter`` is what ``runport.adapters`` names ``name``, and the adapter it
        made from the environment (base URL ``http://127.0.0.1:9``) shows where it goes and
        never the key."""
        (point,) = [p for p in entry_points(group="runport.adapters") if p.name == name]
        assert point.load() is create_adapter
        adapter = point.load()()
        assert "127.0.0.1:9" in repr(adapter)
        assert self.api_key not in repr(adapter)
        adapter.close()

    def check_the_async_twin(self, client: httpx.Client, handler: Handler) -> None:
        """The async adapter gives the sync one's events and receipt for the same bytes."""
        with serving(handler) as server, serving(handler) as sync_server:
            request = make_request(tools=[WEATHER])
            async_outcome = run_streamed_async(self.async_adapter_for(server), request)
            sync_outcome = run_streamed(self.adapter_for(sync_server, client), request)
        assert async_outcome.events == sync_outcome.events
        assert async_outcome.receipt == sync_outcome.receipt

    def check_a_caller_stop(self, client: httpx.Client, server: FaultServer, after: int) -> None:
        """A sink that raises after ``after`` events: the exception leaves as it is, the
        response is closed, and the adapter answers the server's next reply whole."""
        adapter = self.adapter_for(server, client)
        got: list[StreamEvent] = []

        def sink(event: StreamEvent) -> None:
            got.append(event)
            if len(got) == after:
                raise Stop

        try:
            with pytest.raises(Stop):
                adapter.execute_streaming(make_request(), sink)
            assert server.wait_closed(0)
            assert len(got) == after
            assert run_streamed(adapter, make_request()).receipt is not None
        finally:
            server.close()

    def check_cancelling_closes_the_upstream(self, server: FaultServer) -> None:
        """Cancelling the async call at its first event closes the upstream connection."""
        adapter = self.async_adapter_for(server)

        async def main() -> None:
            first = asyncio.Event()
            task = asyncio.create_task(
                adapter.execute_streaming(make_request(), lambda _: first.set())
            )
            await first.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await adapter.aclose()

        try:
            asyncio.run(main())
            assert server.wait_closed(0)
        finally:
            server.close()

    def check_an_error_status(
        self, client: httpx.Client, status: str, body: bytes, code: ErrorCode, text: str
    ) -> None:
        """An error status answered with ``body``: the stable ``code``, the provider's own
        ``text`` in the message and, unless permanent, the ``Retry-After``."""
        headers = {"Content-Type": "application/json", "Retry-After": "3"}
        outcome = self.streamed(client, fixed_reply(status, headers, body))
        assert outcome.error is not None
        assert outcome.error.code == code
        assert text in outcome.error.message
        if code != ErrorCode.RUNTIME_PERMANENT:
            assert outcome.error.retry_after_ms == 3000

    def check_refused_both_ways(
        self, client: httpx.Client, streamed: Handler, whole: Handler, code: ErrorCode, said: str
    ) -> None:
        """A turn served ``streamed``, then ``whole`` (unstreamed), fails the same way both
        times: the stable ``code``, ``said`` in the message."""
        with serving(streamed, whole) as server:
            outcome = run_streamed(self.adapter_for(server, client), make_request())
            with pytest.raises(PortError) as raised:
                self.adapter_for(server, client).execute(make_request())
        for error in (outcome.error, raised.value):
            assert error is not None
            assert error.code == code
            assert said in error.message

    def check_an_oversize_stream(self, client: httpx.Client, handler: Handler) -> None:
        """A stream past ``max_response_bytes`` fails as too large and is closed."""
        with serving(handler) as server:
            outcome = run_streamed(
                self.adapter_for(server, client, max_response_bytes=20_000), make_request()
            )
            assert server.wait_closed()
        assert outcome.error is not None
        assert outcome.error.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE


class Stop(Exception):
    """A sink's own exception."""


# --- a contract with an image and a file input ---------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
"""The bytes of a PNG, as far as any signature check reads them."""
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


PARTS_CONTRACT = parse_contract(
    {
        "api_version": "runport/v1alpha1",
        "id": "provider-parts",
        "version": "1.0.0",
        "inputs": {
            "photo": {"kind": "image", "required": True},
            "report": {"kind": "file"},
        },
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    "What is in this picture?",
                    {"kind": "image", "source": {"kind": "ref", "path": "inputs.photo"}},
                    {"kind": "file", "source": {"kind": "ref", "path": "inputs.report"}},
                    "Answer in one line.",
                ],
            },
        ],
        "output_schema": {"type": "string"},
    }
)
"""A system turn, then a user turn of text, an image, a file (when given) and text again."""


def parts_request(photo: Any, report: Any = None) -> ExecutionRequest:
    """``PARTS_CONTRACT`` compiled with these values (``report`` left out when ``None``)."""
    inputs = {"photo": photo} if report is None else {"photo": photo, "report": report}
    return ExecutionRequest(interaction=compile_contract(PARTS_CONTRACT, inputs=inputs))


PHOTO = {"media_type": "image/png", "data": b64(PNG)}
REPORT = {"media_type": "application/pdf", "data": b64(PDF), "filename": "report.pdf"}
PHOTO_URL = {"media_type": "image/png", "url": "https://images.example/cat.png"}
