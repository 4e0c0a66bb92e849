"""Azure OpenAI's chat completions: where the adapter posts and with which credential, what
the loopback emulation of a resource refuses (as Azure does), the Entra ID token's refresh
on a 401 (once, then coded), and the keys kept out of every message, log line and repr."""

from __future__ import annotations

import asyncio
import logging
import string
from collections.abc import Iterator
from contextlib import closing
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance import CASES, PROTOCOLS, ScriptedUpstream
from runport.conformance.providers import make_request
from runport.contracts import ErrorCode, ExecutionReceipt
from runport.openai import (
    DEFAULT_AZURE_API_VERSION,
    AsyncAzureOpenAIChatAdapter,
    AzureOpenAIChatAdapter,
    EntraTokenAuth,
    OpenAIChatAdapter,
)
from runport.ports import PortError

AzureOpenAIChat: Any = type(PROTOCOLS["azure-openai-chat"])
"""The suite's emulation of an Azure resource, here told which keys and tokens it takes."""
PLAIN = next(case for case in CASES if case.name == "plain_text")
KEY = "azure-key-SECRET-7f3e"
TOKEN = "eyJ0eXAiOiJKV1QifQ.fresh-entra-token.c2ln"
STALE = "eyJ0eXAiOiJKV1QifQ.stale-entra-token.c2ln"


def serve(protocol: AzureOpenAIChat | None = None, calls: int = 4) -> ScriptedUpstream:
    return ScriptedUpstream([PLAIN] * calls, pacing="off", protocol=protocol or AzureOpenAIChat())


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    server = serve(AzureOpenAIChat(api_keys=(KEY,), tokens=(TOKEN,)))
    yield server
    server.close()


def streamed(adapter: AzureOpenAIChatAdapter) -> ExecutionReceipt:
    with adapter:
        return adapter.execute_streaming(make_request(), lambda event: None)


def failure(adapter: AzureOpenAIChatAdapter) -> PortError:
    with adapter, pytest.raises(PortError) as raised:
        adapter.execute_streaming(make_request(), lambda event: None)
    return raised.value


def test_the_key_goes_as_api_key_to_the_deployment_with_the_api_version(
    upstream: ScriptedUpstream,
) -> None:
    adapter = AzureOpenAIChatAdapter(base_url=upstream.base_url, model="gpt-4o-prod", api_key=KEY)
    receipt = streamed(adapter)
    assert receipt.text == "Hello, world."
    assert receipt.usage is not None
    assert receipt.usage.input_tokens == 12
    assert receipt.adapter.id == "azure-openai-chat"
    assert receipt.adapter.provider == "azure.ai.openai"
    (request,) = upstream.requests
    url = urlsplit(request.path)
    assert url.path == "/openai/deployments/gpt-4o-prod/chat/completions"
    assert parse_qs(url.query) == {"api-version": [DEFAULT_AZURE_API_VERSION]}
    assert request.headers["api-key"] == KEY
    assert "authorization" not in request.headers
    assert request.body["stream_options"] == {"include_usage": True}


def test_a_deployment_other_than_the_model_is_in_the_path(upstream: ScriptedUpstream) -> None:
    adapter = AzureOpenAIChatAdapter(
        base_url=upstream.base_url, model="gpt-4o", deployment="prod.eu_2", api_key=KEY
    )
    streamed(adapter)
    (request,) = upstream.requests
    assert urlsplit(request.path).path == "/openai/deployments/prod.eu_2/chat/completions"
    assert request.body["model"] == "gpt-4o"


def test_the_v1_endpoint_has_no_deployment_and_no_version(upstream: ScriptedUpstream) -> None:
    adapter = AzureOpenAIChatAdapter(
        base_url=upstream.base_url, model="gpt-4o-prod", api_key=KEY, api_version="v1"
    )
    streamed(adapter)
    (request,) = upstream.requests
    assert request.path == "/openai/v1/chat/completions"
    assert request.body["model"] == "gpt-4o-prod"


def test_the_emulation_refuses_what_azure_refuses(upstream: ScriptedUpstream) -> None:
    """The premise of every test here: a wrong key is a 401, OpenAI's own shape of request (a
    Bearer key to ``/chat/completions``) a 404 — both coded, neither leaking the key."""
    wrong = failure(AzureOpenAIChatAdapter(base_url=upstream.base_url, model="m", api_key="nope"))
    assert wrong.code == ErrorCode.RUNTIME_PERMANENT
    assert "HTTP 401" in wrong.message
    assert "Access denied" in wrong.message
    plain = OpenAIChatAdapter(base_url=upstream.base_url, model="m", api_key=KEY)
    with plain, pytest.raises(PortError) as raised:
        plain.execute(make_request())
    assert raised.value.code == ErrorCode.RUNTIME_PERMANENT
    assert "HTTP 404" in raised.value.message
    assert KEY not in raised.value.message


@pytest.mark.parametrize(
    ("api_version", "sent"),
    [
        ("2024-06-01", False),
        ("2024-08-01-preview", False),
        ("2024-09-01-preview", True),
        ("2025-01-01-preview", True),
        ("preview", True),
    ],
)
def test_stream_options_follow_the_api_version(api_version: str, sent: bool) -> None:
    with closing(serve()) as upstream:
        adapter = AzureOpenAIChatAdapter(
            base_url=upstream.base_url, model="m", api_key=KEY, api_version=api_version
        )
        receipt = streamed(adapter)
        (request,) = upstream.requests
    assert ("stream_options" in request.body) is sent
    assert receipt.text == "Hello, world."


def test_stream_options_forced_on_an_old_version_is_azures_400_coded() -> None:
    with closing(serve()) as upstream:
        adapter = AzureOpenAIChatAdapter(
            base_url=upstream.base_url,
            model="m",
            api_key=KEY,
            api_version="2024-06-01",
            include_usage=True,
        )
        error = failure(adapter)
    assert error.code == ErrorCode.RUNTIME_PERMANENT
    assert "HTTP 400" in error.message
    assert "Unrecognized request argument supplied: stream_options" in error.message


@pytest.mark.parametrize(
    "deployment", ["my deployment", "a/b", "..", ".", "x" * 65, "dé", "a?b", "a%20b", "a\nb"]
)
def test_a_deployment_azure_would_not_name_is_refused_before_any_request(
    deployment: str,
) -> None:
    with pytest.raises(ValueError, match="deployment must be an Azure deployment name"):
        AzureOpenAIChatAdapter(
            base_url="http://127.0.0.1:9", model="m", deployment=deployment, api_key=KEY
        )


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + "._- /?#%", max_size=70))
def test_a_deployment_is_refused_or_reaches_its_own_path_unchanged(deployment: str) -> None:
    try:
        adapter = AzureOpenAIChatAdapter(
            base_url="http://127.0.0.1:9", model="m", deployment=deployment, api_key=KEY
        )
    except ValueError:
        assert deployment in (".", "..") or len(deployment) > 64 or set(deployment) & set(" /?#%")
        return
    named = deployment or "m"  # an empty deployment is unset: the model names it
    assert f"/openai/deployments/{named}/chat/completions?" in repr(adapter)


@pytest.mark.parametrize(
    ("keywords", "named"),
    [
        ({}, "none was given"),
        ({"api_key": KEY, "ad_token": TOKEN}, "api_key and ad_token"),
        ({"api_key": KEY, "token_provider": lambda: TOKEN}, "api_key and token_provider"),
    ],
)
def test_exactly_one_credential(keywords: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named) as raised:
        AzureOpenAIChatAdapter(base_url="http://127.0.0.1:9", model="m", **keywords)
    assert KEY not in str(raised.value)
    assert TOKEN not in str(raised.value)


@pytest.mark.parametrize("api_version", ["2024-6-1", "v2", "2024-10-21&x=1", " "])
def test_an_unknown_api_version_is_refused(api_version: str) -> None:
    with pytest.raises(ValueError, match="api_version must be"):
        AzureOpenAIChatAdapter(
            base_url="http://127.0.0.1:9", model="m", api_key=KEY, api_version=api_version
        )


# --- Entra ID ---------------------------------------------------------------------------------


class Tokens:
    """A token provider that gives ``tokens`` in turn (the last one again once spent)."""

    def __init__(self, *tokens: str) -> None:
        self.tokens = list(tokens)
        self.asked = 0

    def __call__(self) -> str:
        self.asked += 1
        return self.tokens[min(self.asked, len(self.tokens)) - 1]


def test_an_entra_token_goes_as_a_bearer_and_no_key(upstream: ScriptedUpstream) -> None:
    provider = Tokens(TOKEN)
    adapter = AzureOpenAIChatAdapter(base_url=upstream.base_url, model="m", token_provider=provider)
    assert streamed(adapter).text == "Hello, world."
    (request,) = upstream.requests
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert "api-key" not in request.headers
    assert provider.asked == 1


def test_a_refused_token_is_refreshed_once_and_the_request_sent_again(
    upstream: ScriptedUpstream,
) -> None:
    provider = Tokens(STALE, TOKEN)
    adapter = AzureOpenAIChatAdapter(base_url=upstream.base_url, model="m", token_provider=provider)
    assert streamed(adapter).text == "Hello, world."
    assert [r.headers["authorization"] for r in upstream.requests] == [
        f"Bearer {STALE}",
        f"Bearer {TOKEN}",
    ]
    assert provider.asked == 2


@pytest.mark.parametrize(("tokens", "sent"), [((STALE,), 1), ((STALE, STALE + "x", TOKEN), 2)])
def test_a_token_refused_again_is_a_coded_401_with_no_third_try(
    upstream: ScriptedUpstream, tokens: tuple[str, ...], sent: int
) -> None:
    """The same token again is not sent again; a second refusal is the answer."""
    provider = Tokens(*tokens)
    adapter = AzureOpenAIChatAdapter(base_url=upstream.base_url, model="m", token_provider=provider)
    error = failure(adapter)
    assert error.code == ErrorCode.RUNTIME_PERMANENT
    assert "HTTP 401" in error.message
    assert len(upstream.requests) == sent
    assert provider.asked == 2
    assert not any(token in error.message for token in tokens)


class CredentialUnavailableError(Exception):
    pass


@pytest.mark.parametrize(
    ("provider", "says"),
    [
        (
            lambda: (_ for _ in ()).throw(CredentialUnavailableError(f"no login {TOKEN}")),
            "failed (CredentialUnavailableError)",
        ),
        (lambda: "", "gave no token"),
        (lambda: None, "gave no token"),
        (lambda: "tok\nen", "gave no token"),
    ],
)
def test_a_token_provider_that_fails_fails_the_call_unsent_and_coded(
    upstream: ScriptedUpstream, provider: Any, says: str
) -> None:
    error = failure(
        AzureOpenAIChatAdapter(base_url=upstream.base_url, model="m", token_provider=provider)
    )
    assert error.code == ErrorCode.RUNTIME_PERMANENT
    assert says in error.message
    assert TOKEN not in error.message
    assert upstream.requests == []


def test_a_coroutine_provider_on_the_sync_adapter_is_refused_coded(
    upstream: ScriptedUpstream,
) -> None:
    async def token() -> str:
        return TOKEN

    error = failure(
        AzureOpenAIChatAdapter(base_url=upstream.base_url, model="m", token_provider=token)
    )
    assert error.code == ErrorCode.RUNTIME_PERMANENT
    assert "AsyncAzureOpenAIChatAdapter" in error.message
    assert upstream.requests == []


def test_the_async_adapter_refreshes_an_async_token_once(upstream: ScriptedUpstream) -> None:
    asked: list[str] = []

    async def token() -> str:
        asked.append("")
        return STALE if len(asked) == 1 else TOKEN

    async def run() -> ExecutionReceipt:
        async with AsyncAzureOpenAIChatAdapter(
            base_url=upstream.base_url, model="m", token_provider=token
        ) as adapter:
            return await adapter.execute(make_request())

    assert asyncio.run(run()).text == "Hello, world."
    assert len(asked) == 2
    assert len(upstream.requests) == 2


def test_entra_token_auth_works_on_any_httpx_client(upstream: ScriptedUpstream) -> None:
    """The auth is a plain ``httpx.Auth``: what the adapter does with it, a client does too."""
    auth = EntraTokenAuth(Tokens(STALE, TOKEN))
    url = f"{upstream.base_url}/openai/deployments/m/chat/completions?api-version=2024-10-21"
    with httpx.Client(auth=auth) as client:
        response = client.post(url, json={"model": "m", "messages": []})
    assert response.status_code == 200
    assert len(upstream.requests) == 2


# --- keys kept out of everything shown --------------------------------------------------------


def test_no_key_or_token_in_repr_logs_or_errors(
    upstream: ScriptedUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        keyed = AzureOpenAIChatAdapter(
            base_url=upstream.base_url, model="m", api_key="wrong-" + KEY
        )
        static = AzureOpenAIChatAdapter(base_url=upstream.base_url, model="m", ad_token=STALE)
        errors = [failure(keyed).message, failure(static).message]
    shown = " ".join([repr(keyed), repr(static), caplog.text, *errors])
    assert KEY not in shown
    assert STALE not in shown
    assert repr(keyed) == (
        f"AzureOpenAIChatAdapter(url='{upstream.base_url}/openai/deployments/m/chat/completions"
        f"?api-version={DEFAULT_AZURE_API_VERSION}', model='m')"
    )


class EchoingKeys(AzureOpenAIChat):
    """An Azure emulation whose 401 quotes the credentials it was sent, bare."""

    def check(self, request: Any, case: Any) -> Any:
        refusal = super().check(request, case)
        if refusal is None or refusal.status != 401:
            return refusal
        sent = request.headers.get("api-key", "") + " " + request.headers.get("authorization", "")
        body = f'{{"error": {{"code": "401", "message": "rejected {sent.split()[-1]}"}}}}'
        return type(refusal)(401, body.encode(), refusal.reason)


@pytest.mark.parametrize("credential", ["api_key", "ad_token"])
def test_a_credential_the_upstream_echoes_is_redacted(credential: str) -> None:
    secret = "k3y-42"  # short and plain: only the adapter's own secrets can catch it
    with closing(serve(EchoingKeys(api_keys=("other",), tokens=("other",)))) as upstream:
        error = failure(
            AzureOpenAIChatAdapter(base_url=upstream.base_url, model="m", **{credential: secret})
        )
    assert error.message.endswith("rejected [redacted]")
    assert secret not in error.message
