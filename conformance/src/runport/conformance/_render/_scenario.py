"""``scenario``: a case as a ``runport.mock/v1`` mapping, validated by
``runport.core.parse_scenario`` — the same loader every scripted runtime uses, so the suite
never depends on ``runport.mock``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runport.conformance._cases import Call, Case, Text, Thought
from runport.core import Scenario, parse_scenario

__all__ = ["render_scenario"]


def _scenario_events(case: Case) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    usage: list[dict[str, Any]] = []
    for step in case.steps:
        if isinstance(step, Text):
            events.append({"kind": "delta", "text": step.text})
        elif isinstance(step, Thought):
            if step.redacted is None and step.text:  # the mock has no empty reasoning_delta
                thought: dict[str, Any] = {"kind": "reasoning_delta", "text": step.text}
                if step.signature is not None:
                    thought["signature"] = step.signature
                events.append(thought)
        elif isinstance(step, Call):
            event: dict[str, Any] = {
                "kind": "tool_call_delta",
                "index": step.index,
                "arguments_fragment": step.fragment,
            }
            if step.name is not None:
                event["name"] = step.name
            if step.call_id is not None:
                event["call_id"] = step.call_id
            events.append(event)
        else:
            usage.append(
                {
                    "kind": "usage",
                    "input_tokens": step.input_tokens,
                    "output_tokens": step.output_tokens,
                }
            )
    events.extend(usage)
    fault = case.fault
    if fault is None or fault.kind == "oversize":
        events.append({"kind": "finish", "finish_reason": case.finish_reason})
    else:
        events.append(
            {
                "kind": "fail",
                "code": str(fault.code),
                "message": f"scripted {fault.kind} ({case.name})",
                "retry_after_ms": fault.retry_after_ms,
            }
        )
    return events


def render_scenario(cases: Sequence[Case], *, scenario_id: str) -> Scenario:
    """One turn per case, in order: call *n* on the adapter plays ``cases[n]``."""
    return parse_scenario(
        {
            "api_version": "runport.mock/v1",
            "id": scenario_id,
            "turns": [{"events": _scenario_events(case)} for case in cases],
        },
        source=f"<runport.conformance {scenario_id}>",
    )
