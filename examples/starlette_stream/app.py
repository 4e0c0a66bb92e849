"""A Starlette endpoint that streams a contract's events as server-sent events (docs/async.md).

Run it from the repository root, after the README's main command made .venv:
    .venv/bin/uvicorn --app-dir examples/starlette_stream app:app
    curl -N 'http://127.0.0.1:8000/story?topic=a+fox+who+could+not+sleep'

Each event of the turn is one SSE frame (``event: Delta``, ``data: {...}``) as it arrives,
and the last frame is the envelope (``event: envelope``). ``/run?topic=…`` streams a whole run
(``astream_run``: tool turns and corrections) the same way, its last frame the run's result
(``event: result``, ``RunResult.model_dump_json()``). The adapter is the scripted mock
playing scenario.yaml beside this file; ``RUNPORT_EXAMPLE_ADAPTER=openai`` (with
``RUNPORT_OPENAI_BASE_URL``, ``RUNPORT_OPENAI_MODEL`` and ``OPENAI_API_KEY``) streams from an
OpenAI-compatible server instead, or name any installed async adapter.

A client that disconnects mid-stream stops the run: Starlette cancels the response, which
leaves the ``astream`` block, and the adapter closes its upstream at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from runport.application import aclose_adapter, astream, astream_run, async_adapter_factory

HERE = Path(__file__).parent
CONTRACT = HERE / "contract.yaml"
ADAPTER = os.environ.get("RUNPORT_EXAMPLE_ADAPTER", "mock")

log = logging.getLogger("starlette_stream")

# Tried once at start (a missing adapter or setting fails here, not on every request); each
# request then gets a fresh adapter, so calls stay independent.
new_adapter = async_adapter_factory(
    ADAPTER, scenario=HERE / "scenario.yaml" if ADAPTER == "mock" else None
)


async def frames(topic: str) -> AsyncIterator[str]:
    adapter = new_adapter()
    try:
        async with astream(CONTRACT, adapter, inputs={"topic": topic}) as events:
            async for event in events:
                yield f"event: {event.kind}\ndata: {event.model_dump_json()}\n\n"
        yield f"event: envelope\ndata: {events.envelope.model_dump_json()}\n\n"
    except asyncio.CancelledError:
        log.warning("the client went away mid-stream: the run was cancelled")
        raise
    finally:
        await aclose_adapter(adapter)


async def run_frames(topic: str) -> AsyncIterator[str]:
    adapter = new_adapter()
    try:
        async with astream_run(CONTRACT, adapter, inputs={"topic": topic}) as events:
            async for event in events:
                yield f"event: {event.kind}\ndata: {event.model_dump_json()}\n\n"
        yield f"event: result\ndata: {events.result.model_dump_json()}\n\n"
    finally:
        await aclose_adapter(adapter)


def sse(frames: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        frames, media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )


async def story(request: Request) -> StreamingResponse:
    return sse(frames(request.query_params.get("topic", "")))


async def whole_run(request: Request) -> StreamingResponse:
    return sse(run_frames(request.query_params.get("topic", "")))


app = Starlette(routes=[Route("/story", story), Route("/run", whole_run)])
