"""A minimal OpenAI Responses API client (sync and async) for the suite's own tests, built on
the minimal chat client of ``conformance_doubles`` (its flags break the same promises), so the
``openai-responses`` half of the suite is proven, and its broken variants possible, without
``runport.openai``. ``lose_encrypted`` sends the reasoning items back without their encrypted
content: the broken variant the upstream refuses. Small on purpose; not a product."""

from __future__ import annotations

import json
from typing import Any

from runport.contracts import (
    AdapterDescriptor,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.core import build_receipt, parse_json_text
from runport.ports import PortError

from .conformance_doubles import (
    AsyncMiniChatAdapter,
    MiniChatAdapter,
    _Body,
    _error_frame,
    _SSEFrames,
)

__all__ = ["AsyncMiniResponsesAdapter", "MiniResponsesAdapter"]

_DESCRIPTOR = AdapterDescriptor(
    id="mini-responses",
    version="0.0.0",
    capabilities=["streaming", "structured_output", "text", "tool_calls"],
)
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


class _ResponsesTurn:
    """One response's items: events and a receipt out. ``reasoning`` as the chat client's:
    ``"keep"``, ``"drop"`` or ``"mix"`` (into the answer)."""

    def __init__(self, reasoning: str) -> None:
        self.reasoning = reasoning
        self.text: list[str] = []
        self.thoughts: list[tuple[list[str], dict[str, Any]]] = []
        self.calls: list[tuple[str, str, list[str]]] = []
        self.by_item: dict[str, int] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def thought(self, item_id: str, piece: str) -> list[StreamEvent]:
        if not piece or self.reasoning == "drop":
            return []
        if self.reasoning == "mix":
            self.text.append(piece)
            return [Delta(text=piece)]
        if not self.thoughts or self.thoughts[-1][1]["id"] != item_id:
            self.thoughts.append(([], {"id": item_id}))
        self.thoughts[-1][0].append(piece)
        return [ReasoningDelta(text=piece)]

    def announce(self, item: dict[str, Any]) -> list[StreamEvent]:
        number = len(self.calls)
        self.calls.append((item.get("call_id") or f"call_{number}", item["name"], []))
        self.by_item[item["id"]] = number
        return [ToolCallDelta(index=number, call_id=self.calls[number][0], name=item["name"])]

    def fragment(self, item_id: str, fragment: str) -> list[StreamEvent]:
        number = self.by_item[item_id]
        call_id, name, parts = self.calls[number]
        parts.append(fragment)
        return [
            ToolCallDelta(index=number, call_id=call_id, name=name, arguments_fragment=fragment)
        ]

    def done(self, item: dict[str, Any]) -> None:
        if item.get("type") == "reasoning" and item.get("encrypted_content"):
            for _, metadata in self.thoughts:
                if metadata["id"] == item["id"]:
                    metadata["encrypted_content"] = item["encrypted_content"]

    def whole(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    self.text.append(part["text"])
        elif kind == "function_call":
            self.announce(item)
            self.calls[-1][2].append(item.get("arguments") or "{}")
        elif kind == "reasoning":
            text = "".join(part["text"] for part in item.get("summary") or [])
            self.thought(item["id"], text)
            self.done(item)

    def end(self, response: dict[str, Any], status: str) -> None:
        usage = response.get("usage")
        if isinstance(usage, dict):
            self.usage = Usage(
                input_tokens=usage.get("input_tokens", 0),
                output_tokens=usage.get("output_tokens", 0),
            )
        if status == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason", "")
            self.finish_reason = _INCOMPLETE.get(reason, reason)
        else:
            self.finish_reason = "tool_calls" if self.calls else "stop"

    def receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        return build_receipt(
            request,
            adapter=_DESCRIPTOR,
            text="".join(self.text) or None,
            tool_calls=[
                ToolCall(call_id=call_id, name=name, arguments=parse_json_text("".join(parts))[1])
                for call_id, name, parts in self.calls
            ],
            finish_reason=self.finish_reason,
            usage=self.usage,
            reasoning=[
                ReasoningPart(text="".join(texts), provider_metadata={"openai-responses": meta})
                for texts, meta in self.thoughts
            ],
        )


def _failure(response: dict[str, Any], *, leak: bool) -> PortError:
    return _error_frame(response.get("error") or {}, leak=leak)


class _ResponsesFrames(_SSEFrames):
    """The event stream: a terminal event (completed, incomplete, failed) completes it."""

    def __init__(self, bound: int, *, leak: bool, reasoning: str) -> None:
        super().__init__(bound, leak=leak)
        self.turn = _ResponsesTurn(reasoning)

    def _absorb(self, data: bytes) -> list[StreamEvent]:
        try:
            value = json.loads(data)
        except ValueError:
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "malformed event") from None
        turn = self.turn
        kind = value.get("type") if isinstance(value, dict) else None
        if kind == "response.output_text.delta" and value.get("delta"):
            turn.text.append(value["delta"])
            return [Delta(text=value["delta"])]
        if kind == "response.reasoning_summary_text.delta":
            return turn.thought(value["item_id"], value.get("delta") or "")
        if kind == "response.function_call_arguments.delta" and value.get("delta"):
            return turn.fragment(value["item_id"], value["delta"])
        if kind == "response.output_item.added" and value["item"].get("type") == "function_call":
            return turn.announce(value["item"])
        if kind == "response.output_item.done":
            turn.done(value["item"])
        elif kind in ("response.completed", "response.incomplete"):
            turn.end(value["response"], kind.split(".")[1])
            self.complete = True
        elif kind == "response.failed":
            raise _failure(value["response"], leak=self.leak)
        elif kind == "error":
            raise _error_frame(value.get("error") or value, leak=self.leak)
        return []


class _ResponsesBody(_Body):
    def receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        try:
            response = json.loads(bytes(self.data))
        except ValueError:
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "not JSON") from None
        if "error" in response and response.get("status") is None:
            raise _error_frame(response["error"], leak=self.leak)
        if response.get("status") == "failed":
            raise _failure(response, leak=self.leak)
        turn = _ResponsesTurn(self.reasoning)
        for item in response.get("output") or []:
            turn.whole(item)
        turn.end(response, response["status"])
        return turn.receipt(request)


def _responses_body(request: ExecutionRequest, *, lose_encrypted: bool) -> dict[str, Any]:
    """The request as a stateless Responses API body: every turn in ``input``, an assistant
    turn's reasoning items first (``lose_encrypted`` drops their encrypted content)."""
    items: list[dict[str, Any]] = []
    instructions: list[str] = []
    for message in request.interaction.messages:
        if message.role in ("system", "developer"):
            instructions.append(message.content)
        elif message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.content,
                }
            )
        elif message.role == "assistant":
            for part in message.reasoning or []:
                kept = (part.provider_metadata or {}).get("openai-responses") or {}
                item = {"type": "reasoning", "id": kept.get("id"), "summary": []}
                if "encrypted_content" in kept and not lose_encrypted:
                    item["encrypted_content"] = kept["encrypted_content"]
                items.append(item)
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            for call in message.tool_calls or []:
                items.append(
                    {"type": "function_call", "call_id": call.call_id, "name": call.name,
                     "arguments": json.dumps(call.arguments)}
                )  # fmt: skip
        else:
            items.append({"role": "user", "content": message.content})
    body: dict[str, Any] = {"model": "m", "input": items, "store": False}
    if instructions:
        body["instructions"] = "\n\n".join(instructions)
    return body


class _Responses:
    """What turns a mini chat client into a Responses API client (sync or async)."""

    _lose_encrypted: bool
    _leak: bool
    _reasoning: str
    _bound: Any

    def _setup(self, base_url: str, lose_encrypted: bool) -> None:
        self._url = base_url.rstrip("/") + "/responses"
        self._lose_encrypted = lose_encrypted

    def descriptor(self) -> AdapterDescriptor:
        return _DESCRIPTOR

    def _body(self, request: ExecutionRequest, stream: bool) -> dict[str, Any]:
        body = _responses_body(request, lose_encrypted=self._lose_encrypted)
        if stream:
            body["stream"] = True
        return body

    def _frames(self, request: ExecutionRequest) -> Any:
        return _ResponsesFrames(self._bound(request), leak=self._leak, reasoning=self._reasoning)

    def _body_reader(self, request: ExecutionRequest) -> Any:
        return _ResponsesBody(self._bound(request), leak=self._leak, reasoning=self._reasoning)


class MiniResponsesAdapter(_Responses, MiniChatAdapter):
    """A minimal Responses API client: reasoning summaries streamed as ``ReasoningDelta``,
    each item's encrypted content sent back in the next turn."""

    def __init__(self, *, lose_encrypted: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self._setup(options["base_url"], lose_encrypted)


class AsyncMiniResponsesAdapter(_Responses, AsyncMiniChatAdapter):
    """``MiniResponsesAdapter`` over ``httpx.AsyncClient``."""

    def __init__(self, *, lose_encrypted: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self._setup(options["base_url"], lose_encrypted)
