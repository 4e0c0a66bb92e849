"""examples/ollama_chat.py — an adapter for Ollama's NDJSON ``/api/chat``, a protocol runport
does not ship — passes the whole conformance suite, sync and async, through the public
``WireProtocol`` alone: the loopback upstream serves the example's ``OllamaChat`` with every
fault the built-in protocols get."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from runport.conformance import AsyncRuntimeAdapterConformance, RuntimeAdapterConformance, Upstream
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ollama_chat.py"
_spec = importlib.util.spec_from_file_location("ollama_chat_example", EXAMPLE)
assert _spec is not None
assert _spec.loader is not None
ollama = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = ollama
_spec.loader.exec_module(ollama)


class TestOllamaChatAdapter(RuntimeAdapterConformance):
    protocol = ollama.OllamaChat()

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        adapter: RuntimeAdapter = ollama.OllamaChatAdapter(
            upstream.base_url, model=upstream.model, timeout=upstream.read_timeout
        )
        return adapter


class TestAsyncOllamaChatAdapter(AsyncRuntimeAdapterConformance):
    protocol = ollama.OllamaChat()

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        adapter: AsyncRuntimeAdapter = ollama.AsyncOllamaChatAdapter(
            upstream.base_url, model=upstream.model, timeout=upstream.read_timeout
        )
        return adapter


def test_the_adapter_guide_shows_the_example_as_it_is() -> None:
    """docs/adapter-guide.md prints the whole example; it is this file, word for word."""
    guide = (EXAMPLE.parents[1] / "docs" / "adapter-guide.md").read_text(encoding="utf-8")
    assert "```python\n" + EXAMPLE.read_text(encoding="utf-8") + "```\n" in guide
