"""Fixtures for the adapter's tests: a loopback upstream and an adapter pointed at it.

``--import-mode=importlib`` puts no test folder on ``sys.path``, so this one adds its own folder
for the shared test doubles in ``openai_upstream.py`` (a name no other package's tests use).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
# runport-http's tests folder: the request builders and streaming-law checks every provider shares.
sys.path.append(str(Path(__file__).parents[2] / "http" / "tests"))

from openai_upstream import API_KEY, LoopbackUpstream, TrackingTransport

from runport.openai import OpenAIChatAdapter

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
