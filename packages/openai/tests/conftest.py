"""Fixtures for the adapter's tests: a loopback upstream and an adapter pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from runport.openai import OpenAIChatAdapter

from .openai_upstream import API_KEY, LoopbackUpstream, TrackingTransport

READ_TIMEOUT = 0.5
"""Short, so a stalled stream fails fast; no test asserts on timing."""


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


@pytest.fixture
def adapter(
    upstream: LoopbackUpstream, transport: TrackingTransport
) -> Iterator[OpenAIChatAdapter]:
    client = httpx.Client(transport=transport, timeout=httpx.Timeout(5.0, read=READ_TIMEOUT))
    yield OpenAIChatAdapter(
        base_url=upstream.base_url, model="test-model", api_key=API_KEY, http_client=client
    )
    client.close()
    assert transport.all_closed, "a response was left open"
