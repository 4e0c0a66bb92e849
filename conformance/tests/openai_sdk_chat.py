# openai_sdk_chat.py: the official `openai` SDK, wrapped as a runport adapter
from __future__ import annotations

import contextvars
import json
from collections.abc import Iterator
from typing import Any

import httpx2  # the HTTP client this `openai` release is built on
import openai

from runport.contracts import (
    AdapterDescriptor,
    Citation,
    CitationSource,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    FileDelta,
    FilePart,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.core import build_receipt, is_text_schema, parse_json_text
from runport.http import provider_text
from runport.ports import PortError, RuntimeAdapter, Sink, max_response_bytes_for, settle_call

DESCRIPTOR = AdapterDescriptor(
    id="openai-sdk-chat",
    version="0.1.0",
    capabilities=["streaming", "structured_output", "text", "tool_calls"],
)
_BOUND: contextvars.ContextVar[int] = contextvars.ContextVar("bound", default=8 << 20)


class _Bounded(httpx2.SyncByteStream):
    """A response body counted as it is read, before the SDK buffers or parses any of it."""

    def __init__(self, inner: Any, bound: int) -> None:
        self.inner, self.bound = inner, bound

    def __iter__(self) -> Iterator[bytes]:
        seen = 0
        for piece in self.inner:
            seen += len(piece)
            if seen > self.bound:
                raise PortError(ErrorCode.RUNTIME_RESPONSE_TOO_LARGE, "response too large")
            yield piece

    def close(self) -> None:
        self.inner.close()


class _BoundedTransport(httpx2.HTTPTransport):
    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = super().handle_request(request)
        response.stream = _Bounded(response.stream, _BOUND.get())
        return response


def _status(status: int, headers: Any, body: object) -> PortError:
    """A refused request, in runport's words plus the provider's own message (no body)."""
    error = body.get("error", body) if isinstance(body, dict) else body
    said = provider_text(error.get("message")) if isinstance(error, dict) else None
    message = f"HTTP {status}" + (f": {said}" if said else "")
    if status == 429:
        retry = headers.get("retry-after", "")
        after = int(retry) * 1000 if retry.isdigit() else None
        return PortError(ErrorCode.RUNTIME_RATE_LIMITED, message, retry_after_ms=after)
    if status == 408:
        return PortError(ErrorCode.RUNTIME_TIMEOUT, message)
    code = ErrorCode.RUNTIME_UNAVAILABLE if status >= 500 else ErrorCode.RUNTIME_PERMANENT
    return PortError(code, message)


def _error_frame(error: object) -> PortError:
    """An error the provider sent in place of an answer (an `{"error": …}` frame or body)."""
    kind = f"{error.get('type')} {error.get('code')}" if isinstance(error, dict) else ""
    said = provider_text(error.get("message")) if isinstance(error, dict) else None
    message = "the provider failed" + (f": {said}" if said else "")
    if "rate_limit" in kind:
        return PortError(ErrorCode.RUNTIME_RATE_LIMITED, message)
    if "server" in kind or "overloaded" in kind:
        return PortError(ErrorCode.RUNTIME_UNAVAILABLE, message)
    return PortError(ErrorCode.RUNTIME_PERMANENT, message)


def _mapped(error: Exception) -> PortError:
    """The `PortError` an SDK (or transport) exception stands for; its text is never used."""
    cause: BaseException | None = error
    while cause is not None:  # the bound, raised under the SDK's connection error
        if isinstance(cause, PortError):
            return cause
        cause = cause.__cause__
    if isinstance(error, openai.APIStatusError):
        return _status(error.status_code, error.response.headers, error.body)
    if isinstance(error, openai.APIError) and not isinstance(error, openai.APIConnectionError):
        return _error_frame(error.body)
    if isinstance(error, openai.APITimeoutError | httpx2.TimeoutException):
        return PortError(ErrorCode.RUNTIME_TIMEOUT, "the provider did not answer in time")
    if isinstance(error, ValueError | openai.APIResponseValidationError):
        return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "an unreadable answer")
    return PortError(ErrorCode.RUNTIME_UNAVAILABLE, "the connection failed")


def _messages(request: ExecutionRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for message in request.interaction.messages:
        entry: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ]
        if message.tool_call_id:
            entry["tool_call_id"] = message.tool_call_id
        messages.append(entry)
    return messages


def _options(request: ExecutionRequest, model: str) -> dict[str, Any]:
    interaction = request.interaction
    options: dict[str, Any] = {"model": model, "messages": _messages(request)}
    if interaction.tools:
        options["tools"] = [
            {"type": "function", "function": tool.model_dump(exclude_none=True)}
            for tool in interaction.tools
        ]
    if not is_text_schema(interaction.output_schema):
        schema = {"name": "answer", "schema": dict(interaction.output_schema)}
        options["response_format"] = {"type": "json_schema", "json_schema": schema}
    return options


class _Turn:
    """One answer, from stream chunks or a whole completion: events out, a receipt at the end."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thoughts: list[str] = []
        self.calls: dict[int, tuple[str, str, list[str]]] = {}
        self.citations: list[Citation] = []
        self.files: list[FilePart] = []
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def read(self, choices: list[Any], usage: Any) -> Iterator[StreamEvent]:
        if usage is not None:
            details = getattr(usage, "prompt_tokens_details", None)
            self.usage = Usage(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                cache_read_tokens=getattr(details, "cached_tokens", None) or None,
            )
        for choice in choices:
            part = getattr(choice, "delta", None) or choice.message
            thought = (part.model_extra or {}).get("reasoning_content")
            if isinstance(thought, str) and thought:
                self.thoughts.append(thought)
                yield ReasoningDelta(text=thought)
            if part.content:
                self.text.append(part.content)
                yield Delta(text=part.content)
            for position, call in enumerate(part.tool_calls or []):
                yield from self._call(getattr(call, "index", position), call)
            yield from self._provided(part)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def _call(self, index: int, call: Any) -> Iterator[StreamEvent]:
        fragment = (call.function and call.function.arguments) or ""
        known = self.calls.get(index)
        if known is None:
            known = (call.id or f"call_{index}", call.function.name, [])
            self.calls[index] = known
        elif not fragment:
            return
        known[2].append(fragment)
        yield ToolCallDelta(
            index=index, call_id=known[0], name=known[1], arguments_fragment=fragment
        )

    def _provided(self, part: Any) -> Iterator[StreamEvent]:
        """What the server did itself: ``url_citation`` annotations are citations, ``images``
        (``data:`` URLs) generated files."""
        for note in getattr(part, "annotations", None) or []:
            cited = (note if isinstance(note, dict) else note.model_dump()).get("url_citation")
            if cited:
                source = CitationSource(type="url", url=cited["url"], title=cited.get("title"))
                citation = Citation(
                    source=source, start=cited["start_index"], end=cited["end_index"]
                )
                self.citations.append(citation)
                yield citation
        for image in getattr(part, "images", None) or []:
            url = image["image_url"]["url"]
            media_type, _, data = url.removeprefix("data:").partition(";base64,")
            self.files.append(FilePart(media_type=media_type, data=data))
            yield FileDelta(media_type=media_type, data=data)

    def receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        if self.finish_reason is None:  # the SDK ends a cut stream quietly: say it was cut
            raise PortError(ErrorCode.RUNTIME_STREAM_TRUNCATED, "the answer ended early")
        calls = [
            ToolCall(call_id=call_id, name=name, arguments=parse_json_text("".join(parts))[1])
            for _, (call_id, name, parts) in sorted(self.calls.items())
        ]
        thought = "".join(self.thoughts)
        return build_receipt(
            request,
            adapter=DESCRIPTOR,
            text="".join(self.text) or None,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
            reasoning=[ReasoningPart(text=thought)] if thought else [],
            citations=self.citations,
            files=self.files,
        )


class OpenAISDKChatAdapter(RuntimeAdapter):
    def __init__(self, *, base_url: str, api_key: str, model: str, timeout: float) -> None:
        self.model = model
        self.client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key,
            max_retries=0,  # one call, one request: runport's policy decides on retries
            timeout=httpx2.Timeout(timeout, connect=5.0),
            http_client=httpx2.Client(transport=_BoundedTransport()),
        )

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    def close(self) -> None:
        self.client.close()

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.execute_streaming(request, lambda event: None, streamed=False)

    def execute_streaming(
        self, request: ExecutionRequest, sink: Sink, *, streamed: bool = True
    ) -> ExecutionReceipt:
        bound = _BOUND.set(max_response_bytes_for(request, None))
        try:  # Complete, or Failed and the mapped PortError (no SDK text rides along)
            return settle_call(
                sink,
                lambda forward: self._call(request, forward, streamed),
                catch=(openai.OpenAIError, httpx2.HTTPError, ValueError),
                mapped=_mapped,
            )
        finally:
            _BOUND.reset(bound)

    def _call(self, request: ExecutionRequest, sink: Sink, streamed: bool) -> ExecutionReceipt:
        turn = _Turn()
        options = _options(request, self.model)
        if not streamed:
            completion = self.client.chat.completions.create(**options)
            if not isinstance(completion, openai.types.chat.ChatCompletion):
                raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "an unreadable answer")
            error = (completion.model_extra or {}).get("error")
            if error is not None:
                raise _error_frame(error)
            for _ in turn.read(completion.choices, completion.usage):
                pass
            return turn.receipt(request)
        usage = {"stream_options": {"include_usage": True}}
        with self.client.chat.completions.create(**options, stream=True, **usage) as stream:
            for chunk in stream:
                for event in turn.read(chunk.choices, chunk.usage):
                    sink(event)  # a sink that raises stops the call here, unwrapped
        return turn.receipt(request)
