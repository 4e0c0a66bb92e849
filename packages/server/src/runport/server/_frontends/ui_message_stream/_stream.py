"""``ui_message_stream``: a run as the Vercel AI SDK's UI message stream (protocol v1).

The whole run is one assistant message; each model turn is a step (``start-step`` …
``finish-step``) holding the turn's reasoning, text and tool parts, then the tools' results,
and the turn's receipt as a ``data-runport-receipt`` part; what the provider did itself is
its provider-executed tool parts, ``source-url``/``source-document`` and ``file`` parts
(adr/0064). How runport's events map onto the protocol's chunks, and why, is in
docs/frontends.md and adr/0036.
"""

from __future__ import annotations

import mimetypes
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from pydantic import JsonValue

from runport import contracts
from runport.application import RunError
from runport.contracts import ErrorCode, RunEvent, Usage
from runport.server._frames import DONE, json_string
from runport.server._frontends._encoder import RunEventEncoder, encoded
from runport.server._frontends._provided import (
    compact_json,
    data_url,
    receipt_json,
    shown_citation,
)
from runport.server._frontends._usage import token_usage
from runport.server._reasoning_seal import sealed_reasoning

UI_MESSAGE_STREAM_HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
    "x-vercel-ai-ui-message-stream": "v1",
}
"""The response headers a UI message stream is served with (the AI SDK's own)."""

CLOSING = (DONE,)
"""The payloads after a run's last: ``data: [DONE]``."""

_FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "content_filter": "content-filter",
    "error": "error",
}
"""The receipt's ``finish`` (runport's word, never the provider's own) as the AI SDK spells
it; ``pause`` and ``other`` are ``other``."""


def _json(value: Any) -> bytes:
    return compact_json(value).encode("ascii")


class UIMessageEncoder(RunEventEncoder):
    """The protocol's state for one run: which step is open, which text and reasoning parts
    are streaming, which tool calls were announced. ``encode`` turns one run event into the
    chunks (JSON payloads) it owes; the frames are written by ``data_frames``.

    A person in the loop (adr/0069): a held call is a ``tool-approval-request`` (its
    ``approvalId`` the call's id), a paused run ends with its sealed continuation in a
    ``data-runport-continuation`` part before ``finish``, and a resumed run's ``denied``
    calls are ``tool-output-denied``."""

    pauses = True
    client_calls = True

    def __init__(
        self,
        message_id: str | None = None,
        reasoning_key: bytes | None = None,
        *,
        contract_id: str = "",
        chat_id: str = "",
        denied: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__()
        self._message_id = message_id
        self._reasoning_key = reasoning_key
        self._sealed_for = (contract_id, chat_id)
        self._turn = 0
        self._in_step = False
        self._step_owed = False  # a turn ended: its finish-step waits for its tools' results
        self._parts = 0
        self._text_id: bytes | None = None
        self._text_prefix = b""
        self._reasoning_prefix: bytes | None = None
        self._reasoning_open: list[str] = []
        self._calls: dict[int, tuple[str, str]] = {}
        self._server_calls: dict[str, str] = {}  # the turn's unanswered server tool calls
        self._files = 0  # the turn's whole generated files so far
        self._finish_reason: str | None = None
        self._usage: Usage | None = None  # summed over the run's receipts
        self._failure: tuple[str, str] | None = None
        self._denied = denied
        self._continuation: str | None = None

    def start(self) -> list[bytes]:
        chunk: dict[str, JsonValue] = {"type": "start"}
        if self._message_id is not None:
            chunk["messageId"] = self._message_id
        return [_json(chunk)]

    def end(self, error: RunError | None = None) -> list[bytes]:
        """The run is over: its last step closed, then ``finish`` — or ``abort`` when the
        caller stopped it, or ``error`` (a TQX code and message) when it failed."""
        out: list[bytes] = []
        self._close_step(out)
        failure = self._failure if error is None else (error.code, error.message or str(error))
        if failure is not None and failure[0] == ErrorCode.CALLER_STOPPED:
            out.append(_json({"type": "abort", "reason": failure[1] or "stopped by the caller"}))
            return out
        if failure is not None:
            code, message = failure
            out.append(_json({"type": "error", "errorText": f"{code}: {message}"}))
            out.append(_json({"type": "finish", "finishReason": "error"}))
            return out
        if self._continuation is not None:
            # one id: a run that pauses again replaces the spent continuation in place
            out.append(
                _json(
                    {
                        "type": "data-runport-continuation",
                        "id": "continuation",
                        "data": self._continuation,
                    }
                )
            )
        finish: dict[str, JsonValue] = {"type": "finish"}
        reason = self._finish_reason
        if reason is not None:
            finish["finishReason"] = _FINISH_REASONS.get(reason, "other")
        if self._usage is not None:
            finish["messageMetadata"] = {"usage": token_usage(self._usage)}
        out.append(_json(finish))
        return out

    # -- steps and parts ---------------------------------------------------------------

    def _step(self, out: list[bytes]) -> None:
        if self._in_step:
            return
        self._close_step(out)
        self._turn += 1
        self._in_step = True
        out.append(b'{"type":"start-step"}')

    def _close_step(self, out: list[bytes]) -> None:
        if self._in_step or self._step_owed:
            self._close_parts(out)
            out.append(b'{"type":"finish-step"}')
            self._in_step = self._step_owed = False

    def _part_id(self, kind: str) -> str:
        self._parts += 1
        return f"{kind}-{self._turn}-{self._parts}"

    def _end_text(self, out: list[bytes]) -> None:
        if self._text_id is not None:
            out.append(b'{"type":"text-end","id":"' + self._text_id + b'"}')
            self._text_id = None

    def _close_parts(self, out: list[bytes], reasoning: JsonValue = None) -> None:
        """End the open text part and every reasoning part of the turn; the last reasoning
        part carries the turn's reasoning blocks (``reasoning``) as its provider metadata."""
        self._end_text(out)
        self._reasoning_prefix = None
        last = len(self._reasoning_open) - 1
        for index, part_id in enumerate(self._reasoning_open):
            chunk: dict[str, JsonValue] = {"type": "reasoning-end", "id": part_id}
            if index == last and reasoning is not None:
                chunk["providerMetadata"] = reasoning
            out.append(_json(chunk))
        self._reasoning_open = []

    # -- one method per run event ------------------------------------------------------

    def _delta(self, event: contracts.Delta, out: list[bytes]) -> None:
        if self._text_id is None:
            self._step(out)
            self._reasoning_prefix = None
            part_id = self._part_id("text").encode()
            self._text_id = part_id
            self._text_prefix = b'{"type":"text-delta","id":"' + part_id + b'","delta":'
            out.append(b'{"type":"text-start","id":"' + part_id + b'"}')
        out.append(self._text_prefix + json_string(event.text) + b"}")

    def _reasoning_delta(self, event: contracts.ReasoningDelta, out: list[bytes]) -> None:
        if self._reasoning_prefix is None:
            self._step(out)
            self._end_text(out)  # text that follows the reasoning is a part of its own
            self._open_reasoning(out)
        assert self._reasoning_prefix is not None
        out.append(self._reasoning_prefix + json_string(event.text) + b"}")

    def _open_reasoning(self, out: list[bytes]) -> None:
        part_id = self._part_id("reasoning")
        self._reasoning_open.append(part_id)
        self._reasoning_prefix = (
            b'{"type":"reasoning-delta","id":"' + part_id.encode() + b'","delta":'
        )
        out.append(_json({"type": "reasoning-start", "id": part_id}))

    def _tool_call_delta(self, event: contracts.ToolCallDelta, out: list[bytes]) -> None:
        self._step(out)
        self._end_text(out)
        self._reasoning_prefix = None
        if event.index not in self._calls:
            self._calls[event.index] = (event.call_id, event.name)
            out.append(
                _json(
                    {
                        "type": "tool-input-start",
                        "toolCallId": event.call_id,
                        "toolName": event.name,
                    }
                )
            )
        if event.arguments_fragment:
            out.append(
                b'{"type":"tool-input-delta","toolCallId":'
                + json_string(event.call_id)
                + b',"inputTextDelta":'
                + json_string(event.arguments_fragment)
                + b"}"
            )

    def _complete(self, event: contracts.Complete, out: list[bytes]) -> None:
        self._step(out)
        receipt = event.receipt
        reasoning: JsonValue = None
        if receipt.reasoning:
            if not self._reasoning_open:  # reasoning that was never streamed still has a part
                self._end_text(out)
                self._open_reasoning(out)
            contract_id, chat_id = self._sealed_for
            reasoning = sealed_reasoning(
                receipt.reasoning, self._reasoning_key, contract_id=contract_id, chat_id=chat_id
            )
        self._close_parts(out, reasoning)
        for call in receipt.tool_calls or ():
            out.append(
                _json(
                    {
                        "type": "tool-input-available",
                        "toolCallId": call.call_id,
                        "toolName": call.name,
                        "input": call.arguments,
                    }
                )
            )
        out.append(
            b'{"type":"data-runport-receipt","id":"receipt-'
            + str(self._turn).encode()
            + b'","data":'
            + receipt_json(receipt)
            + b"}"
        )
        self._finish_reason = receipt.finish or ("other" if receipt.finish_reason else None)
        if receipt.usage is not None:
            self._usage = receipt.usage if self._usage is None else self._usage + receipt.usage
        self._failure = None
        self._end_turn()

    def _failed(self, event: contracts.Failed, out: list[bytes]) -> None:
        self._step(out)
        self._close_parts(out)
        for call_id, name in self._calls.values():  # announced calls that never completed
            out.append(
                _json(
                    {
                        "type": "tool-input-error",
                        "toolCallId": call_id,
                        "toolName": name,
                        "input": None,
                        "errorText": f"{event.code}: {event.message}",
                    }
                )
            )
        for call_id in self._server_calls:  # server tools the provider never answered
            out.append(
                _json(
                    {
                        "type": "tool-output-error",
                        "toolCallId": call_id,
                        "errorText": f"{event.code}: {event.message}",
                        "providerExecuted": True,
                    }
                )
            )
        self._failure = (event.code, event.message)
        self._end_turn()

    def _end_turn(self) -> None:
        self._calls = {}
        self._server_calls = {}
        self._files = 0
        self._in_step = False
        self._step_owed = True

    def pause(self, continuation: str) -> None:
        self._continuation = continuation

    def _approval_request(self, event: contracts.ToolApprovalRequest, out: list[bytes]) -> None:
        chunk = {"type": "tool-approval-request", "approvalId": event.call_id}
        chunk["toolCallId"] = event.call_id
        out.append(_json(chunk))

    def _tool_result(self, event: contracts.ToolResult, out: list[bytes]) -> None:
        if event.call_id in self._denied:
            # a person denied it: the client shows the denial it sent (with its reason)
            out.append(_json({"type": "tool-output-denied", "toolCallId": event.call_id}))
            return
        if event.error is not None:
            chunk: dict[str, JsonValue] = {
                "type": "tool-output-error",
                "toolCallId": event.call_id,
                "errorText": event.error,
            }
        else:
            chunk = {"type": "tool-output-available", "toolCallId": event.call_id}
            chunk["output"] = event.output
        out.append(_json(chunk))

    # -- what the provider did itself (adr/0064) ----------------------------------------

    def _server_tool_call(self, event: contracts.ServerToolCall, out: list[bytes]) -> None:
        """A tool part the provider runs (``providerExecuted``): never one the client or
        the run executes. Its input arrives whole, so it starts at ``input-available``."""
        self._step(out)
        self._end_text(out)
        self._reasoning_prefix = None
        self._server_calls[event.call_id] = event.name
        out.append(
            _json(
                {
                    "type": "tool-input-available",
                    "toolCallId": event.call_id,
                    "toolName": event.name,
                    "input": event.input,
                    "providerExecuted": True,
                }
            )
        )

    def _server_tool_result(self, event: contracts.ServerToolResult, out: list[bytes]) -> None:
        self._step(out)
        self._server_calls.pop(event.call_id, None)
        chunk: dict[str, JsonValue] = {"type": "tool-output-available"}
        chunk["toolCallId"] = event.call_id
        if event.error is not None:
            chunk["type"] = "tool-output-error"
            chunk["errorText"] = event.error
        else:
            chunk["output"] = event.output
        chunk["providerExecuted"] = True
        out.append(_json(chunk))

    def _citation(self, event: contracts.Citation, out: list[bytes]) -> None:
        """``source-url`` (a web page) or ``source-document``; what the part has no field
        for (the cited passage, the span, the document's index or file id) is its
        ``providerMetadata.runport``. The text part goes on: a source annotates it."""
        shown = shown_citation(event)
        if shown is None:
            return  # a URL that is not a link is not shown; the receipt keeps it
        self._step(out)
        source_id = self._part_id("source").encode()
        if event.source.type == "url":
            chunk = b'{"type":"source-url","sourceId":"' + source_id + b'",' + shown.source
        else:
            document = event.source
            title = document.title or document.filename or _document_name(document)
            chunk = (
                b'{"type":"source-document","sourceId":"'
                + source_id
                + b'","mediaType":'
                + json_string(_document_media_type(document.filename))
                + b',"title":'
                + json_string(title)
            )
            if document.filename is not None:
                chunk += b',"filename":' + json_string(document.filename)
        if shown.more:
            chunk += b',"providerMetadata":{"runport":{' + shown.more + b"}}"
        out.append(chunk + b"}")

    def _file(self, event: contracts.FileDelta, out: list[bytes]) -> None:
        """A generated file: a ``file`` part with its ``data:`` URL. A preview (``partial``)
        is a transient ``data-runport-file-preview`` (``onData`` sees it; it is not kept in
        the message, since the whole file follows as its own part)."""
        self._step(out)
        media_type = json_string(event.media_type)
        url = data_url(event.media_type, event.data)
        if event.partial:
            slot = b"file-%d-%d" % (self._turn, self._files + 1)
            head = b'{"type":"data-runport-file-preview","id":"%s","data":{"mediaType":%s,"url":'
            out.append(b"".join((head % (slot, media_type), *url, b'},"transient":true}')))
            return
        self._end_text(out)  # text after the file is a part of its own, in order
        self._reasoning_prefix = None
        self._files += 1
        out.append(b"".join((b'{"type":"file","mediaType":', media_type, b',"url":', *url, b"}")))

    def _tool_progress(self, event: contracts.ToolProgress, out: list[bytes]) -> None:
        # the AI SDK's preliminary result: the part shows it until the final output replaces it
        chunk: dict[str, JsonValue] = {
            "type": "tool-output-available",
            "toolCallId": event.call_id,
            "output": event.data,
            "preliminary": True,
        }
        out.append(_json(chunk))

    def _sub_run(self, event: contracts.SubRunEvent, out: list[bytes]) -> None:
        # transient: handed to useChat's onData as it comes, never kept in the message
        out.append(
            b'{"type":"data-runport-subrun","data":'
            + event.model_dump_json(exclude={"kind"}).encode()
            + b',"transient":true}'
        )

    def _snapshot(self, event: contracts.OutputSnapshot, out: list[bytes]) -> None:
        self._step(out)
        out.append(self._data_part(b"output", event))

    def _rejected(self, event: contracts.AnswerRejected, out: list[bytes]) -> None:
        out.append(self._data_part(b"rejected", event))

    def _data_part(self, name: bytes, event: RunEvent) -> bytes:
        """A ``data-runport-<name>`` part (one id per turn: the client updates it in place)."""
        return b'{"type":"data-runport-%s","id":"%s-%d","data":%s}' % (
            name,
            name,
            self._turn,
            event.model_dump_json(exclude={"kind"}).encode(),
        )


def _document_media_type(filename: str | None) -> str:
    guessed = mimetypes.guess_type(filename)[0] if filename else None
    return guessed or "application/octet-stream"


def _document_name(source: contracts.CitationSource) -> str:
    if source.file_id is not None:
        return source.file_id
    if source.document_index is not None:
        return f"document {source.document_index}"
    return "document"


def ui_message_stream(
    events: AsyncIterable[RunEvent],
    *,
    message_id: str | None = None,
    reasoning_key: bytes | None = None,
    contract_id: str = "",
    chat_id: str = "",
) -> AsyncIterator[bytes]:
    """The run ``events`` as the AI SDK's UI message stream, one chunk of bytes per run
    event (its frames together), ending with ``data: [DONE]``. Serve it with
    ``UI_MESSAGE_STREAM_HEADERS``.

    A ``RunError`` raised by ``events`` ends the stream with an ``error`` chunk carrying
    its TQX code (``abort`` for a caller stop). ``message_id`` names the assistant message;
    ``reasoning_key`` seals each turn's reasoning metadata (signatures, encrypted
    reasoning), bound to ``contract_id`` and ``chat_id``: the chat endpoint takes it back
    only in that contract's chat of that id.
    """
    encoder = UIMessageEncoder(message_id, reasoning_key, contract_id=contract_id, chat_id=chat_id)
    return encoded(encoder, events, CLOSING)
