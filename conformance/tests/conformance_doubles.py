"""Adapters the suite's own tests run: a thin execute-only wrapper, a minimal chat-completions
client (sync and async), an async scripted runtime, a minimal fallback (a composite), and
deliberately broken variants — each breaks one promise, so the tests can show the suite
catches it with the check meant to.

The minimal client (``MiniChatAdapter``) exists so the ``openai-chat`` half of the suite is
proven, and its broken variants are possible, without depending on ``runport.openai``; it is
small on purpose and not a product.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from runport.contracts import (
    AdapterDescriptor,
    Citation,
    CitationSource,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    FileDelta,
    FilePart,
    Finish,
    Message,
    ReasoningDelta,
    ReasoningPart,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.core import Scenario, build_receipt, parse_json_text
from runport.http import provider_text
from runport.mock import ScriptedRuntime
from runport.ports import AsyncRuntimeAdapter, AsyncSink, PortError, RuntimeAdapter, Sink, deliver

# --------------------------------------------------------------------------------------------
# scenario adapters
# --------------------------------------------------------------------------------------------


class ExecuteOnly(RuntimeAdapter):
    """Exposes only ``descriptor`` and ``execute``: streaming is the port's default method."""

    def __init__(self, scenario: Scenario) -> None:
        self._inner = ScriptedRuntime(scenario)

    def descriptor(self) -> AdapterDescriptor:
        inner = self._inner.descriptor()
        capabilities = [item for item in inner.capabilities if item != "streaming"]
        return AdapterDescriptor(
            id="execute-only", version=inner.version, capabilities=capabilities
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._inner.execute(request)


class Wrapped(RuntimeAdapter):
    """``ScriptedRuntime`` behind a sink filter; unbroken, it passes (the control)."""

    def __init__(self, scenario: Scenario) -> None:
        self.inner = ScriptedRuntime(scenario)

    def descriptor(self) -> AdapterDescriptor:
        return self.inner.descriptor()

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.inner.execute(request)

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        return self.inner.execute_streaming(request, self.filter(sink))

    def filter(self, sink: Sink) -> Sink:
        return sink


class TwoTerminals(Wrapped):
    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        receipt = super().execute_streaming(request, sink)
        sink(Complete(receipt=receipt))
        return receipt


class LostDelta(Wrapped):
    def filter(self, sink: Sink) -> Sink:
        seen = [0]

        def lossy(event: StreamEvent) -> None:
            if isinstance(event, Delta):
                seen[0] += 1
                if seen[0] == 2:
                    return
            sink(event)

        return lossy


class ReorderedDeltas(Wrapped):
    def filter(self, sink: Sink) -> Sink:
        held: list[StreamEvent] = []

        def swapping(event: StreamEvent) -> None:
            if isinstance(event, Delta) and not held and not getattr(swapping, "done", False):
                held.append(event)
                return
            sink(event)
            if held:
                sink(held.pop())
                swapping.done = True  # type: ignore[attr-defined]

        return swapping


class SwallowsSinkError(Wrapped):
    def filter(self, sink: Sink) -> Sink:
        def swallowing(event: StreamEvent) -> None:
            with contextlib.suppress(Exception):
                sink(event)

        return swallowing


class WrapsSinkError(Wrapped):
    def filter(self, sink: Sink) -> Sink:
        def wrapping(event: StreamEvent) -> None:
            try:
                sink(event)
            except PortError:
                raise
            except Exception as error:
                raise PortError(ErrorCode.CALLER_STOPPED, "the sink failed") from error

        return wrapping


class SendsAfterStop(Wrapped):
    def filter(self, sink: Sink) -> Sink:
        def noisy(event: StreamEvent) -> None:
            try:
                sink(event)
            except Exception:
                if not isinstance(event, Complete | Failed):
                    sink(Failed(code=ErrorCode.CALLER_STOPPED, message="stopped"))
                raise

        return noisy


class NoFailedOnError(Wrapped):
    def filter(self, sink: Sink) -> Sink:
        def silent(event: StreamEvent) -> None:
            if not isinstance(event, Failed):
                sink(event)

        return silent


class WrongFailedCode(Wrapped):
    def filter(self, sink: Sink) -> Sink:
        def relabel(event: StreamEvent) -> None:
            if isinstance(event, Failed):
                code = "TQX_RUNTIME_PERMANENT"
                if event.code == code:
                    code = "TQX_RUNTIME_UNAVAILABLE"
                event = Failed(code=code, message=event.message)
            sink(event)

        return relabel


class CompleteDiffers(Wrapped):
    def filter(self, sink: Sink) -> Sink:
        def altered(event: StreamEvent) -> None:
            if isinstance(event, Complete):
                receipt = event.receipt.model_copy(update={"finish_reason": "length"})
                event = Complete(receipt=receipt)
            sink(event)

        return altered


class ParityBroken(Wrapped):
    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        receipt = super().execute(request)
        return receipt.model_copy(update={"finish_reason": "end_turn"})


class CollapsedIndices(Wrapped):
    def filter(self, sink: Sink) -> Sink:
        def collapse(event: StreamEvent) -> None:
            if isinstance(event, ToolCallDelta):
                event = event.model_copy(update={"index": 0})
            sink(event)

        return collapse


class ServerToolAsClientCall(Wrapped):
    """Reads a tool the provider ran itself as a call for the run to make: its announcement a
    ``ToolCallDelta`` (its input the arguments), its result dropped."""

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return _as_client_calls(super().execute(request))

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        calls = [0]

        def turned(event: StreamEvent) -> None:
            if isinstance(event, ServerToolCall):
                event = ToolCallDelta(
                    index=calls[0],
                    call_id=event.call_id,
                    name=event.name,
                    arguments_fragment=json.dumps(event.input),
                )
                calls[0] += 1
            elif isinstance(event, ServerToolResult):
                return
            elif isinstance(event, Complete):
                event = Complete(receipt=_as_client_calls(event.receipt))
            sink(event)

        return _as_client_calls(self.inner.execute_streaming(request, turned))


def _as_client_calls(receipt: ExecutionReceipt) -> ExecutionReceipt:
    calls = [
        ToolCall(call_id=tool.call_id, name=tool.name, arguments=tool.input)
        for tool in receipt.server_tools or []
        if isinstance(tool, ServerToolCall)
    ]
    if not calls:
        return receipt
    update = {"server_tools": None, "tool_calls": calls, "output_schema_valid": None}
    return receipt.model_copy(update=update)


def _lie(receipt: ExecutionReceipt) -> ExecutionReceipt:
    return receipt.model_copy(update={"output_schema_valid": not receipt.output_schema_valid})


class LyingValidity(Wrapped):
    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return _lie(super().execute(request))

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        def lying(event: StreamEvent) -> None:
            sink(Complete(receipt=_lie(event.receipt)) if isinstance(event, Complete) else event)

        return _lie(self.inner.execute_streaming(request, lying))


class RetriesAfterDelta(Wrapped):
    """Hides the first attempt's ``Failed`` and tries the turn again."""

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        def hiding(event: StreamEvent) -> None:
            if not isinstance(event, Failed):
                sink(event)

        try:
            return self.inner.execute_streaming(request, hiding)
        except PortError as error:
            if not error.retryable:
                sink(Failed(code=error.code, message=error.message))
                raise
        return self.inner.execute_streaming(request, sink)


# --------------------------------------------------------------------------------------------
# black-box adapters: no protocol, only sample requests
# --------------------------------------------------------------------------------------------

_ECHO = AdapterDescriptor(id="echo", version="0.0.0", capabilities=["streaming", "text"])
LONG_SAMPLE = " ".join(f"word{number}" for number in range(60))
"""A user message whose echo is long enough for the black box to judge incrementality."""


def sample_requests() -> list[ExecutionRequest]:
    """A short and a long request, for the black-box classes."""
    from runport.conformance import CASES

    request = CASES[0].request()
    samples = []
    for said in ("hello there", LONG_SAMPLE):
        interaction = request.interaction.model_copy(
            update={"messages": [Message(role="user", content=said)], "contract_id": "echo"}
        )
        samples.append(request.model_copy(update={"interaction": interaction}))
    return samples


class Echo(RuntimeAdapter):
    """Answers with the last user message, streamed a word at a time (the control)."""

    def descriptor(self) -> AdapterDescriptor:
        return _ECHO

    def _words(self, request: ExecutionRequest) -> list[str]:
        said = str(request.interaction.messages[-1].content)
        words = said.split(" ")
        return [word + " " for word in words[:-1]] + [words[-1]]

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        text = "".join(self._words(request))
        return build_receipt(request, adapter=_ECHO, text=text, finish_reason="stop")

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        for word in self._words(request):
            sink(Delta(text=word))
        receipt = self.execute(request)
        sink(Complete(receipt=receipt))
        return receipt


class EchoBuffersEverything(Echo):
    """Holds every delta back and sends the answer in one ``Delta`` at the end."""

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        receipt = self.execute(request)
        sink(Delta(text=receipt.text or ""))
        sink(Complete(receipt=receipt))
        return receipt


class EveryCallFails(Echo):
    """Keeps the law on every call — by failing every one of them."""

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise PortError(ErrorCode.RUNTIME_UNAVAILABLE, "always down")

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        return RuntimeAdapter.execute_streaming(self, request, sink)


# --------------------------------------------------------------------------------------------
# a minimal chat-completions client
# --------------------------------------------------------------------------------------------

DEFAULT_BOUND = 8 * 1024 * 1024
_DESCRIPTOR = AdapterDescriptor(
    id="mini-chat",
    version="0.0.0",
    capabilities=["streaming", "structured_output", "text", "tool_calls"],
)


def _shown(body: bytes | Any, leak: bool | str) -> str:
    """What a client shows of an error body (or an error frame's error object): nothing;
    the body (``True``); the body blanked as a key redactor would (``"redacted"``); or the
    provider's own message, as it came (``"message"``)."""
    if not leak:
        return ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else json.dumps(body)
    if leak == "redacted":
        return f": {provider_text(text)}"
    if leak == "message":
        error = json.loads(text) if isinstance(body, bytes) else {"error": body}
        error = error.get("error", error) if isinstance(error, dict) else error
        message = error.get("message") if isinstance(error, dict) else error
        return f": {message}" if isinstance(message, str) else ""
    return f": {text}"


def _status_error(
    status: int, headers: httpx.Headers, body: bytes, *, leak: bool | str
) -> PortError:
    extra = _shown(body, leak)
    if status == 429:
        retry = headers.get("Retry-After")
        retry_ms = int(float(retry) * 1000) if retry and retry.isdigit() else None
        return PortError(
            ErrorCode.RUNTIME_RATE_LIMITED, f"HTTP 429{extra}", retry_after_ms=retry_ms
        )
    if status == 408:
        return PortError(ErrorCode.RUNTIME_TIMEOUT, f"HTTP 408{extra}")
    if status >= 500:
        return PortError(ErrorCode.RUNTIME_UNAVAILABLE, f"HTTP {status}{extra}")
    return PortError(ErrorCode.RUNTIME_PERMANENT, f"HTTP {status}{extra}")


def _error_frame(error: Any, *, leak: bool | str) -> PortError:
    kind = f"{error.get('type', '')} {error.get('code', '')}" if isinstance(error, dict) else ""
    extra = _shown(error, leak)
    if "rate_limit" in kind:
        return PortError(ErrorCode.RUNTIME_RATE_LIMITED, f"error frame{extra}")
    if "server" in kind or "overloaded" in kind:
        return PortError(ErrorCode.RUNTIME_UNAVAILABLE, f"error frame{extra}")
    return PortError(ErrorCode.RUNTIME_PERMANENT, f"error frame{extra}")


class _Turn:
    """``reasoning`` says what becomes of ``reasoning_content``: ``"keep"`` (streamed as
    ``ReasoningDelta``, one part per turn), ``"bare"`` (kept, without runport's own
    ``provider_metadata``: the protocol needs none back), ``"drop"`` or ``"mix"`` (into the
    answer). ``cut_ok`` reports a turn cut by the token limit as ``stop`` (the answer passed
    off as complete); ``drop_cache`` leaves the cache reads out of the usage;
    ``invent_finish`` says ``stop`` when the upstream gave no finish reason.
    ``drop_citations`` reads no ``annotations``. Generated ``images`` are read as files."""

    def __init__(
        self,
        reasoning: str = "keep",
        *,
        cut_ok: bool = False,
        drop_cache: bool = False,
        invent_finish: bool = False,
        drop_citations: bool = False,
    ) -> None:
        self.invent_finish = invent_finish
        self.text: list[str] = []
        self.thoughts: list[str] = []
        self.reasoning = reasoning
        self.cut_ok = cut_ok
        self.drop_cache = drop_cache
        self.drop_citations = drop_citations
        self.citations: list[Citation] = []
        self.files: list[FilePart] = []
        self.calls: dict[int, tuple[str, str, list[str]]] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def absorb(self, chunk: Any) -> Iterator[StreamEvent]:
        if not isinstance(chunk, dict):
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "a chunk is not an object")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            details = usage.get("prompt_tokens_details") or {}
            self.usage = Usage(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                cache_read_tokens=None if self.drop_cache else details.get("cached_tokens"),
            )
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or choice.get("message") or {}
            thought = delta.get("reasoning_content")
            if thought and self.reasoning in ("keep", "bare"):
                self.thoughts.append(thought)
                yield ReasoningDelta(text=thought)
            elif thought and self.reasoning == "mix":
                self.text.append(thought)
                yield Delta(text=thought)
            content = delta.get("content")
            if content:
                self.text.append(content)
                yield Delta(text=content)
            for position, call in enumerate(delta.get("tool_calls") or []):
                index = call.get("index", position)
                function = call.get("function") or {}
                fragment = function.get("arguments") or ""
                known = self.calls.get(index)
                if known is None:
                    known = (call.get("id") or f"call_{index}", function["name"], [])
                    self.calls[index] = known
                elif not fragment:
                    continue
                known[2].append(fragment)
                yield ToolCallDelta(
                    index=index, call_id=known[0], name=known[1], arguments_fragment=fragment
                )
            yield from self._provided(delta)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
                if self.cut_ok and self.finish_reason == "length":
                    self.finish_reason = "stop"

    def _provided(self, delta: dict[str, Any]) -> Iterator[StreamEvent]:
        for note in [] if self.drop_citations else delta.get("annotations") or []:
            cited = note["url_citation"]
            source = CitationSource(type="url", url=cited["url"], title=cited.get("title"))
            citation = Citation(source=source, start=cited["start_index"], end=cited["end_index"])
            self.citations.append(citation)
            yield citation
        for image in delta.get("images") or []:
            media_type, data = image["image_url"]["url"].removeprefix("data:").split(";base64,")
            self.files.append(FilePart(media_type=media_type, data=data))
            yield FileDelta(media_type=media_type, data=data)

    def receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        calls = [
            ToolCall(call_id=call_id, name=name, arguments=parse_json_text("".join(parts))[1])
            for _, (call_id, name, parts) in sorted(self.calls.items())
        ]
        return build_receipt(
            request,
            adapter=_DESCRIPTOR,
            text="".join(self.text) or None,
            tool_calls=calls,
            finish_reason=self.finish_reason or ("stop" if self.invent_finish else None),
            usage=self.usage,
            reasoning=[
                ReasoningPart(
                    text="".join(self.thoughts),
                    provider_metadata=None
                    if self.reasoning == "bare"
                    else {"openai": {"field": "reasoning_content"}},
                )
            ]
            if self.thoughts
            else [],
            citations=self.citations,
            files=self.files,
        )


class _SSEFrames(abc.ABC):
    """The SSE side of a client, shared by the sync and async variants and by both doubled
    protocols: bytes in, each frame's ``data`` to ``_absorb``, with the byte bound kept; the
    protocol's ``_absorb`` tracks its completion marker."""

    def __init__(self, bound: int, *, leak: bool | str) -> None:
        self.bound = bound
        self.leak = leak
        self.complete = False
        self._read = 0
        self._pending = b""

    def feed(self, piece: bytes) -> list[StreamEvent]:
        self._read += len(piece)
        if self._read > self.bound:
            raise PortError(ErrorCode.RUNTIME_RESPONSE_TOO_LARGE, "too large")
        self._pending += piece
        events: list[StreamEvent] = []
        while b"\n\n" in self._pending:
            frame, self._pending = self._pending.split(b"\n\n", 1)
            for line in frame.split(b"\n"):
                if line.startswith(b"data:"):
                    events += self._absorb(line[5:].strip())
        return events

    @abc.abstractmethod
    def _absorb(self, data: bytes) -> list[StreamEvent]: ...


class _Frames(_SSEFrames):
    """Chat completions' frames: ``[DONE]`` (or a finish reason) completes the stream; only
    ``[DONE]`` when ``done_only``."""

    def __init__(
        self,
        bound: int,
        *,
        leak: bool | str,
        reasoning: str = "keep",
        done_only: bool = False,
        **quirks: bool,
    ) -> None:
        super().__init__(bound, leak=leak)
        self.done_only = done_only
        self.turn = _Turn(reasoning, **quirks)

    def _absorb(self, data: bytes) -> list[StreamEvent]:
        if data == b"[DONE]":
            self.complete = True
            return []
        try:
            chunk = json.loads(data)
        except ValueError:
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "malformed frame") from None
        if isinstance(chunk, dict) and "error" in chunk:
            raise _error_frame(chunk["error"], leak=self.leak)
        events = list(self.turn.absorb(chunk))
        finished = self.turn.finish_reason is not None and not self.done_only
        self.complete = self.complete or finished
        return events


class _Body:
    """A non-streamed answer: bytes in, within the bound; then its receipt."""

    def __init__(
        self, bound: int, *, leak: bool | str, reasoning: str = "keep", **quirks: bool
    ) -> None:
        self.bound = bound
        self.leak = leak
        self.reasoning = reasoning
        self.quirks = quirks
        self.data = bytearray()

    def feed(self, piece: bytes) -> None:
        self.data += piece
        if len(self.data) > self.bound:
            raise PortError(ErrorCode.RUNTIME_RESPONSE_TOO_LARGE, "too large")

    def receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        return _completion(
            bytes(self.data), request, leak=self.leak, reasoning=self.reasoning, **self.quirks
        )


def _completion(
    data: bytes,
    request: ExecutionRequest,
    *,
    leak: bool | str,
    reasoning: str = "keep",
    **quirks: bool,
) -> ExecutionReceipt:
    """The receipt of a non-streamed answer."""
    try:
        completion = json.loads(data)
    except ValueError:
        raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "not JSON") from None
    if isinstance(completion, dict) and "error" in completion:
        raise _error_frame(completion["error"], leak=leak)
    turn = _Turn(reasoning, **quirks)
    for _ in turn.absorb(completion):
        pass
    return turn.receipt(request)


def _chat_message(message: Message) -> dict[str, Any]:
    """A message as chat completions takes it."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    return wire


STARVED: Final = 0.6
"""Seconds a ``starved`` client sleeps: past the stall cases' half-second read timeout."""


class _ChatClient:
    """What the sync and async clients share: the URL, the body, the bound, the flags."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        read_timeout: float,
        buffer: bool = False,
        truncation_ok: bool = False,
        leak: bool | str = False,
        ignore_bound: bool = False,
        keep_open: bool = False,
        ignore_cancel: bool = False,
        drop_reasoning: bool = False,
        mix_reasoning: bool = False,
        bare_reasoning: bool = False,
        starved: str = "",
        cut_ok: bool = False,
        drop_cache: bool = False,
        measure_late: bool = False,
        done_only: bool = False,
        invent_finish: bool = False,
        no_format: bool = False,
        forgets_results: bool = False,
        drop_citations: bool = False,
    ) -> None:
        self._no_format = no_format
        """Asks for no structured output (no ``response_format``)."""
        self._forgets_results = forgets_results
        """Leaves the tool results out of the conversation it sends."""
        self._quirks = {
            "cut_ok": cut_ok,
            "drop_cache": drop_cache,
            "invent_finish": invent_finish,
            "drop_citations": drop_citations,
        }
        self._done_only = done_only
        """Only ``[DONE]`` completes a stream (a finish reason and a clean end do not)."""
        self._measure_late = measure_late
        """``execute`` reads the whole body before it counts it (as an SDK buffers it)."""
        self._starved = starved
        """Its first call sleeps through a half-second read window, then times out by its own
        clock, as a thread a loaded machine starved: before its first read (``"frames"``, the
        upstream's frames unread) or before it sends (``"request"``, the upstream sees
        nothing)."""
        self._read_timeout = read_timeout
        self._reasoning = (
            "drop"
            if drop_reasoning
            else "mix"
            if mix_reasoning
            else "bare"
            if bare_reasoning
            else "keep"
        )
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._timeout = httpx.Timeout(read_timeout, connect=5.0)
        self._buffer = buffer
        self._truncation_ok = truncation_ok
        self._leak = leak
        self._ignore_bound = ignore_bound
        self._keep_open = keep_open
        self._ignore_cancel = ignore_cancel
        self._kept: list[object] = []

    def descriptor(self) -> AdapterDescriptor:
        return _DESCRIPTOR

    def _starve(self, where: str, request: ExecutionRequest | None = None) -> None:
        if self._starved != where:
            return
        self._starved = ""
        time.sleep(STARVED)
        if self._read_timeout >= STARVED:
            return
        if request is not None:  # sent, but the upstream reads it only after the call ended
            late = threading.Timer(STARVED / 2, self._send_and_go, (request,))
            late.daemon = True
            late.start()
        raise PortError(ErrorCode.RUNTIME_TIMEOUT, "read timed out (starved)")

    def _send_and_go(self, request: ExecutionRequest) -> None:
        url = httpx.URL(self._url)
        body = json.dumps(self._body(request, True)).encode()
        head = (
            f"POST {url.raw_path.decode()} HTTP/1.1\r\nHost: {url.netloc.decode()}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Authorization: {self._headers['Authorization']}\r\nConnection: close\r\n\r\n"
        )
        with socket.create_connection((url.host, url.port or 80), timeout=5) as sock:
            sock.sendall(head.encode() + body)

    def _bound(self, request: ExecutionRequest) -> int:
        if self._ignore_bound:
            return 1 << 62
        bound = request.interaction.runtime_policy.get("max_response_bytes", DEFAULT_BOUND)
        return bound if isinstance(bound, int) else DEFAULT_BOUND

    def _body(self, request: ExecutionRequest, stream: bool) -> dict[str, Any]:
        interaction = request.interaction
        body: dict[str, Any] = {
            "model": "m",
            "messages": [
                _chat_message(m)
                for m in interaction.messages
                if not (self._forgets_results and m.role == "tool")
            ],
        }
        if interaction.tools:
            body["tools"] = [
                {"type": "function", "function": t.model_dump(exclude_none=True)}
                for t in interaction.tools
            ]
        if interaction.output_schema.get("type") != "string" and not self._no_format:
            schema = {"name": "answer", "schema": dict(interaction.output_schema)}
            body["response_format"] = {"type": "json_schema", "json_schema": schema}
        if stream:
            body["stream"] = True
        return body

    def _body_reader(self, request: ExecutionRequest) -> Any:
        bound = self._bound(request)
        return _Body(bound, leak=self._leak, reasoning=self._reasoning, **self._quirks)

    def _frames(self, request: ExecutionRequest) -> Any:
        bound = self._bound(request)
        return _Frames(
            bound,
            leak=self._leak,
            reasoning=self._reasoning,
            done_only=self._done_only,
            **self._quirks,
        )

    def _refused(self, response: httpx.Response, body: bytes) -> PortError:
        return _status_error(response.status_code, response.headers, body, leak=self._leak)

    def _finish(self, frames: _Frames, request: ExecutionRequest) -> ExecutionReceipt:
        if not frames.complete and not self._truncation_ok:
            raise PortError(ErrorCode.RUNTIME_STREAM_TRUNCATED, "no finish_reason or [DONE]")
        return frames.turn.receipt(request)

    @contextlib.contextmanager
    def _reading(self, frames: _Frames | None, held: list[Any]) -> Iterator[None]:
        """Map transport failures to ``PortError`` (none once the stream was complete); when
        the call is stopped, a ``keep_open`` client keeps what ``held`` holds (the response
        and its body iterator: dropping the iterator would close the connection when it is
        collected), as a leaky adapter would."""
        try:
            yield
        except httpx.TransportError as error:
            mapped = self._transport(error, frames)
            if mapped is not None:
                raise mapped from None
        except PortError:
            raise
        except BaseException:
            if self._keep_open:
                self._kept += held
                held.clear()
            raise

    def _transport(self, error: Exception, frames: _Frames | None) -> PortError | None:
        """The PortError a transport failure maps to (none once the stream was complete)."""
        if frames is not None and frames.complete:
            return None
        if isinstance(error, httpx.TimeoutException):
            return PortError(ErrorCode.RUNTIME_TIMEOUT, "read timeout")
        return PortError(ErrorCode.RUNTIME_UNAVAILABLE, "connection failed")


class MiniChatAdapter(_ChatClient, RuntimeAdapter):
    """A minimal OpenAI-compatible client; each flag breaks one promise on purpose."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._client = httpx.Client(timeout=self._timeout)

    def close(self) -> None:
        for kept in self._kept:
            if isinstance(kept, httpx.Response):
                kept.close()
        self._kept.clear()
        self._client.close()

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        self._starve("request", request)
        body = self._body_reader(request)
        with (
            self._reading(None, []),
            self._client.stream(
                "POST", self._url, json=self._body(request, False), headers=self._headers
            ) as response,
        ):
            if response.status_code != 200:
                raise self._refused(response, response.read())
            pieces = [response.read()] if self._measure_late else response.iter_bytes()
            for piece in pieces:
                body.feed(piece)
        return body.receipt(request)

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        held: list[StreamEvent] = []
        emit = held.append if self._buffer else sink
        try:
            receipt = self._stream(request, emit)
        except PortError as error:
            for event in held:
                sink(event)
            sink(Failed(code=error.code, message=error.message))
            raise
        for event in held:
            sink(event)
        sink(Complete(receipt=receipt))
        return receipt

    def _stream(self, request: ExecutionRequest, emit: Sink) -> ExecutionReceipt:
        self._starve("request", request)
        frames = self._frames(request)
        held: list[Any] = []
        try:
            with self._reading(frames, held):
                response = self._client.send(
                    self._client.build_request(
                        "POST", self._url, json=self._body(request, True), headers=self._headers
                    ),
                    stream=True,
                )
                held.append(response)
                if response.status_code != 200:
                    raise self._refused(response, response.read())
                pieces = response.iter_bytes()
                held.append(pieces)
                self._starve("frames")
                for piece in pieces:
                    for event in frames.feed(piece):
                        emit(event)
        finally:
            if held:
                held[0].close()
        return self._finish(frames, request)


class AsyncMiniChatAdapter(_ChatClient, AsyncRuntimeAdapter):
    """The same client over ``httpx.AsyncClient``; ``ignore_cancel`` swallows a cancellation
    and reads on, ``keep_open`` leaves the response open when the call is stopped."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._client = httpx.AsyncClient(timeout=self._timeout)

    async def aclose(self) -> None:
        for kept in self._kept:
            if isinstance(kept, httpx.Response):
                await kept.aclose()
        self._kept.clear()
        await self._client.aclose()

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        body = self._body_reader(request)
        with self._reading(None, []):
            async with self._client.stream(
                "POST", self._url, json=self._body(request, False), headers=self._headers
            ) as response:
                if response.status_code != 200:
                    raise self._refused(response, await response.aread())
                async for piece in response.aiter_bytes():
                    body.feed(piece)
        return body.receipt(request)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        held: list[StreamEvent] = []
        try:
            receipt = await self._stream(request, sink, held)
        except PortError as error:
            for event in held:
                await deliver(sink, event)
            await deliver(sink, Failed(code=error.code, message=error.message))
            raise
        for event in held:
            await deliver(sink, event)
        await deliver(sink, Complete(receipt=receipt))
        return receipt

    async def _stream(
        self, request: ExecutionRequest, sink: AsyncSink, held: list[StreamEvent]
    ) -> ExecutionReceipt:
        frames = self._frames(request)
        open_: list[Any] = []
        try:
            with self._reading(frames, open_):
                response = await self._client.send(
                    self._client.build_request(
                        "POST", self._url, json=self._body(request, True), headers=self._headers
                    ),
                    stream=True,
                )
                open_.append(response)
                if response.status_code != 200:
                    raise self._refused(response, await response.aread())
                pieces = response.aiter_bytes()
                open_.append(pieces)
                async for piece in pieces:
                    for event in frames.feed(piece):
                        if self._buffer:
                            held.append(event)
                            continue
                        try:
                            await deliver(sink, event)
                        except asyncio.CancelledError:
                            if not self._ignore_cancel:
                                raise
        finally:
            if open_:
                await open_[0].aclose()
        return self._finish(frames, request)


# --------------------------------------------------------------------------------------------
# a minimal Messages API client (Anthropic), with extended thinking
# --------------------------------------------------------------------------------------------

_MESSAGES_DESCRIPTOR = AdapterDescriptor(
    id="mini-messages", version="0.0.0", capabilities=["streaming", "text", "tool_calls"]
)


_STOP_REASONS: Final[dict[str, Finish]] = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
    "pause_turn": "pause",
}


class _MessagesTurn:
    """One Messages API turn: content blocks in, events and a receipt out; the input count
    holds the cache's reads and writes (ADR 0051)."""

    def __init__(self, *, block_index: bool = False) -> None:
        self.block_index = block_index
        """Number each call by its content block (the broken variant), not by its place
        among the turn's calls."""
        self.labels: list[int] = []
        self.text: list[str] = []
        self.blocks: list[tuple[list[str], dict[str, Any]]] = []
        self.calls: list[tuple[str, str, list[str]]] = []
        self.at: dict[int, tuple[str, int]] = {}
        self.finish_reason: str | None = None
        self.usage = [0, 0]
        self.cache = [0, 0]
        self.reported = False

    def input_usage(self, usage: dict[str, Any]) -> None:
        self.cache = [
            usage.get("cache_read_input_tokens") or 0,
            usage.get("cache_creation_input_tokens") or 0,
        ]
        self.usage[0] = usage.get("input_tokens", 0) + sum(self.cache)

    def start(self, index: int, block: dict[str, Any]) -> Iterator[StreamEvent]:
        kind = block.get("type")
        if kind == "tool_use":
            number = len(self.calls)
            self.calls.append((block.get("id") or f"call_{number}", block["name"], []))
            self.at[index] = ("call", number)
            self.labels.append(index if self.block_index else number)
            yield ToolCallDelta(
                index=self.labels[number], call_id=self.calls[number][0], name=block["name"]
            )
        elif kind in ("thinking", "redacted_thinking"):
            metadata = {"type": kind}
            if kind == "redacted_thinking":
                metadata["data"] = block.get("data", "")
            self.blocks.append(([], metadata))
            self.at[index] = ("thought", len(self.blocks) - 1)
            if block.get("thinking"):
                yield from self.thought(index, block["thinking"])
            if block.get("signature"):
                self.blocks[-1][1]["signature"] = block["signature"]

    def thought(self, index: int, piece: str) -> Iterator[StreamEvent]:
        if piece:
            self.blocks[self.at[index][1]][0].append(piece)
            yield ReasoningDelta(text=piece)

    def delta(self, index: int, delta: dict[str, Any]) -> Iterator[StreamEvent]:
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            self.text.append(delta["text"])
            yield Delta(text=delta["text"])
        elif kind == "thinking_delta":
            yield from self.thought(index, delta.get("thinking") or "")
        elif kind == "signature_delta":
            self.blocks[self.at[index][1]][1]["signature"] = delta["signature"]
        elif kind == "input_json_delta" and delta.get("partial_json"):
            call_id, name, fragments = self.calls[self.at[index][1]]
            fragments.append(delta["partial_json"])
            yield ToolCallDelta(
                index=self.labels[self.at[index][1]],
                call_id=call_id,
                name=name,
                arguments_fragment=delta["partial_json"],
            )

    def stop(self, index: int) -> Iterator[StreamEvent]:
        what, number = self.at.get(index, ("text", 0))
        if what == "call" and not self.calls[number][2]:
            call_id, name, fragments = self.calls[number]
            fragments.append("{}")
            yield ToolCallDelta(
                index=self.labels[number], call_id=call_id, name=name, arguments_fragment="{}"
            )

    def _provided(self, delta: dict[str, Any]) -> Iterator[StreamEvent]:
        for note in [] if self.drop_citations else delta.get("annotations") or []:
            cited = note["url_citation"]
            source = CitationSource(type="url", url=cited["url"], title=cited.get("title"))
            citation = Citation(source=source, start=cited["start_index"], end=cited["end_index"])
            self.citations.append(citation)
            yield citation
        for image in delta.get("images") or []:
            media_type, data = image["image_url"]["url"].removeprefix("data:").split(";base64,")
            self.files.append(FilePart(media_type=media_type, data=data))
            yield FileDelta(media_type=media_type, data=data)

    def receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        calls = [
            ToolCall(call_id=call_id, name=name, arguments=parse_json_text("".join(parts))[1])
            for call_id, name, parts in self.calls
        ]
        return build_receipt(
            request,
            adapter=_MESSAGES_DESCRIPTOR,
            text="".join(self.text) or None,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            finish=_STOP_REASONS.get(self.finish_reason or "", "other")
            if self.finish_reason
            else None,
            usage=Usage(
                input_tokens=self.usage[0],
                output_tokens=self.usage[1],
                cache_read_tokens=self.cache[0],
                cache_write_tokens=self.cache[1],
            )
            if self.reported
            else None,
            reasoning=[
                ReasoningPart(text="".join(texts), provider_metadata={"anthropic": metadata})
                for texts, metadata in self.blocks
            ],
        )


class _MessagesFrames(_SSEFrames):
    """The Messages API's event stream: ``message_stop`` completes it. ``late_usage`` reads
    the usage of ``message_delta`` only, so the cache counts ``message_start`` alone carries
    are lost (the broken variant)."""

    def __init__(
        self, bound: int, *, leak: bool | str, block_index: bool = False, late_usage: bool = False
    ) -> None:
        super().__init__(bound, leak=leak)
        self.turn = _MessagesTurn(block_index=block_index)
        self.late_usage = late_usage

    def _absorb(self, data: bytes) -> list[StreamEvent]:
        try:
            value = json.loads(data)
        except ValueError:
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "malformed frame") from None
        turn = self.turn
        kind = value.get("type") if isinstance(value, dict) else None
        if kind == "error":
            raise _error_frame(value.get("error"), leak=self.leak)
        if kind == "message_start":
            usage = value["message"].get("usage")
            if usage:
                turn.reported = True
                turn.input_usage({} if self.late_usage else usage)
        elif kind == "content_block_start":
            return list(turn.start(value["index"], value["content_block"]))
        elif kind == "content_block_delta":
            return list(turn.delta(value["index"], value["delta"]))
        elif kind == "content_block_stop":
            return list(turn.stop(value["index"]))
        elif kind == "message_delta":
            turn.finish_reason = value["delta"].get("stop_reason")
            if value.get("usage"):
                turn.reported = True
                turn.usage[1] = value["usage"].get("output_tokens", 0)
        elif kind == "message_stop":
            self.complete = True
        return []


class _MessagesBody(_Body):
    def receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        try:
            message = json.loads(bytes(self.data))
        except ValueError:
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "not JSON") from None
        if message.get("type") == "error":
            raise _error_frame(message.get("error"), leak=self.leak)
        turn = _MessagesTurn()
        for index, block in enumerate(message.get("content") or []):
            kind = block.get("type")
            if kind == "text":
                turn.text.append(block["text"])
            elif kind == "tool_use":
                turn.calls.append(
                    (block.get("id") or f"call_{len(turn.calls)}", block["name"],
                     [json.dumps(block.get("input", {}))])
                )  # fmt: skip
            else:
                list(turn.start(index, block))
        turn.finish_reason = message.get("stop_reason")
        usage = message.get("usage")
        if usage:
            turn.reported = True
            turn.input_usage(usage)
            turn.usage[1] = usage.get("output_tokens", 0)
        return turn.receipt(request)


def _anthropic_messages(request: ExecutionRequest, *, lose_signature: bool) -> dict[str, Any]:
    """The request's messages as the Messages API takes them, thinking blocks sent back first
    in each assistant turn (``lose_signature`` drops their signatures: the broken variant)."""
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for message in request.interaction.messages:
        if message.role in ("system", "developer"):
            system.append(message.content)
        elif message.role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            messages.append({"role": "user", "content": [result]})
        elif message.role == "assistant":
            content: list[dict[str, Any]] = []
            for part in message.reasoning or []:
                kept = (part.provider_metadata or {}).get("anthropic")
                kept = kept if isinstance(kept, dict) else {}
                if kept.get("type") == "redacted_thinking":
                    content.append({"type": "redacted_thinking", "data": kept.get("data")})
                    continue
                block: dict[str, Any] = {"type": "thinking", "thinking": part.text}
                if "signature" in kept and not lose_signature:
                    block["signature"] = kept["signature"]
                content.append(block)
            if message.content:
                content.append({"type": "text", "text": message.content})
            for call in message.tool_calls or []:
                content.append(
                    {"type": "tool_use", "id": call.call_id, "name": call.name,
                     "input": call.arguments}
                )  # fmt: skip
            messages.append({"role": "assistant", "content": content})
        else:
            messages.append({"role": "user", "content": message.content})
    body: dict[str, Any] = {
        "model": "m",
        "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": messages,
    }
    if system:
        body["system"] = "\n".join(system)
    return body


class _Messages:
    """What turns a mini chat client into a Messages API client (sync or async)."""

    _lose_signature: bool
    _block_index: bool = False
    _late_usage: bool = False

    def _setup(
        self, base_url: str, api_key: str, lose_signature: bool, late_usage: bool = False
    ) -> None:
        self._url = base_url.rstrip("/") + "/v1/messages"
        self._headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
        self._lose_signature = lose_signature
        self._late_usage = late_usage

    def descriptor(self) -> AdapterDescriptor:
        return _MESSAGES_DESCRIPTOR

    def _body(self, request: ExecutionRequest, stream: bool) -> dict[str, Any]:
        body = _anthropic_messages(request, lose_signature=self._lose_signature)
        if stream:
            body["stream"] = True
        return body

    def _frames(self, request: ExecutionRequest) -> Any:
        bound = self._bound(request)  # type: ignore[attr-defined]
        return _MessagesFrames(  # type: ignore[attr-defined]
            bound, leak=self._leak, block_index=self._block_index, late_usage=self._late_usage
        )

    def _body_reader(self, request: ExecutionRequest) -> Any:
        return _MessagesBody(self._bound(request), leak=self._leak)  # type: ignore[attr-defined]


class MiniMessagesAdapter(_Messages, MiniChatAdapter):
    """A minimal Anthropic Messages API client with extended thinking: thinking blocks
    streamed as ``ReasoningDelta`` and sent back, signatures intact, in the next turn;
    ``lose_signature`` sends them back without their signatures; ``late_usage`` loses the
    cache counts only ``message_start`` carries."""

    def __init__(
        self,
        *,
        lose_signature: bool = False,
        block_index: bool = False,
        late_usage: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._setup(options["base_url"], options["api_key"], lose_signature, late_usage)
        self._block_index = block_index


class AsyncMiniMessagesAdapter(_Messages, AsyncMiniChatAdapter):
    """``MiniMessagesAdapter`` over ``httpx.AsyncClient``."""

    def __init__(self, *, lose_signature: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self._setup(options["base_url"], options["api_key"], lose_signature)


class AsyncScripted(AsyncRuntimeAdapter):
    """``ScriptedRuntime`` on the event loop: the turn is played in-process, then its events
    are delivered one by one, each a suspension point (where a cancellation lands).
    ``ignore_cancel`` swallows a cancellation and delivers on; ``no_await`` calls the sink and
    drops what it returns (no backpressure)."""

    def __init__(
        self, scenario: Scenario, *, ignore_cancel: bool = False, no_await: bool = False
    ) -> None:
        self._inner = ScriptedRuntime(scenario)
        self._ignore_cancel = ignore_cancel
        self._no_await = no_await

    def descriptor(self) -> AdapterDescriptor:
        return self._inner.descriptor()

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        await asyncio.sleep(0)
        return self._inner.execute(request)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        events: list[StreamEvent] = []
        try:
            receipt = self._inner.execute_streaming(request, events.append)
        except PortError as error:
            failure: PortError | None = error
        else:
            failure = None
        for event in events:
            try:
                await asyncio.sleep(0)
                if self._no_await:
                    sink(event)
                else:
                    await deliver(sink, event)
            except asyncio.CancelledError:
                if not self._ignore_cancel:
                    raise
        if failure is not None:
            raise failure
        return receipt


# --------------------------------------------------------------------------------------------
# composites
# --------------------------------------------------------------------------------------------


class MiniFallback(RuntimeAdapter):
    """Tries members in order while a member failed retryably and showed the caller nothing.
    ``moves_on_after_delta`` and ``forwards_failed`` each break one composite rule."""

    def __init__(
        self,
        members: list[RuntimeAdapter],
        *,
        moves_on_after_delta: bool = False,
        forwards_failed: bool = False,
    ) -> None:
        self.members = members
        self._moves_on = moves_on_after_delta
        self._forwards = forwards_failed

    def descriptor(self) -> AdapterDescriptor:
        first = self.members[0].descriptor()
        return AdapterDescriptor(
            id="mini-fallback", version="0.0.0", capabilities=[*first.capabilities, "composite"]
        )

    def close(self) -> None:
        for member in self.members:
            closer = getattr(member, "close", None)
            if callable(closer):
                closer()

    def _next(self, position: int, error: PortError, shown: bool) -> bool:
        last = position == len(self.members) - 1
        return not last and error.retryable and (self._moves_on or not shown)

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        for position, member in enumerate(self.members):
            try:
                return member.execute(request)
            except PortError as error:
                if not self._next(position, error, False):
                    raise
        raise AssertionError("a fallback has members")

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        for position, member in enumerate(self.members):
            watch = _MemberWatch(sink, forward_failed=self._forwards)
            try:
                return member.execute_streaming(request, watch)
            except PortError as error:
                if self._next(position, error, watch.shown):
                    continue
                if watch.held is not None:
                    sink(watch.held)
                raise
        raise AssertionError("a fallback has members")


class _MemberWatch:
    """One member's sink: passes its events on, notes whether progress was shown, and holds
    its ``Failed`` back (unless told to forward it)."""

    def __init__(self, sink: Sink, *, forward_failed: bool) -> None:
        self.sink = sink
        self.forward_failed = forward_failed
        self.shown = False
        self.held: Failed | None = None

    def __call__(self, event: StreamEvent) -> None:
        if isinstance(event, Failed) and not self.forward_failed:
            self.held = event
            return
        self.shown = self.shown or isinstance(event, Delta | ReasoningDelta | ToolCallDelta)
        self.sink(event)


# --------------------------------------------------------------------------------------------
# running the suite inside a test
# --------------------------------------------------------------------------------------------


class _Reports:
    """A plugin for an inner run: keeps every test report."""

    def __init__(self) -> None:
        self.reports: list[pytest.TestReport] = []
        self.collect: list[pytest.CollectReport] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.append(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect.append(report)


def run_inner(folder: Path, *args: str) -> _Reports:
    """Run pytest in-process on ``folder`` with its own empty configuration (the caller's
    settings, such as ``filterwarnings = error``, stay out) and keep the reports."""
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    collector = _Reports()
    targets = [] if any(arg.startswith(str(folder)) for arg in args) else [str(folder)]
    pytest.main(
        [
            "-c",
            str(folder / "pytest.ini"),
            "--rootdir",
            str(folder),
            "--import-mode=importlib",
            "-p",
            "no:cacheprovider",
            "-q",
            *args,
            *targets,
        ],
        plugins=[collector],
    )
    return collector


def outcomes(reports: _Reports) -> dict[str, tuple[str, str]]:
    """nodeid → (outcome, long representation), the call phase winning over setup."""
    seen: dict[str, tuple[str, str]] = {}
    for report in reports.reports:
        if report.when == "call" or report.outcome != "passed":
            outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
            seen[report.nodeid] = (outcome, str(report.longrepr))
    return seen
