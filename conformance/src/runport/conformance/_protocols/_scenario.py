"""``scenario``: a case as a turn of a ``runport.mock/v1`` scenario, which the adapter plays
in-process (``upstream.scenario``, loaded by ``runport.core.parse_scenario``, the same loader
every scripted runtime uses, so the suite never depends on ``runport.mock``).

The transcript's frames are the turn's events as JSON; the mock says every fault as a
``fail`` event with its code, so the error frame is that event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from runport.conformance._cases import (
    Call,
    Case,
    Cite,
    Generated,
    Provided,
    ServerTool,
    Text,
    Thought,
)
from runport.conformance._wire_protocol import (
    Frame,
    Transcript,
    WireContext,
    WireProtocol,
    WireRequest,
    json_bytes,
)

__all__ = ["Scenario"]


def _event(step: Text | Thought | Call) -> dict[str, Any] | None:
    if isinstance(step, Text):
        return {"kind": "delta", "text": step.text}
    if isinstance(step, Thought):
        if step.redacted is not None or not step.text:  # the mock has no empty reasoning_delta
            return None
        thought: dict[str, Any] = {"kind": "reasoning_delta", "text": step.text}
        if step.signature is not None:
            thought["signature"] = step.signature
        return thought
    event: dict[str, Any] = {
        "kind": "tool_call_delta",
        "index": step.index,
        "arguments_fragment": step.fragment,
    }
    if step.name is not None:
        event["name"] = step.name
    if step.call_id is not None:
        event["call_id"] = step.call_id
    return event


def _provided(step: Provided) -> list[dict[str, Any]]:
    """What the provider did itself, as the mock's events (a server tool: its call, then its
    result)."""
    if isinstance(step, ServerTool):
        call = {"kind": "server_tool_call", "call_id": step.call_id, "name": step.name}
        result = {"kind": "server_tool_result", "call_id": step.call_id, "output": step.output}
        return [{**call, "input": step.input}, result]
    if isinstance(step, Cite):
        source = {"type": "url", "url": step.url, "title": step.title}
        return [{"kind": "citation", "source": source, "start": step.start, "end": step.end}]
    return [{"kind": "file_delta", "media_type": step.media_type, "data": step.data}]


class Scenario(WireProtocol):
    """The runport mock's own script: ``upstream.scenario`` holds one turn per planned call;
        reasoning is one part per block, ``{"mock": {"signature": …}}`` when signed; a turn ends
    every way runport names (``length``, ``content_filter``, ``pause``) and counts cache reads
    and writes; it runs server tools, cites sources and generates files."""

    name: ClassVar[str] = "scenario"
    endpoint: ClassVar[str] = "play upstream.scenario"
    in_process: ClassVar[bool] = True
    features: ClassVar[frozenset[str]] = frozenset(
        {
            "cut_turns",
            "cut_calls",
            "refusals",
            "pause_turns",
            "cache_usage",
            "cache_writes",
            "citations",
            "server_tools",
            "files",
        }
    )

    def recognise(self, request: WireRequest) -> bool | str:
        return "a scenario is played in-process, not requested over HTTP"

    def reasoning_metadata(
        self, number: int, block: Sequence[Thought], signature: str | None
    ) -> dict[str, Any] | None:
        return None if signature is None else {"mock": {"signature": signature}}

    def stream(self, case: Case, context: WireContext) -> Transcript:
        steps: list[Frame] = []
        usage: list[Frame] = []
        for step in case.steps:
            if isinstance(step, Text | Thought | Call):
                event = _event(step)
                if event is not None:
                    steps.append(Frame(json_bytes(event), 1))
            elif isinstance(step, ServerTool | Cite | Generated):
                steps += [Frame(json_bytes(event), 1) for event in _provided(step)]
            else:
                counts = {"input_tokens": step.input_tokens, "output_tokens": step.output_tokens}
                if step.cache_read:
                    counts["cache_read_tokens"] = step.cache_read
                if step.cache_write:
                    counts["cache_write_tokens"] = step.cache_write
                usage.append(Frame(json_bytes({"kind": "usage", **counts})))
        finish = {"kind": "finish", "finish_reason": case.finish_reason}
        return Transcript([*steps, *usage], closing=[json_bytes(finish)])

    def body(self, case: Case, context: WireContext) -> bytes:
        raise NotImplementedError("a scenario has no unstreamed body: the runtime plays it")

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        fault = case.fault
        assert fault is not None
        return json_bytes(
            {
                "kind": "fail",
                "code": str(fault.code),
                "message": f"scripted {fault.kind} ({case.name})",
                "retry_after_ms": fault.retry_after_ms,
            }
        )
