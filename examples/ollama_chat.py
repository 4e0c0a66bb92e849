"""An adapter written from nothing but runport's ports — Ollama's native ``POST /api/chat``, which
streams newline-delimited JSON — and the ``WireProtocol`` that lets the conformance suite
serve it, so the adapter is held to the whole streaming law, faults included
(docs/adapter-guide.md; tests/test_example_ollama.py runs the suite on it, sync and async).
runport ships this API as ``runport.ollama``; this file shows what an author writes.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, ClassVar

import httpx

from runport.conformance import (
    Call,
    Case,
    Frame,
    Text,
    Thought,
    Transcript,
    UsageStep,
    WireContext,
    WireProtocol,
    WireRequest,
    calls_whole,
    json_bytes,
)
from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.core import build_receipt
from runport.ports import (
    AsyncRuntimeAdapter,
    AsyncSink,
    PortError,
    RuntimeAdapter,
    Sink,
    deliver,
    max_response_bytes_for,
)

# -- the protocol, as the conformance suite serves it ------------------------------------------


class OllamaChat(WireProtocol):
    """``POST {base_url}/api/chat``: one JSON object per line, ``"done": true`` the
    completion marker; each tool call whole (arguments an object, no id), thinking in
    ``message.thinking``, token counts on the last line."""

    name = "ollama-chat"
    endpoint = "POST {base_url}/api/chat"
    content_type = "application/x-ndjson"
    finish_reasons: ClassVar = {"tool_calls": "stop"}  # a turn with tool calls ends "stop"

    def recognise(self, request: WireRequest) -> bool | str:
        if request.path != "/api/chat":
            return self.endpoint
        return not (isinstance(request.json, dict) and request.json.get("stream") is False)

    def play(self, case: Case) -> Case:
        played = calls_whole(super().play(case))  # each call whole, announced then its arguments
        steps = tuple(replace(s, call_id=None) if isinstance(s, Call) else s for s in played.steps)
        return played if steps == played.steps else replace(played, steps=steps)

    def reasoning(self, case: Case) -> list[dict[str, Any]]:
        thinking = "".join(s.text for s in case.steps if isinstance(s, Thought))
        return [{"text": thinking}] if thinking else []

    def frame(self, payload: bytes) -> bytes:
        return payload + b"\n"

    def _line(self, context: WireContext, message: dict[str, Any], **more: Any) -> bytes:
        line = {"model": context.model, "created_at": "2026-01-01T00:00:00Z"}
        return self.frame(json_bytes({**line, "message": {"role": "assistant", **message}, **more}))

    def _last(self, case: Case) -> dict[str, Any]:
        last: dict[str, Any] = {"done": True, "done_reason": case.finish_reason}
        for step in case.steps:
            if isinstance(step, UsageStep):
                last |= {"prompt_eval_count": step.input_tokens, "eval_count": step.output_tokens}
        return last

    def stream(self, case: Case, context: WireContext) -> Transcript:
        frames: list[Frame] = []
        for step, after in itertools.pairwise((*case.steps, None)):
            if isinstance(step, Text):
                frames.append(Frame(self._line(context, {"content": step.text}, done=False), 1))
            elif isinstance(step, Thought):
                message: dict[str, Any] = {"content": "", "thinking": step.text}
                frames.append(Frame(self._line(context, message, done=False), 1))
            elif isinstance(step, Call) and step.name is not None and isinstance(after, Call):
                call = {"function": {"name": step.name, "arguments": json.loads(after.fragment)}}
                message = {"content": "", "tool_calls": [call]}
                frames.append(Frame(self._line(context, message, done=False), 2))
        closing = [self._line(context, {"content": ""}, **self._last(case))]
        return Transcript(frames, closing=closing)

    def body(self, case: Case, context: WireContext) -> bytes:
        message: dict[str, Any] = {
            "content": "".join(s.text for s in case.steps if isinstance(s, Text))
        }
        thinking = "".join(s.text for s in case.steps if isinstance(s, Thought))
        if thinking:
            message["thinking"] = thinking
        calls = [
            {"function": {"name": s.name, "arguments": json.loads(after.fragment)}}
            for s, after in zip(case.steps, case.steps[1:], strict=False)
            if isinstance(s, Call) and s.name is not None and isinstance(after, Call)
        ]
        if calls:
            message["tool_calls"] = calls
        return self._line(context, message, **self._last(case))

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        return self.frame(json_bytes({"error": f"{context.marker} model runner has stopped"}))

    def error_body(self, status: int, context: WireContext) -> bytes:
        return json_bytes({"error": f"{context.marker} scripted HTTP {status}"})


# -- the adapter --------------------------------------------------------------------------------

DESCRIPTOR = AdapterDescriptor(
    id="ollama-chat",
    version="0.1.0",
    capabilities=["streaming", "structured_output", "text", "tool_calls"],
)


def _status_error(response: httpx.Response) -> PortError:
    status = response.status_code
    if status == 429:
        retry = response.headers.get("Retry-After", "")
        retry_ms = int(retry) * 1000 if retry.isdigit() else None
        return PortError(ErrorCode.RUNTIME_RATE_LIMITED, "HTTP 429", retry_after_ms=retry_ms)
    if status == 408:
        return PortError(ErrorCode.RUNTIME_TIMEOUT, "HTTP 408")
    code = ErrorCode.RUNTIME_UNAVAILABLE if status >= 500 else ErrorCode.RUNTIME_PERMANENT
    return PortError(code, f"HTTP {status}")


def _transport_error(error: httpx.TransportError) -> PortError:
    if isinstance(error, httpx.TimeoutException):
        return PortError(ErrorCode.RUNTIME_TIMEOUT, "Ollama sent nothing within the read timeout")
    return PortError(ErrorCode.RUNTIME_UNAVAILABLE, "the connection to Ollama failed")


class Turn:
    """Sans-IO: the body's bytes in (``feed``), events out; then the receipt. Shared by the
    sync and the async adapter, so they differ only where they read and deliver."""

    def __init__(self, request: ExecutionRequest) -> None:
        self.request = request
        self.bound = max_response_bytes_for(request, None)
        self.read = 0
        self.pending = b""
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[ToolCall] = []
        self.done: dict[str, Any] | None = None

    def feed(self, piece: bytes) -> Iterator[StreamEvent]:
        self.read += len(piece)
        if self.read > self.bound:
            raise PortError(ErrorCode.RUNTIME_RESPONSE_TOO_LARGE, "the answer is too large")
        self.pending += piece
        *lines, self.pending = self.pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield from self.absorb(line)

    def absorb(self, line: bytes) -> Iterator[StreamEvent]:
        try:
            chunk = json.loads(line)
        except ValueError:
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "a line is not JSON") from None
        if not isinstance(chunk, dict) or not isinstance(chunk.get("message", {}), dict):
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "a line is not a chat chunk")
        if "error" in chunk:
            raise PortError(ErrorCode.RUNTIME_UNAVAILABLE, "Ollama failed mid-answer")
        message = chunk.get("message", {})
        if message.get("thinking"):
            self.thinking.append(message["thinking"])
            yield ReasoningDelta(text=message["thinking"])
        if message.get("content"):
            self.text.append(message["content"])
            yield Delta(text=message["content"])
        for call in message.get("tool_calls") or []:
            function = call["function"]
            index, name, arguments = len(self.calls), function["name"], function["arguments"]
            call_id = call.get("id") or f"call_{index}"
            self.calls.append(ToolCall(call_id=call_id, name=name, arguments=arguments))
            fragment = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
            yield ToolCallDelta(index=index, call_id=call_id, name=name)
            yield ToolCallDelta(
                index=index, call_id=call_id, name=name, arguments_fragment=fragment
            )
        if chunk.get("done") is True:
            self.done = chunk

    def end(self) -> Iterator[StreamEvent]:
        """The body ended: its last line (an unstreamed answer has no newline)."""
        line, self.pending = self.pending, b""
        if line.strip():
            yield from self.absorb(line)

    def receipt(self) -> ExecutionReceipt:
        if self.done is None:
            raise PortError(ErrorCode.RUNTIME_STREAM_TRUNCATED, 'the answer ended before "done"')
        usage = None
        if "prompt_eval_count" in self.done or "eval_count" in self.done:
            usage = Usage(
                input_tokens=self.done.get("prompt_eval_count", 0),
                output_tokens=self.done.get("eval_count", 0),
            )
        thinking = "".join(self.thinking)
        return build_receipt(
            self.request,
            adapter=DESCRIPTOR,
            text="".join(self.text) or None,
            tool_calls=self.calls,
            finish_reason=self.done.get("done_reason"),
            usage=usage,
            reasoning=[ReasoningPart(text=thinking)] if thinking else [],
        )


def _body(request: ExecutionRequest, model: str, stream: bool) -> dict[str, Any]:
    interaction = request.interaction
    body: dict[str, Any] = {
        "model": model,
        "stream": stream,
        "messages": [
            {"role": m.role, "content": m.content if isinstance(m.content, str) else ""}
            for m in interaction.messages
        ],
    }
    if interaction.output_schema.get("type") != "string":
        body["format"] = dict(interaction.output_schema)
    if interaction.tools:
        body["tools"] = [
            {"type": "function", "function": tool.model_dump(mode="json")}
            for tool in interaction.tools
        ]
    return body


class OllamaChatAdapter(RuntimeAdapter):
    reader: type[Turn] = Turn

    def __init__(self, base_url: str, *, model: str, timeout: float = 300.0) -> None:
        self.url = base_url.rstrip("/") + "/api/chat"
        self.model = model
        self.client = httpx.Client(timeout=httpx.Timeout(timeout, connect=5.0))

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    def close(self) -> None:
        self.client.close()

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.execute_streaming(request, lambda event: None, streamed=False)

    def execute_streaming(
        self, request: ExecutionRequest, sink: Sink, *, streamed: bool = True
    ) -> ExecutionReceipt:
        turn = self.reader(request)
        try:
            body = _body(request, self.model, streamed)
            with self.client.stream("POST", self.url, json=body) as response:
                if response.status_code != 200:
                    raise _status_error(response)
                for piece in response.iter_bytes():
                    for event in turn.feed(piece):
                        sink(event)  # a sink that raises stops the call here, unwrapped
            for event in turn.end():
                sink(event)
            receipt = turn.receipt()
        except httpx.TransportError as error:
            if turn.done is None:
                mapped = _transport_error(error)
                sink(Failed(code=mapped.code, message=mapped.message))
                raise mapped from None
            receipt = turn.receipt()
        except PortError as error:
            sink(Failed(code=error.code, message=error.message))
            raise
        sink(Complete(receipt=receipt))
        return receipt


class AsyncOllamaChatAdapter(AsyncRuntimeAdapter):
    reader: type[Turn] = Turn

    def __init__(self, base_url: str, *, model: str, timeout: float = 300.0) -> None:
        self.url = base_url.rstrip("/") + "/api/chat"
        self.model = model
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=5.0))

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    async def aclose(self) -> None:
        await self.client.aclose()

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        async def ignore(event: StreamEvent) -> None:
            return None

        return await self.execute_streaming(request, ignore, streamed=False)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink, *, streamed: bool = True
    ) -> ExecutionReceipt:
        turn = self.reader(request)
        try:
            body = _body(request, self.model, streamed)
            async with self.client.stream("POST", self.url, json=body) as response:
                if response.status_code != 200:
                    raise _status_error(response)
                async for piece in response.aiter_bytes():
                    for event in turn.feed(piece):
                        await deliver(sink, event)
            for event in turn.end():
                await deliver(sink, event)
            receipt = turn.receipt()
        except httpx.TransportError as error:
            if turn.done is None:
                mapped = _transport_error(error)
                await deliver(sink, Failed(code=mapped.code, message=mapped.message))
                raise mapped from None
            receipt = turn.receipt()
        except PortError as error:
            await deliver(sink, Failed(code=error.code, message=error.message))
            raise
        await deliver(sink, Complete(receipt=receipt))
        return receipt
