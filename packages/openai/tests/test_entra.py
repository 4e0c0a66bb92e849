"""Entra ID tokens fetched and renewed by ``EntraCredential`` against a loopback emulation of
the token endpoint that checks what Entra checks, and an Azure emulation that takes only the
token issued last: the form each flow posts, renewal before expiry (a clock the test moves),
one renewal after a 401 then a coded failure, one fetch however many threads or tasks ask,
the token endpoint's refusals coded with the secret redacted, and the variables the
``azure-openai`` entry point reads."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from runport.conformance import CASES, ScriptedUpstream
from runport.conformance.providers import make_request
from runport.contracts import ErrorCode, ExecutionReceipt
from runport.openai import (
    AsyncAzureOpenAIChatAdapter,
    AzureOpenAIChatAdapter,
    EntraCredential,
    create_async_azure_adapter,
    create_azure_adapter,
)
from runport.ports import PortError

from .entra_emulation import (
    ASSERTION_TYPE,
    CLIENT_ID,
    SCOPE,
    SECRET,
    TENANT,
    CurrentTokenOnly,
    TokenEndpoint,
)

PLAIN = next(case for case in CASES if case.name == "plain_text")
ENTRA_VARIABLES = (
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_AUTHORITY_HOST",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def endpoint() -> Iterator[TokenEndpoint]:
    server = TokenEndpoint()
    with httpx.Client(timeout=10.0) as client:
        SHARED.append(client)
        yield server
        SHARED.clear()
    server.close()


SHARED: list[httpx.Client] = []
"""One client for the credentials the tests make (a client's TLS context costs tens of ms);
the entry-point tests build theirs as a user's do."""


@pytest.fixture
def entra(endpoint: TokenEndpoint) -> TokenEndpoint:
    """The module's token endpoint, its records and switches reset for each test."""
    endpoint.forms.clear()
    endpoint.paths.clear()
    endpoint.content_types.clear()
    endpoint.issued.clear()
    endpoint.expired.clear()
    endpoint.refuse_all = False
    endpoint.failing = None
    endpoint.lifetime = 3599
    endpoint.assertion = None
    endpoint.named_as = None
    return endpoint


def credential(entra: TokenEndpoint, **keywords: Any) -> EntraCredential:
    settings: dict[str, Any] = {
        "tenant_id": TENANT,
        "client_id": CLIENT_ID,
        "authority": entra.authority,
    }
    if "federated_token_file" not in keywords:
        settings["client_secret"] = SECRET
    if SHARED:
        settings["http_client"] = SHARED[0]
    return EntraCredential(**{**settings, **keywords})


def azure(protocol: CurrentTokenOnly, calls: int = 8) -> ScriptedUpstream:
    return ScriptedUpstream([PLAIN] * calls, pacing="off", protocol=protocol)


def run(adapter: AzureOpenAIChatAdapter) -> ExecutionReceipt:
    return adapter.execute_streaming(make_request(), lambda event: None)


# --- the form each flow posts ------------------------------------------------------------------


def test_the_client_secret_flow_posts_entras_form_and_the_token_is_kept(
    entra: TokenEndpoint,
) -> None:
    source = credential(entra)
    emulation = CurrentTokenOnly(entra)
    upstream = azure(emulation)
    try:
        with AzureOpenAIChatAdapter(
            base_url=upstream.base_url, model="m", token_provider=source
        ) as adapter:
            assert [run(adapter).text for _ in range(3)] == ["Hello, world."] * 3
    finally:
        upstream.close()
    assert entra.paths == [f"/{TENANT}/oauth2/v2.0/token"]
    assert entra.content_types == ["application/x-www-form-urlencoded"]
    assert entra.forms == [
        {
            "client_id": [CLIENT_ID],
            "client_secret": [SECRET],
            "grant_type": ["client_credentials"],
            "scope": [SCOPE],
        }
    ]
    assert emulation.sent == [entra.issued[0]] * 3
    assert source.fetched == 1


def test_workload_identity_reads_the_federated_token_file_for_every_fetch(
    entra: TokenEndpoint, tmp_path: Path
) -> None:
    token_file = tmp_path / "azure-identity-token"
    token_file.write_text("federated-one\n", encoding="utf-8")
    entra.assertion = "federated-one"
    clock = Clock()
    source = credential(entra, federated_token_file=token_file, clock=clock)
    first = source.token()
    token_file.write_text("federated-two", encoding="utf-8")  # the kubelet rotated it
    entra.assertion = "federated-two"
    clock.now += 3600
    second = source.token()
    assert first != second
    assert [form["client_assertion"] for form in entra.forms] == [
        ["federated-one"],
        ["federated-two"],
    ]
    assert all(form["client_assertion_type"] == [ASSERTION_TYPE] for form in entra.forms)
    assert all("client_secret" not in form for form in entra.forms)


def test_the_emulated_endpoint_refuses_what_entra_refuses(entra: TokenEndpoint) -> None:
    """The premise of the form tests: each wrong field is refused with Entra's words."""
    refusals = [
        credential(entra, tenant_id="contoso.onmicrosoft.com"),
        credential(entra, client_id="another-app"),
        credential(entra, scope="https://cognitiveservices.azure.com"),
        credential(entra, client_secret="wrong"),
    ]
    words = []
    for source in refusals:
        with pytest.raises(PortError) as raised:
            source.token()
        words.append(raised.value.message)
    assert [
        next(w for w in message.split() if w.startswith("AADSTS")).rstrip(":") for message in words
    ] == ["AADSTS90002", "AADSTS700016", "AADSTS1002012", "AADSTS7000215"]
    assert entra.issued == []


# --- renewal -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lifetime", "kept", "renewed"), [(3599, 3298, 3300), (60, 29, 31), (1, 0.4, 0.6)]
)
def test_a_token_is_renewed_before_it_expires(
    entra: TokenEndpoint, lifetime: int, kept: float, renewed: float
) -> None:
    """Five minutes before it expires, or at half its life when it lives less than ten."""
    entra.lifetime = lifetime
    clock = Clock()
    source = credential(entra, clock=clock)
    start = clock.now
    first = source.token()
    clock.now = start + kept
    assert source.token() == first
    clock.now = start + renewed
    assert source.token() != first
    assert source.fetched == 2


def test_a_renewal_that_fails_keeps_the_token_until_it_expires(entra: TokenEndpoint) -> None:
    clock = Clock()
    source = credential(entra, clock=clock)
    start = clock.now
    first = source.token()
    entra.failing = (503, {"error": "temporarily_unavailable"})
    clock.now = start + 3400  # due for renewal, not expired
    assert source.token() == first
    clock.now = start + 3600  # expired: the failure is the call's
    with pytest.raises(PortError) as raised:
        source.token()
    assert raised.value.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert "HTTP 503" in raised.value.message


def test_an_expired_token_is_renewed_once_after_a_401_then_the_refusal_is_coded(
    entra: TokenEndpoint,
) -> None:
    emulation = CurrentTokenOnly(entra, expire_after=2)
    upstream = azure(emulation)
    source = credential(entra)
    try:
        with AzureOpenAIChatAdapter(
            base_url=upstream.base_url, model="m", token_provider=source
        ) as adapter:
            texts = [run(adapter).text for _ in range(4)]
            first, second = entra.issued
            assert emulation.sent == [first, first, first, second, second]
            entra.refuse_all = True  # the role assignment is gone: no token is taken
            with pytest.raises(PortError) as raised:
                run(adapter)
    finally:
        upstream.close()
    assert texts == ["Hello, world."] * 4
    assert raised.value.code == ErrorCode.RUNTIME_PERMANENT
    assert "HTTP 401" in raised.value.message
    assert len(entra.issued) == 3
    assert emulation.sent[5:] == [second, entra.issued[2]]  # renewed once, then no third try


# --- many callers --------------------------------------------------------------------------


def test_threads_asking_at_once_share_one_fetch(entra: TokenEndpoint) -> None:
    source = credential(entra)
    start = threading.Barrier(8)
    tokens: list[str] = []

    def ask() -> None:
        start.wait()
        tokens.append(source.token())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(entra.forms) == 1
    assert tokens == entra.issued * 8


def test_the_async_adapter_shares_one_fetch_and_renews_after_a_401(
    entra: TokenEndpoint,
) -> None:
    emulation = CurrentTokenOnly(entra, expire_after=4)
    upstream = azure(emulation)
    source = credential(entra)

    async def calls() -> list[str]:
        async with AsyncAzureOpenAIChatAdapter(
            base_url=upstream.base_url, model="m", token_provider=source
        ) as adapter:
            first = await asyncio.gather(*(adapter.execute(make_request()) for _ in range(4)))
            later = await adapter.execute(make_request())  # the token has expired
            return [receipt.text for receipt in [*first, later]]

    try:
        assert asyncio.run(calls()) == ["Hello, world."] * 5
    finally:
        upstream.close()
    assert len(entra.issued) == 2
    assert emulation.sent == [entra.issued[0]] * 5 + [entra.issued[1]]


# --- failures, coded and redacted ----------------------------------------------------------


@pytest.mark.parametrize(
    ("failing", "code"),
    [
        ((429, {"error": "throttled"}), ErrorCode.RUNTIME_RATE_LIMITED),
        ((500, {"error": "server_error"}), ErrorCode.RUNTIME_UNAVAILABLE),
        ((200, {"token_type": "Bearer"}), ErrorCode.RUNTIME_INVALID_RESPONSE),
    ],
)
def test_a_token_endpoint_failure_is_coded(
    entra: TokenEndpoint, failing: tuple[int, dict[str, Any]], code: ErrorCode
) -> None:
    entra.failing = failing
    with pytest.raises(PortError) as raised:
        credential(entra).token()
    assert raised.value.code == code


def test_an_unreachable_token_endpoint_fails_the_call_unsent(entra: TokenEndpoint) -> None:
    emulation = CurrentTokenOnly(entra)
    upstream = azure(emulation)
    closed = TokenEndpoint()
    closed.close()
    try:
        source = credential(entra, authority=closed.authority)
        with (
            AzureOpenAIChatAdapter(
                base_url=upstream.base_url, model="m", token_provider=source
            ) as adapter,
            pytest.raises(PortError) as raised,
        ):
            run(adapter)
    finally:
        upstream.close()
    assert raised.value.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert "token endpoint could not be reached" in raised.value.message
    assert upstream.requests == []


def test_a_refused_secret_is_coded_and_never_shown(
    entra: TokenEndpoint, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The emulation's refusal quotes the wrong secret, bare: it is redacted, as the
    federated token is."""
    token_file = tmp_path / "token"
    token_file.write_text("plain-assertion-7", encoding="utf-8")
    with caplog.at_level(logging.DEBUG):
        wrong = credential(entra, client_secret="hunter2")
        with pytest.raises(PortError) as raised:
            wrong.token()
    message = raised.value.message
    assert raised.value.code == ErrorCode.RUNTIME_PERMANENT
    assert "invalid_client" in message
    assert "AADSTS7000215" in message
    assert "hunter2" not in message + caplog.text + repr(wrong)
    assert SECRET not in repr(credential(entra))
    workload = credential(entra, federated_token_file=token_file)
    assert "plain-assertion-7" not in repr(workload)
    token_file.unlink()
    with pytest.raises(PortError) as raised:
        workload.token()
    assert raised.value.code == ErrorCode.RUNTIME_PERMANENT
    assert "could not be read (FileNotFoundError)" in raised.value.message


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"tenant_id": "../common"}, "tenant_id must be"),
        ({"tenant_id": "..", "client_secret": "a"}, "tenant_id must be"),
        ({"tenant_id": TENANT, "client_secret": "a", "authority": "http://x.example"}, "https"),
        ({"tenant_id": TENANT}, "one of client_secret and federated_token_file"),
        ({"tenant_id": TENANT, "client_secret": "a", "federated_token_file": "f"}, "one of"),
    ],
)
def test_a_credential_refuses_what_it_could_not_post(keywords: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        EntraCredential(client_id=CLIENT_ID, **keywords)


# --- the variables -------------------------------------------------------------------------


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (*ENTRA_VARIABLES, "RUNPORT_AZURE_OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_from_environment_reads_what_azure_identity_reads(
    environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert EntraCredential.from_environment() is None
    environment.setenv("AZURE_CLIENT_ID", CLIENT_ID)  # a managed identity's alone: no secret
    assert EntraCredential.from_environment() is None
    environment.setenv("AZURE_FEDERATED_TOKEN_FILE", str(tmp_path / "token"))
    with pytest.raises(ValueError, match="also needs AZURE_TENANT_ID"):
        EntraCredential.from_environment()
    environment.setenv("AZURE_TENANT_ID", TENANT)
    environment.setenv("AZURE_AUTHORITY_HOST", "login.microsoftonline.us")
    workload = EntraCredential.from_environment()
    assert workload is not None
    assert "workload identity" in repr(workload)
    assert workload.token_url == (f"https://login.microsoftonline.us/{TENANT}/oauth2/v2.0/token")
    environment.setenv("AZURE_CLIENT_SECRET", SECRET)  # the secret first, as azure-identity
    secret = EntraCredential.from_environment()
    assert secret is not None
    assert "client secret" in repr(secret)


def test_the_entry_points_take_entra_from_the_environment_when_no_key_is_set(
    entra: TokenEndpoint, environment: pytest.MonkeyPatch
) -> None:
    emulation = CurrentTokenOnly(entra)
    upstream = azure(emulation)
    environment.setenv("AZURE_OPENAI_ENDPOINT", upstream.base_url)
    environment.setenv("RUNPORT_AZURE_OPENAI_MODEL", "m")
    environment.setenv("AZURE_TENANT_ID", TENANT)
    environment.setenv("AZURE_CLIENT_ID", CLIENT_ID)
    environment.setenv("AZURE_CLIENT_SECRET", SECRET)
    environment.setenv("AZURE_AUTHORITY_HOST", entra.authority)

    async def on_the_loop() -> str:
        async with create_async_azure_adapter() as adapter:
            return (await adapter.execute(make_request())).text

    try:
        with create_azure_adapter() as adapter:
            assert run(adapter).text == "Hello, world."
        assert asyncio.run(on_the_loop()) == "Hello, world."  # what `runport serve` builds
        environment.setenv("AZURE_OPENAI_API_KEY", "a-key")  # a key set: it is the one
        with create_azure_adapter() as adapter:
            assert run(adapter).text == "Hello, world."
    finally:
        upstream.close()
    assert len(entra.issued) == 2  # one credential per adapter built from Entra variables
    assert upstream.requests[-1].headers.get("api-key") == "a-key"
    assert "authorization" not in upstream.requests[-1].headers


# --- azure-identity, on the same endpoint --------------------------------------------------


def test_azure_identity_posts_the_same_forms(entra: TokenEndpoint, tmp_path: Path) -> None:
    """The differential: azure-identity's ``ClientSecretCredential`` and
    ``WorkloadIdentityCredential`` (a test-only dependency), sent to the same emulation (its
    https authority rewritten to the loopback one by a transport), post what
    ``EntraCredential`` posts, and are given the tokens it is given."""
    identity = pytest.importorskip("azure.identity")
    from azure.core.pipeline.transport import RequestsTransport

    named = "https://login.loopback.test"

    class Loopback(RequestsTransport):  # type: ignore[misc]
        """Sends to the emulation what is addressed to ``named``, and nothing else."""

        def send(self, request: Any, **kwargs: Any) -> Any:
            assert request.url.startswith(named + "/"), request.url
            request.url = entra.authority + request.url.removeprefix(named)
            return super().send(request, **kwargs)

    entra.named_as = named

    token_file = tmp_path / "token"
    token_file.write_text("federated-one", encoding="utf-8")
    entra.assertion = "federated-one"
    theirs = [
        identity.ClientSecretCredential(
            TENANT,
            CLIENT_ID,
            SECRET,
            authority=named,
            transport=Loopback(),
            disable_instance_discovery=True,
        ),
        identity.WorkloadIdentityCredential(
            tenant_id=TENANT,
            client_id=CLIENT_ID,
            token_file_path=str(token_file),
            authority=named,
            transport=Loopback(),
            disable_instance_discovery=True,
        ),
    ]
    ours = [credential(entra), credential(entra, federated_token_file=token_file)]
    for their, our in zip(theirs, ours, strict=True):
        assert their.get_token(SCOPE).token == entra.issued[-1]
        assert our.token() == entra.issued[-1]
    secret_theirs, secret_ours, workload_theirs, workload_ours = entra.forms
    # MSAL adds ``client_info=1`` (asking for the signed-in user's home account, which an
    # app-only token has none of; Entra ignores it for this grant); every other field agrees
    assert secret_theirs.pop("client_info") == ["1"]
    assert secret_ours == secret_theirs
    workload_theirs.pop("client_info", None)
    assert workload_ours == workload_theirs
    assert len(set(entra.paths)) == 1
    assert set(entra.content_types) == {"application/x-www-form-urlencoded"}
