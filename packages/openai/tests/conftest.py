"""Fixtures for the adapter's tests: a loopback upstream and an adapter pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from runport.openai import OpenAIChatAdapter

from .openai_upstream import API_KEY, LoopbackUpstream, TrackingTransport

READ_TIMEOUT = 10.0
"""Long, so a loaded machine never turns a slow frame into a timeout."""

STALL_READ_TIMEOUT = 0.5
"""For ``stalling_adapter``: short, so a stalled stream fails fast. A test on it asserts only
what holds however late the upstream's frames come (the timeout's code, what was sent back):
never that a frame ahead of the stall arrived in time."""


@pytest.fixture
def upstream() -> Iterator[LoopbackUpstream]:
    server = LoopbackUpstream()
    yield server
    server.close()


@pytest.fixture
def transport() -> Iterator[TrackingTransport]:
    tracking = TrackingTransport()
    yield tracking
    tracking.close()


def _adapter(
    upstream: LoopbackUpstream, transport: TrackingTransport, read_timeout: float
) -> Iterator[OpenAIChatAdapter]:
    client = httpx.Client(transport=transport, timeout=httpx.Timeout(10.0, read=read_timeout))
    yield OpenAIChatAdapter(
        base_url=upstream.base_url, model="test-model", api_key=API_KEY, http_client=client
    )
    client.close()
    assert transport.all_closed, "a response was left open"


@pytest.fixture
def adapter(
    upstream: LoopbackUpstream, transport: TrackingTransport
) -> Iterator[OpenAIChatAdapter]:
    yield from _adapter(upstream, transport, READ_TIMEOUT)


@pytest.fixture
def stalling_adapter(
    upstream: LoopbackUpstream, transport: TrackingTransport
) -> Iterator[OpenAIChatAdapter]:
    """An adapter whose read timeout a ``Stall`` outlasts at once."""
    yield from _adapter(upstream, transport, STALL_READ_TIMEOUT)
