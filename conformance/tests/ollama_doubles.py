"""The NDJSON members of the zoo: the adapter guide's Ollama example (examples/ollama_chat.py,
a protocol runport does not ship, served through the public ``WireProtocol``), each variant
breaking one promise the way an NDJSON client goes wrong."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from runport.contracts import ExecutionReceipt, ExecutionRequest, StreamEvent
from runport.ports import Sink

_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ollama_chat.py"
_spec = importlib.util.spec_from_file_location("ollama_chat_example", _EXAMPLE)
assert _spec is not None
assert _spec.loader is not None
if _spec.name not in sys.modules:
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _module
    _spec.loader.exec_module(_module)
ollama: Any = sys.modules[_spec.name]

OllamaChat = ollama.OllamaChat
OllamaChatAdapter = ollama.OllamaChatAdapter
AsyncOllamaChatAdapter = ollama.AsyncOllamaChatAdapter


class OllamaBuffering(OllamaChatAdapter):
    """Reads the whole answer, then hands the sink every event at once."""

    def execute_streaming(
        self, request: ExecutionRequest, sink: Sink, *, streamed: bool = True
    ) -> ExecutionReceipt:
        held: list[StreamEvent] = []
        try:
            receipt: ExecutionReceipt = super().execute_streaming(
                request, held.append, streamed=streamed
            )
        finally:
            for event in held:
                sink(event)
        return receipt


class _CutIsComplete(ollama.Turn):
    def receipt(self) -> ExecutionReceipt:
        if self.done is None:  # the body ended before "done": true — taken as the end
            self.done = {"done_reason": "stop"}
        result: ExecutionReceipt = super().receipt()
        return result


class OllamaCutPassedOffAsComplete(OllamaChatAdapter):
    """A stream cut before the ``"done": true`` line is answered as a complete turn."""

    reader = _CutIsComplete


class _FirstCallOnly(ollama.Turn):
    def absorb(self, line: bytes) -> Any:
        chunk = json.loads(line)
        message = chunk.get("message") if isinstance(chunk, dict) else None
        if isinstance(message, dict) and message.get("tool_calls") and self.calls:
            del message["tool_calls"]  # a later line's call is lost
            line = json.dumps(chunk).encode()
        return super().absorb(line)


class OllamaLosesToolCall(OllamaChatAdapter):
    """Keeps the first tool call of a turn and loses every later one."""

    reader = _FirstCallOnly
