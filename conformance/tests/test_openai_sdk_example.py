"""docs/adapter-guide.md's last example — the official ``openai`` SDK wrapped as a runport
adapter, its retries off and its timeout the suite's — passes the whole conformance suite on
the ``openai-chat`` upstream: the path most third-party authors take."""

from __future__ import annotations

from pathlib import Path

from runport.conformance import RuntimeAdapterConformance, Upstream
from runport.ports import RuntimeAdapter

from .openai_sdk_chat import OpenAISDKChatAdapter

EXAMPLE = Path(__file__).with_name("openai_sdk_chat.py")


class TestOpenAISDKChatAdapter(RuntimeAdapterConformance):
    protocol = "openai-chat"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return OpenAISDKChatAdapter(
            base_url=upstream.base_url,
            api_key=upstream.api_key,
            model=upstream.model,
            timeout=upstream.read_timeout,
        )


def test_the_adapter_guide_shows_the_example_as_it_is() -> None:
    guide = (EXAMPLE.parents[2] / "docs" / "adapter-guide.md").read_text(encoding="utf-8")
    assert "```python\n" + EXAMPLE.read_text(encoding="utf-8") + "```\n" in guide
