"""`runport run … --adapter openai|azure-openai|anthropic|gemini|bedrock|bedrock-anthropic|
ollama|cohere|vertex-gemini|vertex-anthropic` end to end: the CLI finds each provider through
its entry point, takes key (Vertex AI: Google's default credentials) and model from the
environment, and streams a real SSE (Bedrock: eventstream, Claude's events in its `chunk`
messages for bedrock-anthropic; Ollama: NDJSON) response from a server on 127.0.0.1; without
the variables it says which are missing."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from runport.application import create_adapter, create_async_adapter
from runport.conformance.eventstream import event_message

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "examples" / "quickstart"
PIECES = ["Bytes ", "arrive ", "one by one"]
KEY = "planted-SECRET-key-0451"


def _anthropic() -> bytes:
    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    usage = {"input_tokens": 9, "output_tokens": 1}
    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": usage}
    out = [event("message_start", {"type": "message_start", "message": message})]
    block = {"type": "text", "text": ""}
    out.append(
        event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        )
    )
    for piece in PIECES:
        delta = {"type": "text_delta", "text": piece}
        out.append(
            event(
                "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
            )
        )
    out.append(event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 3},
            },
        )
    )
    out.append(event("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def _openai() -> bytes:
    def frame(payload: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m", "created": 0}
    deltas = [{"role": "assistant"}, *({"content": piece} for piece in PIECES)]
    out = [frame({**chunk, "choices": [{"index": 0, "delta": delta}]}) for delta in deltas]
    out.append(frame({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    usage = {"prompt_tokens": 9, "completion_tokens": 3}
    out.append(frame({**chunk, "choices": [], "usage": usage}))
    return b"".join([*out, b"data: [DONE]\n\n"])


def _gemini() -> bytes:
    out = []
    for position, piece in enumerate(PIECES):
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": [{"text": piece}]},
            "index": 0,
        }
        if position == len(PIECES) - 1:
            candidate["finishReason"] = "STOP"
        usage = {"promptTokenCount": 9, "candidatesTokenCount": position + 1}
        out.append(
            b"data: "
            + json.dumps({"candidates": [candidate], "usageMetadata": usage}).encode()
            + b"\r\n\r\n"
        )
    return b"".join(out)


def _bedrock() -> bytes:
    deltas = [
        event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}})
        for piece in PIECES
    ]
    usage = {"inputTokens": 9, "outputTokens": 3, "totalTokens": 12}
    return b"".join(
        [
            event_message("messageStart", {"role": "assistant"}),
            *deltas,
            event_message("contentBlockStop", {"contentBlockIndex": 0}),
            event_message("messageStop", {"stopReason": "end_turn"}),
            event_message("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}),
        ]
    )


def _bedrock_anthropic() -> bytes:
    """``_anthropic``'s events as InvokeModelWithResponseStream relays them: each one's JSON
    base64 in the ``bytes`` of a ``chunk`` message."""
    frames = _anthropic().split(b"\n\n")
    events = [frame.split(b"\ndata: ", 1)[1] for frame in frames if b"\ndata: " in frame]
    return b"".join(
        event_message("chunk", {"bytes": base64.b64encode(event).decode()}) for event in events
    )


def _ollama() -> bytes:
    def line(message: dict[str, Any], **more: Any) -> bytes:
        chunk = {"model": "llama-tiny", "created_at": "2026-01-01T00:00:00Z", "done": False}
        return json.dumps({**chunk, "message": {"role": "assistant", **message}, **more}).encode()

    out = [line({"content": piece}) for piece in PIECES]
    out.append(
        line({"content": ""}, done=True, done_reason="stop", prompt_eval_count=9, eval_count=3)
    )
    return b"\n".join(out) + b"\n"


def _cohere() -> bytes:
    def event(payload: dict[str, Any]) -> bytes:
        return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()

    out = [event({"type": "message-start", "id": "m", "delta": {"message": {"role": "assistant"}}})]
    for piece in PIECES:
        content = {"message": {"content": {"text": piece}}}
        out.append(event({"type": "content-delta", "index": 0, "delta": content}))
    usage = {"tokens": {"input_tokens": 9, "output_tokens": 3}}
    end = {"finish_reason": "COMPLETE", "usage": usage}
    out.append(event({"type": "message-end", "delta": end}))
    return b"".join(out)


BODIES = {
    "openai": _openai(),
    "azure-openai": _openai(),
    "anthropic": _anthropic(),
    "gemini": _gemini(),
    "bedrock": _bedrock(),
    "bedrock-anthropic": _bedrock_anthropic(),
    "ollama": _ollama(),
    "cohere": _cohere(),
}
ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.tiny-v1:0"
PREFIXES = {adapter: f"RUNPORT_{adapter.upper().replace('-', '_')}" for adapter in BODIES}


class _Handler(BaseHTTPRequestHandler):
    body: ClassVar[bytes] = b""
    content_type: ClassVar[str] = "text/event-stream"
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers = {k.lower(): v for k, v in self.headers.items()}
        type(self).seen.append({"path": self.path, "headers": headers, "body": payload})
        self.send_response(200)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def upstream() -> Iterator[str]:
    _Handler.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _run(adapter: str, env: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "runport.cli",
            *options,
            "run",
            str(QUICK / "contract.yaml"),
            "--input",
            str(QUICK / "input.json"),
            "--adapter",
            adapter,
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _clean_env() -> dict[str, str]:
    names = (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "AWS_BEARER_TOKEN_BEDROCK",
        "OLLAMA_API_KEY",
        "CO_API_KEY",
        "COHERE_API_KEY",
    )
    return {
        k: v
        for k, v in os.environ.items()
        if k not in names and not k.startswith(("RUNPORT_", "AZURE_OPENAI_"))
    }


@pytest.mark.parametrize(
    ("adapter", "variables", "path", "key_header", "adapter_id"),
    [
        (
            "openai",
            {"OPENAI_API_KEY": KEY, "RUNPORT_OPENAI_MODEL": "tiny"},
            "/v1/chat/completions",
            "authorization",
            "openai-chat",
        ),
        (
            "azure-openai",
            {"AZURE_OPENAI_API_KEY": KEY, "RUNPORT_AZURE_OPENAI_MODEL": "tiny-prod"},
            "/openai/deployments/tiny-prod/chat/completions?api-version=2024-10-21",
            "api-key",
            "azure-openai-chat",
        ),
        (
            "anthropic",
            {"ANTHROPIC_API_KEY": KEY, "RUNPORT_ANTHROPIC_MODEL": "claude-tiny"},
            "/v1/messages",
            "x-api-key",
            "anthropic-messages",
        ),
        (
            "gemini",
            {"GOOGLE_API_KEY": KEY, "RUNPORT_GEMINI_MODEL": "gemini-tiny"},
            "/v1beta/models/gemini-tiny:streamGenerateContent?alt=sse",
            "x-goog-api-key",
            "gemini",
        ),
        (
            "bedrock",
            {"AWS_BEARER_TOKEN_BEDROCK": KEY, "RUNPORT_BEDROCK_MODEL": ARN},
            "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile"
            "%2Fus.tiny-v1%3A0/converse-stream",
            "authorization",
            "bedrock-converse",
        ),
        (
            "bedrock-anthropic",
            {"AWS_BEARER_TOKEN_BEDROCK": KEY, "RUNPORT_BEDROCK_ANTHROPIC_MODEL": ARN},
            "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile"
            "%2Fus.tiny-v1%3A0/invoke-with-response-stream",
            "authorization",
            "bedrock-anthropic",
        ),
        (
            "ollama",
            {"OLLAMA_API_KEY": KEY, "RUNPORT_OLLAMA_MODEL": "llama-tiny"},
            "/api/chat",
            "authorization",
            "ollama",
        ),
        (
            "cohere",
            {"CO_API_KEY": KEY, "RUNPORT_COHERE_MODEL": "command-tiny"},
            "/v2/chat",
            "authorization",
            "cohere-chat",
        ),
    ],
)
def test_run_streams_from_the_provider(
    upstream: str,
    adapter: str,
    variables: dict[str, str],
    path: str,
    key_header: str,
    adapter_id: str,
) -> None:
    _Handler.body = BODIES[adapter]
    _Handler.content_type = {
        "bedrock": "application/vnd.amazon.eventstream",
        "bedrock-anthropic": "application/vnd.amazon.eventstream",
        "ollama": "application/x-ndjson",
    }.get(adapter, "text/event-stream")
    base = f"{PREFIXES[adapter]}_BASE_URL"
    if adapter == "azure-openai":
        base = "AZURE_OPENAI_ENDPOINT"  # the variable Azure's own SDK reads
    url = upstream + "/v1" if adapter == "openai" else upstream  # OpenAI's base names its /v1
    result = _run(adapter, {**_clean_env(), **variables, base: url})
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["kind"] for e in events] == ["Delta", "Delta", "Delta", "Complete"]
    receipt = events[-1]["receipt"]
    assert receipt["text"] == "".join(PIECES)
    assert receipt["adapter"]["id"] == adapter_id
    assert receipt["usage"] == {"input_tokens": 9, "output_tokens": 3}
    assert KEY not in result.stdout + result.stderr
    (request,) = _Handler.seen
    assert request["path"] == path
    assert request["headers"][key_header].removeprefix("Bearer ") == KEY
    if adapter not in ("gemini", "bedrock", "bedrock-anthropic"):  # a stream in the path
        assert request["body"]["stream"] is True
        assert request["body"]["model"] == variables[f"{PREFIXES[adapter]}_MODEL"]
    if adapter == "bedrock-anthropic":  # Bedrock refuses either key
        assert "stream" not in request["body"]
        assert "model" not in request["body"]
        assert request["body"]["anthropic_version"] == "bedrock-2023-05-31"


@pytest.mark.parametrize(
    ("adapter", "source", "publisher"),
    [("vertex-gemini", "gemini", "google"), ("vertex-anthropic", "anthropic", "anthropic")],
)
def test_run_streams_from_vertex_ai_with_google_s_default_credentials(
    tmp_path: Path, adapter: str, source: str, publisher: str
) -> None:
    """The Vertex AI entry points sign with the service account
    ``GOOGLE_APPLICATION_CREDENTIALS`` names (a token from its token endpoint) and post to the
    project's location: a loopback Vertex AI that checks both (runport.conformance.vertex)."""
    from runport.conformance.vertex import VertexEmulation

    prefix = f"RUNPORT_{adapter.upper().replace('-', '_')}"
    with VertexEmulation([("text/event-stream", BODIES[source])]) as vertex:
        account = vertex.service_account_info()
        credentials = tmp_path / "service-account.json"
        credentials.write_text(json.dumps(account), encoding="utf-8")
        env = {
            **_clean_env(),
            "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
            "RUNPORT_VERTEX_PROJECT": "my-project-1",
            "RUNPORT_VERTEX_LOCATION": "europe-west4",
            f"{prefix}_MODEL": "model-tiny",
            f"{prefix}_BASE_URL": vertex.base_url,
        }
        result = _run(adapter, env)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["kind"] for e in events] == ["Delta", "Delta", "Delta", "Complete"]
    assert events[-1]["receipt"]["text"] == "".join(PIECES)
    assert vertex.refused == []
    (request,) = vertex.requests
    assert (request.project, request.location) == ("my-project-1", "europe-west4")
    assert (request.publisher, request.model) == (publisher, "model-tiny")
    assert request.verb in ("streamGenerateContent", "streamRawPredict")
    assert request.headers["authorization"].startswith("Bearer ")
    assert vertex.tokens_issued == 1
    secret = account["private_key"].splitlines()[1]  # a line of the key itself
    assert secret not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("adapter", "named"),
    [
        ("openai", "RUNPORT_OPENAI_BASE_URL and RUNPORT_OPENAI_MODEL"),
        (
            "azure-openai",
            "RUNPORT_AZURE_OPENAI_BASE_URL (or AZURE_OPENAI_ENDPOINT) and "
            "RUNPORT_AZURE_OPENAI_MODEL",
        ),
        ("anthropic", "ANTHROPIC_API_KEY and RUNPORT_ANTHROPIC_MODEL"),
        ("gemini", "GEMINI_API_KEY (or GOOGLE_API_KEY) and RUNPORT_GEMINI_MODEL"),
        ("bedrock", "RUNPORT_BEDROCK_MODEL"),
        ("bedrock-anthropic", "RUNPORT_BEDROCK_ANTHROPIC_MODEL"),
        ("ollama", "RUNPORT_OLLAMA_MODEL"),
        ("cohere", "CO_API_KEY (or COHERE_API_KEY) and RUNPORT_COHERE_MODEL"),
    ],
)
def test_run_without_key_or_model_names_the_variables(adapter: str, named: str) -> None:
    result = _run(adapter, _clean_env())
    assert result.returncode == 1
    assert named in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_vv_shows_the_wire_on_stderr_without_the_key_or_the_text(upstream: str) -> None:
    _Handler.body = BODIES["openai"]
    env = {
        **_clean_env(),
        "OPENAI_API_KEY": KEY,
        "RUNPORT_OPENAI_MODEL": "tiny",
        "RUNPORT_OPENAI_BASE_URL": upstream + "/v1",
    }
    result = _run("openai", env, "-vv")
    assert result.returncode == 0, result.stderr
    logged = [line for line in result.stderr.splitlines() if line.startswith("runport: ")]
    target = f"POST {upstream}/v1/chat/completions"
    assert f"runport: DEBUG runport.http: {target}: sending (streamed)" in logged
    assert any(
        line.startswith(f"runport: DEBUG runport.http: {target}: status 200, read ")
        for line in logged
    )
    assert KEY not in result.stdout + result.stderr
    assert not any(piece in result.stderr for piece in PIECES[1:])  # no model text either


@pytest.mark.parametrize(
    ("adapter", "variables", "kind"),
    [
        ("openai", {"RUNPORT_OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, "AsyncOpenAIChatAdapter"),
        (
            "azure-openai",
            {"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:9", "AZURE_OPENAI_AD_TOKEN": KEY},
            "AsyncAzureOpenAIChatAdapter",
        ),
        ("anthropic", {"ANTHROPIC_API_KEY": KEY}, "AsyncAnthropicMessagesAdapter"),
        ("gemini", {"GEMINI_API_KEY": KEY}, "AsyncGeminiAdapter"),
        ("bedrock", {"AWS_BEARER_TOKEN_BEDROCK": KEY}, "AsyncBedrockConverseAdapter"),
        (
            "bedrock-anthropic",
            {"AWS_BEARER_TOKEN_BEDROCK": KEY},
            "AsyncBedrockAnthropicAdapter",
        ),
        ("ollama", {}, "AsyncOllamaChatAdapter"),
        ("cohere", {"CO_API_KEY": KEY}, "AsyncCohereChatAdapter"),
    ],
)
def test_every_provider_registers_its_async_twin(
    monkeypatch: pytest.MonkeyPatch, adapter: str, variables: dict[str, str], kind: str
) -> None:
    """Event-loop surfaces (mcp, serve, batch) build the provider's own async adapter, not a
    sync one bridged onto a worker thread."""
    for name, value in {**variables, f"{PREFIXES[adapter]}_MODEL": "tiny"}.items():
        monkeypatch.setenv(name, value)
    built = create_async_adapter(adapter)
    assert type(built).__name__ == kind
    assert built.descriptor() == create_adapter(adapter).descriptor()


def test_an_azure_deployment_with_spaces_is_a_coded_usage_error_before_any_request(
    upstream: str,
) -> None:
    env = {
        **_clean_env(),
        "AZURE_OPENAI_ENDPOINT": upstream,
        "AZURE_OPENAI_API_KEY": KEY,
        "RUNPORT_AZURE_OPENAI_MODEL": "tiny",
        "RUNPORT_AZURE_OPENAI_DEPLOYMENT": "my deployment",
    }
    result = _run("azure-openai", env)
    assert result.returncode != 0
    assert "TQX_DATA_INVALID" in result.stdout + result.stderr
    assert "deployment must be an Azure deployment name" in result.stdout + result.stderr
    assert KEY not in result.stdout + result.stderr
    assert _Handler.seen == []
