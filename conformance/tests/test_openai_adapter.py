"""``runport.openai.OpenAIChatAdapter`` passes the whole suite on the ``openai-chat`` protocol,
over real HTTP to the suite's loopback upstream."""

from __future__ import annotations

import pytest

from runport.conformance import RuntimeAdapterConformance, Upstream
from runport.ports import RuntimeAdapter

openai = pytest.importorskip("runport.openai", reason="runport-openai is not installed")


class TestOpenAIChatAdapter(RuntimeAdapterConformance):
    protocol = "openai-chat"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        adapter: RuntimeAdapter = openai.OpenAIChatAdapter(
            base_url=upstream.base_url,
            model=upstream.model,
            api_key=upstream.api_key,
            timeout=upstream.read_timeout,
        )
        return adapter
