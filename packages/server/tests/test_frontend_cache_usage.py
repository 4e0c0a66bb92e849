"""Prompt-cache counts at a run's end (ADR 0051): the UI message stream's ``finish`` carries
the run's summed usage as ``messageMetadata``, AG-UI's ``RUN_FINISHED`` its usage per provider
and model; cache counts are written only when the receipts reported them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from runport.contracts import Complete, RunEvent, Usage
from runport.server import agui_stream, ui_message_stream

from .frontend_runs import chat_run_events, replay

CACHED = Usage(input_tokens=100, output_tokens=5, cache_read_tokens=80, cache_write_tokens=10)
PLAIN = Usage(input_tokens=100, output_tokens=5)


def _with_usage(usage: Usage) -> list[RunEvent]:
    events: list[RunEvent] = []
    for event in chat_run_events():
        if isinstance(event, Complete):
            event = Complete(receipt=event.receipt.model_copy(update={"usage": usage}))
        events.append(event)
    assert sum(isinstance(event, Complete) for event in events) == 2
    return events


def _sent(encoder: Any, events: list[RunEvent]) -> list[dict[str, Any]]:
    async def collect() -> list[bytes]:
        return [chunk async for chunk in encoder(replay(events))]

    frames = b"".join(asyncio.run(collect())).decode().split("\n\n")
    data = [frame.removeprefix("data: ") for frame in frames if frame]
    return [json.loads(payload) for payload in data if payload != "[DONE]"]


def _agui(events: Any) -> Any:
    return agui_stream(events, thread_id="t", run_id="r")


def test_the_ui_streams_finish_carries_the_runs_summed_cache_counts() -> None:
    finish = _sent(ui_message_stream, _with_usage(CACHED))[-1]
    assert finish["type"] == "finish"
    assert finish["messageMetadata"] == {
        "usage": {
            "inputTokens": 200,
            "outputTokens": 10,
            "totalTokens": 210,
            "cacheReadTokens": 160,
            "cacheWriteTokens": 20,
        }
    }


def test_ag_uis_run_finished_carries_the_cache_counts() -> None:
    finished = _sent(_agui, _with_usage(CACHED))[-1]
    assert finished["type"] == "RUN_FINISHED"
    [usage] = finished["usage"]
    assert (usage["inputTokens"], usage["cacheReadTokens"], usage["cacheWriteTokens"]) == (
        200,
        160,
        20,
    )


@pytest.mark.parametrize("encoder", [ui_message_stream, _agui], ids=["ui", "agui"])
def test_without_cache_counts_no_cache_keys_are_written(encoder: Any) -> None:
    text = json.dumps(_sent(encoder, _with_usage(PLAIN))[-1])
    assert "cacheReadTokens" not in text
    assert "cacheWriteTokens" not in text
    assert '"inputTokens": 200' in text
