"""``agui_stream``: a run as AG-UI events.

Each model turn is one assistant message (its text, and its tool calls as children), with
its reasoning as a reasoning message before it; tool results are tool messages; the partial
structured answer is the agent state (``{"output": …}``: a snapshot, then JSON patches);
what the provider did itself — its own tools, the sources it cites, the files it makes — are
activity messages (``runport.server_tool``, ``runport.sources``, ``runport.file``; adr/0064);
the run ends with ``RUN_FINISHED`` (its answer, its token usage) or ``RUN_ERROR`` (a TQX
code). The mapping, and why, is in docs/frontends.md and adr/0036.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from pydantic import JsonValue

from runport import contracts
from runport.application import RunError
from runport.contracts import ErrorCode, RunEvent, Usage, canonical_json
from runport.server._frames import json_string
from runport.server._frontends._chat import tool_content
from runport.server._frontends._encoder import RunEventEncoder, encoded
from runport.server._frontends._provided import (
    compact_json,
    data_url,
    receipt_json,
    shown_citation,
)
from runport.server._frontends._usage import token_usage

AGUI_HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
}
"""The response headers an AG-UI event stream is served with."""


APPROVAL_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "required": ["approved"],
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
}
"""The answer an approval interrupt expects (its ``responseSchema``): a resume entry's
``payload``."""

SERVER_TOOL_ACTIVITY = "runport.server_tool"
"""The activity type of a tool the provider ran itself."""
SOURCES_ACTIVITY = "runport.sources"
"""The activity type of a turn's cited sources."""
FILE_ACTIVITY = "runport.file"
"""The activity type of a file the model generated."""


def _json(value: Any) -> bytes:
    return compact_json(value).encode("ascii")


def _pointer_token(key: str | int) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def json_patch(before: JsonValue, after: JsonValue, path: str = "") -> list[dict[str, JsonValue]]:
    """The RFC 6902 operations that turn ``before`` into ``after``. Snapshots of a growing
    answer share the structure that did not change, so a subtree that is the same object
    is skipped without being read: the cost follows what changed, not the answer's size."""
    if before is after:
        return []
    if isinstance(before, dict) and isinstance(after, dict) and before.keys() <= after.keys():
        ops: list[dict[str, JsonValue]] = []
        for key, value in after.items():
            where = f"{path}/{_pointer_token(key)}"
            if key in before:
                ops += json_patch(before[key], value, where)
            else:
                ops.append({"op": "add", "path": where, "value": value})
        return ops
    if isinstance(before, list) and isinstance(after, list) and len(before) <= len(after):
        ops = []
        for index, value in enumerate(after):
            where = f"{path}/{index}"
            if index < len(before):
                ops += json_patch(before[index], value, where)
            else:
                ops.append({"op": "add", "path": where, "value": value})
        return ops
    if before == after and type(before) is type(after):
        return []
    return [{"op": "replace", "path": path, "value": after}]


class AGUIEncoder(RunEventEncoder):
    """The protocol's state for one run: the open text and reasoning messages, the tool
    calls announced, the state last sent. ``encode`` turns one run event into the AG-UI
    events (JSON payloads) it owes; the frames are written by ``data_frames``.

    A person in the loop (adr/0069): a paused run ends with ``RUN_FINISHED`` whose outcome
    is ``interrupt``, one interrupt per held call (its ``id`` and ``toolCallId`` the call's
    id, its ``metadata.runport.continuation`` the sealed continuation); a resumed run's
    ``denied`` calls' results are the denial the model reads."""

    pauses = True
    client_calls = True

    def __init__(
        self, thread_id: str, run_id: str, *, denied: frozenset[str] = frozenset()
    ) -> None:
        super().__init__()
        self._denied = denied
        self._held: list[contracts.ToolApprovalRequest] = []
        self._clients: list[contracts.ClientToolCall] = []
        self._continuation: str | None = None
        self._thread_id = thread_id
        self._run_id = run_id
        self._turn = 0
        self._in_turn = False
        self._message_id: str | None = None
        self._text_prefix: bytes | None = None
        self._reasoning_prefix: bytes | None = None
        self._reasoning_id: str | None = None
        self._reasonings = 0
        self._calls: dict[int, str] = {}
        self._open_calls: list[str] = []
        self._sources = False  # the turn's sources activity was started
        self._server_calls: list[str] = []  # the turn's unanswered server tool calls
        self._files = 0  # the turn's whole generated files so far
        self._state: JsonValue = None
        self._has_state = False
        self._output: JsonValue = None
        self._usage: dict[tuple[str | None, str | None], Usage] = {}
        self._failure: tuple[str, str] | None = None

    def start(self) -> list[bytes]:
        return [_json({"type": "RUN_STARTED", "threadId": self._thread_id, "runId": self._run_id})]

    def end(self, error: RunError | None = None) -> list[bytes]:
        """``RUN_FINISHED`` (cancelled, for a caller stop) or ``RUN_ERROR`` with the code."""
        out: list[bytes] = []
        self._close_turn(out)
        failure = self._failure if error is None else (error.code, error.message or str(error))
        finished: dict[str, JsonValue] = {
            "type": "RUN_FINISHED",
            "threadId": self._thread_id,
            "runId": self._run_id,
        }
        if failure is not None and failure[0] == ErrorCode.CALLER_STOPPED:
            finished["outcome"] = {"type": "cancelled"}
        elif failure is None and self._continuation is not None:
            if self._clients:  # the state the client sends back with its tools' results
                sealed = {"runport": {"continuation": self._continuation}}
                out.append(b'{"type":"STATE_SNAPSHOT","snapshot":' + _json(sealed) + b"}")
            if self._held:
                finished["outcome"] = {
                    "type": "interrupt",
                    "interrupts": [
                        self._interrupt(held, self._continuation) for held in self._held
                    ],
                }
            else:
                pending: list[JsonValue] = [call.call_id for call in self._clients]
                finished["outcome"] = {"type": "success", "pendingToolCallIds": pending}
        elif failure is not None:
            out.append(_json({"type": "RUN_ERROR", "code": failure[0], "message": failure[1]}))
            return out
        elif self._output is not None:
            finished["result"] = self._output
        if self._usage:
            finished["usage"] = [
                self._token_usage(provider, model, usage)
                for (provider, model), usage in self._usage.items()
            ]
        out.append(_json(finished))
        return out

    @staticmethod
    def _interrupt(held: contracts.ToolApprovalRequest, continuation: str) -> JsonValue:
        return {
            "id": held.call_id,
            "reason": "tool_approval",
            "message": f"The model asks to run tool {held.name!r}",
            "toolCallId": held.call_id,
            "responseSchema": APPROVAL_SCHEMA,
            "metadata": {"runport": {"continuation": continuation}},
        }

    def pause(self, continuation: str) -> None:
        self._continuation = continuation

    def _approval_request(self, event: contracts.ToolApprovalRequest, out: list[bytes]) -> None:
        self._held.append(event)

    def _client_call(self, event: contracts.ClientToolCall, out: list[bytes]) -> None:
        self._clients.append(event)

    @staticmethod
    def _token_usage(provider: str | None, model: str | None, usage: Usage) -> JsonValue:
        entry = token_usage(usage)
        if provider is not None:
            entry["provider"] = provider
        if model is not None:
            entry["model"] = model
        return entry

    # -- messages ----------------------------------------------------------------------

    def _begin_turn(self) -> None:
        if not self._in_turn:
            self._turn += 1
            self._in_turn = True
            self._message_id = f"{self._run_id}-m{self._turn}"

    def _end_text(self, out: list[bytes]) -> None:
        if self._text_prefix is not None:
            out.append(_json({"type": "TEXT_MESSAGE_END", "messageId": self._message_id}))
            self._text_prefix = None

    def _end_reasoning(self, out: list[bytes]) -> None:
        if self._reasoning_id is not None:
            out.append(_json({"type": "REASONING_MESSAGE_END", "messageId": self._reasoning_id}))
            out.append(_json({"type": "REASONING_END", "messageId": self._reasoning_id}))
            self._reasoning_id = self._reasoning_prefix = None

    def _close_turn(self, out: list[bytes]) -> None:
        self._end_reasoning(out)
        self._end_text(out)
        for call_id in self._open_calls:
            out.append(_json({"type": "TOOL_CALL_END", "toolCallId": call_id}))
        self._open_calls = []
        self._calls = {}
        self._in_turn = False
        self._sources = False
        self._server_calls = []
        self._files = 0

    # -- one method per run event ------------------------------------------------------

    def _delta(self, event: contracts.Delta, out: list[bytes]) -> None:
        if self._text_prefix is None:
            self._begin_turn()
            self._end_reasoning(out)
            message_id = json_string(self._message_id or "")
            out.append(
                b'{"type":"TEXT_MESSAGE_START","messageId":' + message_id + b',"role":"assistant"}'
            )
            self._text_prefix = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":' + message_id
            self._text_prefix += b',"delta":'
        out.append(self._text_prefix + json_string(event.text) + b"}")

    def _reasoning_delta(self, event: contracts.ReasoningDelta, out: list[bytes]) -> None:
        if self._reasoning_prefix is None:
            self._begin_turn()
            self._end_text(out)
            self._reasonings += 1
            reasoning_id = f"{self._message_id}-r{self._reasonings}"
            self._reasoning_id = reasoning_id
            out.append(_json({"type": "REASONING_START", "messageId": reasoning_id}))
            out.append(
                _json(
                    {
                        "type": "REASONING_MESSAGE_START",
                        "messageId": reasoning_id,
                        "role": "reasoning",
                    }
                )
            )
            self._reasoning_prefix = (
                b'{"type":"REASONING_MESSAGE_CONTENT","messageId":'
                + json_string(reasoning_id)
                + b',"delta":'
            )
        out.append(self._reasoning_prefix + json_string(event.text) + b"}")

    def _tool_call_delta(self, event: contracts.ToolCallDelta, out: list[bytes]) -> None:
        self._begin_turn()
        self._end_reasoning(out)
        if event.index not in self._calls:
            self._calls[event.index] = event.call_id
            self._open_calls.append(event.call_id)
            out.append(
                _json(
                    {
                        "type": "TOOL_CALL_START",
                        "toolCallId": event.call_id,
                        "toolCallName": event.name,
                        "parentMessageId": self._message_id,
                    }
                )
            )
        if event.arguments_fragment:
            out.append(
                b'{"type":"TOOL_CALL_ARGS","toolCallId":'
                + json_string(event.call_id)
                + b',"delta":'
                + json_string(event.arguments_fragment)
                + b"}"
            )

    def _complete(self, event: contracts.Complete, out: list[bytes]) -> None:
        self._begin_turn()
        receipt = event.receipt
        announced = set(self._calls.values())
        for call in receipt.tool_calls or ():  # calls that arrived whole, never streamed
            if call.call_id not in announced:
                self._open_calls.append(call.call_id)
                out.append(
                    _json(
                        {
                            "type": "TOOL_CALL_START",
                            "toolCallId": call.call_id,
                            "toolCallName": call.name,
                            "parentMessageId": self._message_id,
                        }
                    )
                )
                out.append(
                    _json(
                        {
                            "type": "TOOL_CALL_ARGS",
                            "toolCallId": call.call_id,
                            "delta": canonical_json(call.arguments).decode(),
                        }
                    )
                )
        self._close_turn(out)
        out.append(
            b'{"type":"CUSTOM","name":"runport.receipt","value":' + receipt_json(receipt) + b"}"
        )
        if receipt.usage is not None:
            key = (receipt.adapter.provider, receipt.adapter.model)
            self._usage[key] = self._usage.get(key, Usage()) + receipt.usage
        self._output = receipt.output if not receipt.tool_calls else None
        self._failure = None

    def _failed(self, event: contracts.Failed, out: list[bytes]) -> None:
        for call_id in self._server_calls:  # server tools the provider never answered
            self._end_server_tool(
                call_id, "failed", "/error", f"{event.code}: {event.message}", out
            )
        self._close_turn(out)
        self._failure = (event.code, event.message)

    def _tool_result(self, event: contracts.ToolResult, out: list[bytes]) -> None:
        text = event.error if event.error is not None else tool_content(event.output)
        if event.call_id in self._denied and event.error is not None:
            # what the model reads of the denial (the run's own tool message)
            reason = event.error.removeprefix("denied: ")
            text = f"denied: tool {event.name!r} was not run: {reason}"
        out.append(
            _json(
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": f"{self._run_id}-tool-{event.call_id}",
                    "toolCallId": event.call_id,
                    "content": text,
                    "role": "tool",
                }
            )
        )

    # -- what the provider did itself: activity messages (adr/0064) ----------------------

    def _server_tool_call(self, event: contracts.ServerToolCall, out: list[bytes]) -> None:
        """A ``runport.server_tool`` activity, ``status: running``: not a ``TOOL_CALL_*``,
        which a client would hold as its own call and send back as one."""
        self._begin_turn()
        self._end_reasoning(out)
        self._server_calls.append(event.call_id)
        content = {
            "callId": event.call_id,
            "name": event.name,
            "input": event.input,
            "status": "running",
        }
        out.append(
            _json(
                {
                    "type": "ACTIVITY_SNAPSHOT",
                    "messageId": self._server_tool_id(event.call_id),
                    "activityType": SERVER_TOOL_ACTIVITY,
                    "content": content,
                }
            )
        )

    def _server_tool_result(self, event: contracts.ServerToolResult, out: list[bytes]) -> None:
        """The call's activity patched to ``done`` with its ``output``, or ``failed`` with
        its ``error``."""
        self._begin_turn()
        if event.call_id in self._server_calls:
            self._server_calls.remove(event.call_id)
        if event.error is not None:
            self._end_server_tool(event.call_id, "failed", "/error", event.error, out)
        else:
            self._end_server_tool(event.call_id, "done", "/output", event.output, out)

    def _end_server_tool(
        self, call_id: str, status: str, path: str, value: JsonValue, out: list[bytes]
    ) -> None:
        patch: list[JsonValue] = [
            {"op": "replace", "path": "/status", "value": status},
            {"op": "add", "path": path, "value": value},
        ]
        out.append(
            _json(
                {
                    "type": "ACTIVITY_DELTA",
                    "messageId": self._server_tool_id(call_id),
                    "activityType": SERVER_TOOL_ACTIVITY,
                    "patch": patch,
                }
            )
        )

    def _server_tool_id(self, call_id: str) -> str:
        return f"{self._message_id}-server-{call_id}"

    def _citation(self, event: contracts.Citation, out: list[bytes]) -> None:
        """The turn's ``runport.sources`` activity: ``{sources: [...]}`` at its first
        citation, then one appended source per citation (``ACTIVITY_DELTA``)."""
        shown = shown_citation(event)
        if shown is None:
            return  # a URL that is not a link is not shown; the receipt keeps it
        self._begin_turn()
        members = (b'"type":"' + event.source.type.encode() + b'"', shown.source, shown.more)
        source = b"{" + b",".join([member for member in members if member]) + b"}"
        message_id = json_string(f"{self._message_id}-sources")
        if not self._sources:
            self._sources = True
            out.append(
                b'{"type":"ACTIVITY_SNAPSHOT","messageId":'
                + message_id
                + b',"activityType":"'
                + SOURCES_ACTIVITY.encode()
                + b'","content":{"sources":['
                + source
                + b"]}}"
            )
        else:
            out.append(
                b'{"type":"ACTIVITY_DELTA","messageId":'
                + message_id
                + b',"activityType":"'
                + SOURCES_ACTIVITY.encode()
                + b'","patch":[{"op":"add","path":"/sources/-","value":'
                + source
                + b"}]}"
            )

    def _file(self, event: contracts.FileDelta, out: list[bytes]) -> None:
        """A ``runport.file`` activity per generated file, ``{mediaType, url, partial}``
        with its ``data:`` URL: a preview and the whole file that follows it share the
        activity, each replacing the last."""
        self._begin_turn()
        slot = self._files + 1
        if not event.partial:
            self._files = slot
        message_id = json_string(f"{self._message_id}-file{slot}")
        out.append(
            b"".join(
                (
                    b'{"type":"ACTIVITY_SNAPSHOT","messageId":',
                    message_id,
                    b',"activityType":"' + FILE_ACTIVITY.encode() + b'","content":{"mediaType":',
                    json_string(event.media_type),
                    b',"url":',
                    *data_url(event.media_type, event.data),
                    b',"partial":true}}' if event.partial else b',"partial":false}}',
                )
            )
        )

    def _tool_progress(self, event: contracts.ToolProgress, out: list[bytes]) -> None:
        # AG-UI has no preliminary tool result: the closest is a custom event by name
        out.append(
            b'{"type":"CUSTOM","name":"runport.tool_progress","value":'
            + event.model_dump_json(exclude={"kind"}).encode()
            + b"}"
        )

    def _sub_run(self, event: contracts.SubRunEvent, out: list[bytes]) -> None:
        out.append(
            b'{"type":"CUSTOM","name":"runport.subrun","value":'
            + event.model_dump_json(exclude={"kind"}).encode()
            + b"}"
        )

    def _snapshot(self, event: contracts.OutputSnapshot, out: list[bytes]) -> None:
        state: dict[str, JsonValue] = {"output": event.value}
        if not self._has_state:
            self._has_state = True
            out.append(b'{"type":"STATE_SNAPSHOT","snapshot":' + _json(state) + b"}")
        else:
            before = self._state
            assert isinstance(before, dict)
            patch = json_patch(before.get("output"), event.value, "/output")
            if patch:
                out.append(_json({"type": "STATE_DELTA", "delta": patch}))
        self._state = state

    def _rejected(self, event: contracts.AnswerRejected, out: list[bytes]) -> None:
        out.append(
            b'{"type":"CUSTOM","name":"runport.rejected","value":'
            + event.model_dump_json(exclude={"kind"}).encode()
            + b"}"
        )
        # the next round answers afresh: its partial answer starts from nothing
        self._has_state = False


def agui_stream(
    events: AsyncIterable[RunEvent], *, thread_id: str, run_id: str
) -> AsyncIterator[bytes]:
    """The run ``events`` as AG-UI events over server-sent events, one chunk of bytes per
    run event (its frames together), from ``RUN_STARTED`` to ``RUN_FINISHED`` or
    ``RUN_ERROR``. Serve it with ``AGUI_HEADERS``.

    A ``RunError`` raised by ``events`` ends the stream with ``RUN_ERROR`` carrying its
    TQX code; a caller stop ends it with ``RUN_FINISHED`` whose outcome is ``cancelled``.
    """
    return encoded(AGUIEncoder(thread_id, run_id), events)
