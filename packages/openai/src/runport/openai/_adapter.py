"""``OpenAIChatAdapter``: the chat-completions API over HTTP, streamed or not
(docs/providers.md)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from importlib import metadata
from types import TracebackType
from typing import Any, Final, NoReturn

import httpx
from pydantic_core import from_json

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
)
from runport.openai._errors import (
    UpstreamFailure,
    error_frame,
    invalid,
    status_error,
    transport_error,
)
from runport.openai._mapping import (
    ResponseFormatMode,
    TurnAssembler,
    as_response_format_mode,
    request_body,
)
from runport.openai._sse import SSEDecoder
from runport.ports import PortError, RuntimeAdapter, Sink

DEFAULT_MAX_RESPONSE_BYTES: Final = 8 * 1024 * 1024
"""docs/streaming-law.md law 8: the bound when neither the adapter nor the request sets one."""

DEFAULT_TIMEOUT: Final = httpx.Timeout(600.0, connect=10.0)
"""Ten minutes per read, as long as a slow non-streamed completion may take to start; ten
seconds to connect. A stream that stalls for a whole read timeout fails as ``TIMEOUT``."""


def _package_version() -> str:
    try:
        return metadata.version("runport-openai")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0.1.0"


_DESCRIPTOR = AdapterDescriptor(
    id="openai-chat",
    version=_package_version(),
    capabilities=["streaming", "structured_output", "text", "tool_calls"],
)


def _discard(event: StreamEvent) -> None:
    """The emitter of ``execute``: the same assembly as streaming, with nobody listening."""


class OpenAIChatAdapter(RuntimeAdapter):
    """A runtime adapter for any server that speaks OpenAI's chat-completions API.

    ``execute`` posts without ``stream``; ``execute_streaming`` posts with ``stream: true``
    (and ``include_usage``) and forwards every text and tool-call fragment as its SSE frame
    completes. Both feed the same assembler, so they return equal receipts for the same content.

    The completion marker is a non-null ``finish_reason`` or ``data: [DONE]``. After
    ``finish_reason`` the adapter reads on to ``[DONE]`` or the end of the body for the usage
    chunk; an end, reset or stall after it still completes. A body that ends before either
    marker fails as ``TQX_RUNTIME_STREAM_TRUNCATED``; it is never passed off as a short answer.

    It never retries (docs/streaming-law.md, law 7). Pass an ``httpx.Client`` to share a pool,
    add a proxy or a transport; otherwise the adapter owns one, released by ``close()`` or a
    ``with`` block. Safe to share between threads, as the ``httpx.Client`` is.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        http_client: httpx.Client | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_response_bytes: int | None = None,
        response_format_mode: ResponseFormatMode = "json_schema",
    ) -> None:
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("base_url must be an http(s) URL, e.g. https://api.openai.com/v1")
        if not model:
            raise ValueError("model must name the upstream model")
        if api_key is not None and not _is_header_safe(api_key):
            # Said without the value: an error message is no place for a key.
            raise ValueError("api_key must be printable ASCII (it goes in a header)")
        if max_response_bytes is not None and not _is_byte_count(max_response_bytes):
            raise ValueError(
                f"max_response_bytes must be a non-negative integer, not {max_response_bytes!r}"
            )
        as_response_format_mode(response_format_mode)
        # Appended to the path, so a query (Azure's `?api-version=…`) stays a query.
        self._url = str(url.copy_with(path=url.path.rstrip("/") + "/chat/completions"))
        self._model = model
        self._max_response_bytes = max_response_bytes
        self._response_format_mode: ResponseFormatMode = response_format_mode
        headers = {"User-Agent": f"runport-openai/{_DESCRIPTOR.version}"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._stream_headers = {**headers, "Accept": "text/event-stream"}
        self._json_headers = {**headers, "Accept": "application/json"}
        self._owns_client = http_client is None
        if http_client is None:
            http_client = httpx.Client(timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
        self._client = http_client
        # Without an explicit timeout, a client passed in keeps its own.
        self._request_options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}

    def __repr__(self) -> str:  # never the key, which lives only in the headers
        return f"OpenAIChatAdapter(url={self._url!r}, model={self._model!r})"

    def close(self) -> None:
        """Release the HTTP client, if the adapter created it (a client passed in is yours)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAIChatAdapter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def descriptor(self) -> AdapterDescriptor:
        return _DESCRIPTOR

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        try:
            return self._run(request, _discard, stream=False)
        except UpstreamFailure as failure:
            _raise(failure)

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        try:
            receipt = self._run(request, sink, stream=True)
        except UpstreamFailure as failure:
            # The response is closed by now: the sink hears of the failure after the upstream
            # is released, as it would after a caller stop.
            sink(Failed(code=failure.error.code, message=failure.error.message))
            _raise(failure)
        sink(Complete(receipt=receipt))
        return receipt

    def _run(self, request: ExecutionRequest, emit: Sink, *, stream: bool) -> ExecutionReceipt:
        limit = self._limit(request)
        body = request_body(
            request.interaction,
            model=self._model,
            stream=stream,
            response_format_mode=self._response_format_mode,
        )
        try:
            content = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except ValueError:  # NaN or infinity somewhere in the interaction
            raise UpstreamFailure(
                PortError(ErrorCode.DATA_INVALID, "the request holds a number JSON cannot carry")
            ) from None
        turn = TurnAssembler(emit)
        headers = self._stream_headers if stream else self._json_headers
        try:
            response = self._client.send(
                self._client.build_request(
                    "POST",
                    self._url,
                    content=content,
                    headers={**headers, "Content-Type": "application/json"},
                    **self._request_options,
                ),
                stream=True,
            )
        except httpx.HTTPError as error:
            raise UpstreamFailure(transport_error(error)) from None
        # Only network reads are guarded for httpx errors (inside the readers): a sink runs
        # inside this block, and what it raises must pass through untouched (law 6). Closing
        # here releases the upstream before any exception, a sink's included, leaves.
        try:
            self._check_head(response, limit)
            media_type = response.headers.get("content-type", "").partition(";")[0]
            media_type = media_type.strip().lower()
            # The body is read as what it says it is, so a server that ignores `stream` either
            # way is still understood; an unlabelled body is what was asked for.
            if media_type == "text/event-stream" or (stream and media_type != "application/json"):
                _read_events(response, turn, limit)
            else:
                turn.feed_completion(_decode(_read_all(response, limit)))
        finally:
            response.close()
        return turn.receipt(request, _DESCRIPTOR)

    def _limit(self, request: ExecutionRequest) -> int:
        policy = request.interaction.runtime_policy.get(
            "max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES
        )
        if not _is_byte_count(policy):
            raise UpstreamFailure(
                PortError(
                    ErrorCode.DATA_INVALID,
                    "runtime_policy.max_response_bytes must be a non-negative integer",
                )
            )
        assert isinstance(policy, int)
        if self._max_response_bytes is None:
            return policy
        return min(policy, self._max_response_bytes)

    @staticmethod
    def _check_head(response: httpx.Response, limit: int) -> None:
        if not 200 <= response.status_code <= 299:
            raise UpstreamFailure(status_error(response))
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)


def _read_events(response: httpx.Response, turn: TurnAssembler, limit: int) -> None:
    """The hot path: one iteration per network read, one ``feed_chunk`` per SSE frame.

    Only ``next()`` on the body is guarded for ``httpx`` errors, so an exception a sink raises
    from inside ``feed_chunk`` passes through untouched.
    """
    decoder = SSEDecoder()
    feed = decoder.feed
    feed_chunk = turn.feed_chunk
    loads = from_json
    reads = response.iter_bytes()
    received = 0
    ended = False
    while not ended:
        try:
            raw = next(reads)
        except StopIteration:
            ended = True
            events = decoder.end()
        except httpx.HTTPError as error:
            if turn.finish_reason is not None:
                return  # the answer was complete; only the usage chunk may be missing
            raise UpstreamFailure(transport_error(error)) from None
        else:
            received += len(raw)
            if received > limit:
                raise _too_large(limit)
            events = feed(raw)
        for event, data in events:
            if data == b"[DONE]":
                return
            if event != "message" and event != "error":
                continue  # e.g. `event: ping` keep-alives, whose data need not be JSON
            try:
                chunk = loads(data)
            except ValueError:
                raise invalid("a stream frame is not JSON") from None
            if event == "message":
                feed_chunk(chunk)
            elif event == "error":
                raise UpstreamFailure(
                    error_frame(chunk.get("error", chunk) if type(chunk) is dict else None)
                )
    if turn.finish_reason is None:
        raise UpstreamFailure(
            PortError(
                ErrorCode.RUNTIME_STREAM_TRUNCATED,
                "the stream ended before its completion marker (finish_reason or [DONE])",
            )
        )


def _read_all(response: httpx.Response, limit: int) -> bytes:
    received = 0
    parts: list[bytes] = []
    for raw in _body(response):
        received += len(raw)
        if received > limit:
            raise _too_large(limit)
        parts.append(raw)
    return b"".join(parts)


def _body(response: httpx.Response) -> Iterator[bytes]:
    try:
        yield from response.iter_bytes()
    except httpx.HTTPError as error:
        raise UpstreamFailure(transport_error(error)) from None


def _decode(data: bytes) -> Any:
    try:
        return from_json(data)
    except ValueError:
        raise invalid("the response is not JSON") from None


def _too_large(limit: int) -> UpstreamFailure:
    return UpstreamFailure(
        PortError(
            ErrorCode.RUNTIME_RESPONSE_TOO_LARGE,
            f"the response passed max_response_bytes ({limit} bytes)",
        )
    )


def _raise(failure: UpstreamFailure) -> NoReturn:
    error = failure.error
    raise error from error.__cause__


def _is_header_safe(value: str) -> bool:
    return value.isascii() and value.isprintable()


def _is_byte_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def create_adapter(
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    response_format_mode: str | None = None,
) -> OpenAIChatAdapter:
    """The ``runport.adapters`` entry point: ``runport run … --adapter openai``.

    Each argument falls back to the environment: ``RUNPORT_OPENAI_BASE_URL``,
    ``RUNPORT_OPENAI_MODEL``, ``OPENAI_API_KEY`` (optional: local servers need none) and
    ``RUNPORT_OPENAI_RESPONSE_FORMAT`` (``json_schema``, ``json_object`` or ``none``). There
    is no default server or model: a run must say where it goes.
    """
    base_url = base_url or os.environ.get("RUNPORT_OPENAI_BASE_URL") or ""
    model = model or os.environ.get("RUNPORT_OPENAI_MODEL") or ""
    missing = [
        name
        for name, value in (("RUNPORT_OPENAI_BASE_URL", base_url), ("RUNPORT_OPENAI_MODEL", model))
        if not value
    ]
    if missing:
        raise ValueError(
            f"the openai adapter needs {' and '.join(missing)} "
            "(e.g. RUNPORT_OPENAI_BASE_URL=https://api.openai.com/v1, "
            "RUNPORT_OPENAI_MODEL=gpt-4o-mini)"
        )
    mode = response_format_mode or os.environ.get("RUNPORT_OPENAI_RESPONSE_FORMAT")
    return OpenAIChatAdapter(
        base_url=base_url,
        model=model,
        api_key=api_key or os.environ.get("OPENAI_API_KEY") or None,
        response_format_mode=as_response_format_mode(mode or "json_schema"),
    )
