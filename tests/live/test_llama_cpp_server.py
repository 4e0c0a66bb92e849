"""The live proof (issue 3): ``OpenAIChatAdapter`` against a real OpenAI-compatible server that
nobody on this team wrote — llama.cpp's, from ``llama-cpp-python[server]`` — on 127.0.0.1.

The model is written here with the ``gguf`` package: a llama-architecture network of 2 layers
with random weights and a tiny byte-level BPE vocabulary. Its words are noise, but the server
streams them, constrains tool arguments and JSON with its grammars, and frames everything the
way it frames a real model's answer — which is what is under test. Each call has the streaming
law checked as events arrive.

Needs ``llama-cpp-python[server]`` (compiled from source: about 5 minutes on two cores),
``gguf`` and ``numpy`` — the ``live`` tox env installs them. Without them the module is
skipped, with that reason.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("llama_cpp", reason="the live tier needs llama-cpp-python[server]")
gguf = pytest.importorskip("gguf", reason="the live tier writes its model with gguf")
np = pytest.importorskip("numpy", reason="the live tier writes its model with numpy")

from runport.contracts import (  # noqa: E402
    CompiledInteraction,
    Complete,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    Message,
    ToolSpec,
)
from runport.core import StreamAssembler  # noqa: E402
from runport.openai import OpenAIChatAdapter  # noqa: E402
from runport.ports import PortError  # noqa: E402

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] or '' }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("a", "n")]
EMBED, LAYERS, HEADS, FFN, CONTEXT = 64, 2, 4, 128, 512


def _byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode table: every byte as a printable character, as byte-level BPE
    vocabularies spell them (GPT-2's published scheme, rewritten here)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    symbols = {}
    extra = 0
    for byte in range(256):
        if byte in printable:
            symbols[byte] = chr(byte)
        else:
            symbols[byte] = chr(256 + extra)
            extra += 1
    return [symbols[byte] for byte in range(256)]


def write_model(path: Path) -> None:
    tokens = _byte_symbols() + ["".join(pair) for pair in MERGES] + SPECIALS
    types = [1] * (len(tokens) - len(SPECIALS)) + [3] * len(SPECIALS)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("runport-live-random")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBED)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(EMBED // HEADS)
    writer.add_file_type(0)  # all F32
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges([" ".join(pair) for pair in MERGES])
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHATML)
    rng = np.random.default_rng(7)

    def weight(*shape: int) -> Any:
        return rng.normal(0.0, 0.05, shape).astype(np.float32)

    writer.add_tensor("token_embd.weight", weight(len(tokens), EMBED))
    writer.add_tensor("output_norm.weight", np.ones(EMBED, dtype=np.float32))
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(EMBED, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{block}.{name}.weight", weight(EMBED, EMBED))
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(EMBED, dtype=np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", weight(FFN, EMBED))
        writer.add_tensor(f"{block}.ffn_up.weight", weight(FFN, EMBED))
        writer.add_tensor(f"{block}.ffn_down.weight", weight(EMBED, FFN))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's server on 127.0.0.1, serving the random model; yields its base URL."""
    folder = tmp_path_factory.mktemp("live")
    model = folder / "random.gguf"
    write_model(model)
    port = _free_port()
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(CONTEXT),
            "--n_threads",
            "2",
            # The chat handler that turns tools into grammar-constrained tool calls.
            "--chat_format",
            "chatml-function-calling",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "NO_PROXY": "127.0.0.1"},
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama.cpp's server exited ({process.returncode}); see {log.name}")
            try:
                if httpx.get(base_url + "/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp's server was not ready in 120 s; see {log.name}")
            time.sleep(0.2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture
def adapter(server: str) -> Iterator[OpenAIChatAdapter]:
    with OpenAIChatAdapter(
        base_url=server, model="random", response_format_mode="json_object", timeout=60.0
    ) as live:
        yield live


WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 12}},
        "required": ["city"],
        "additionalProperties": False,
    },
)


def request(
    schema: dict[str, Any] | None = None, *, tools: list[ToolSpec] | None = None, **policy: Any
) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="live/0",
            contract_id="live",
            contract_version="1",
            messages=[Message(role="user", content="Say something.")],
            output_schema=schema or {"type": "string"},
            runtime_policy={"temperature": 0, "seed": 1, "max_tokens": 24, **policy},
            tools=tools,
        )
    )


def streamed(
    adapter: OpenAIChatAdapter, call: ExecutionRequest
) -> tuple[StreamAssembler, ExecutionReceipt | PortError]:
    """``execute_streaming`` under the streaming law: grammar checked as events arrive, then
    the terminal against the outcome."""
    assembler = StreamAssembler()
    outcome: ExecutionReceipt | PortError
    try:
        outcome = adapter.execute_streaming(call, assembler.feed)
    except PortError as error:
        outcome = error
    terminal = assembler.terminal
    if isinstance(outcome, PortError):
        assert isinstance(terminal, Failed)
        assert terminal.code == outcome.code
    else:
        assert isinstance(terminal, Complete)
        assert terminal.receipt == outcome
        assert assembler.assembly_problems(outcome) == []
    return assembler, outcome


def test_text_streams_and_matches_execute(adapter: OpenAIChatAdapter) -> None:
    assembler, receipt = streamed(adapter, request())
    assert isinstance(receipt, ExecutionReceipt)
    assert len(assembler.events) > 2  # real progress, not one terminal
    assert receipt.finish_reason in ("stop", "length")
    plain = adapter.execute(request())
    # llama.cpp ignores include_usage, so the receipts may differ in usage alone (law 2).
    assert plain.usage is not None
    assert plain.model_copy(update={"usage": None}) == receipt.model_copy(update={"usage": None})


def test_a_named_tool_choice_streams_a_tool_call(adapter: OpenAIChatAdapter) -> None:
    choice = {"type": "function", "function": {"name": "get_weather"}}
    assembler, receipt = streamed(
        adapter, request(tools=[WEATHER], tool_choice=choice, max_tokens=64)
    )
    assert isinstance(receipt, ExecutionReceipt)
    assert receipt.tool_calls is not None
    (call,) = receipt.tool_calls
    assert call.name == "get_weather"
    fragments = [e for e in assembler.events if e.kind == "ToolCallDelta"]
    assert len(fragments) > 1  # streamed in pieces, identity repeated on each
    assert receipt.output is None


def test_json_object_mode_gives_json(adapter: OpenAIChatAdapter) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    _, receipt = streamed(adapter, request(schema, max_tokens=48))
    assert isinstance(receipt, ExecutionReceipt)
    assert receipt.text is not None
    assert receipt.text.lstrip().startswith("{")
    if receipt.finish_reason == "stop":
        assert receipt.output_schema_valid is True


def test_tool_choice_required_is_an_empty_body_and_so_truncation(
    adapter: OpenAIChatAdapter,
) -> None:
    assembler, error = streamed(adapter, request(tools=[WEATHER], tool_choice="required"))
    assert isinstance(error, PortError)
    assert error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED
    assert len(assembler.events) == 1  # only the Failed
