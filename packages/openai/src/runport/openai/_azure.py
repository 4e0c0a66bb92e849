"""Azure OpenAI: the chat-completions codec posting to a deployment, with the key in
``api-key`` or an Entra ID token signed in by ``EntraTokenAuth`` (docs/providers.md,
adr/0056-azure-openai-deployments-and-entra-tokens.md)."""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Final, Unpack
from urllib.parse import quote

import httpx

from runport.contracts import ErrorCode
from runport.http import (
    AsyncHTTPAdapter,
    ClientT,
    HTTPAdapter,
    ProviderAdapter,
    ProviderKeywords,
    checked_api_key,
)
from runport.http import provider_descriptor as _provider_descriptor
from runport.openai._codec import ChatCompletionsCodec
from runport.openai._entra import EntraCredential
from runport.openai._request import (
    ReasoningField,
    ResponseFormatMode,
    as_reasoning_field,
    as_response_format_mode,
    as_switch,
)
from runport.ports import PortError

DEFAULT_AZURE_API_VERSION: Final = "2024-10-21"
"""The ``api-version`` asked for unless told otherwise: Azure OpenAI's generally available
version of October 2024, the first that takes ``stream_options``."""

AZURE_DESCRIPTOR: Final = _provider_descriptor(
    "azure-openai-chat", provider="azure.ai.openai", distribution="runport-openai"
)

TokenProvider = Callable[[], str | Awaitable[str]]
"""What gives an Entra ID access token: called with no arguments for every request (it keeps
and renews its token itself, as azure-identity's ``get_bearer_token_provider`` does), and once
more after a 401. On the event loop it may be a coroutine function."""

_DEPLOYMENT = re.compile(r"[A-Za-z0-9._-]{1,64}")
_API_VERSION = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})(?:-preview)?|v1|preview|latest")
_FIRST_WITH_STREAM_OPTIONS: Final = "2024-09-01"


class EntraTokenAuth(httpx.Auth):
    """An Entra ID (Azure AD) bearer token on every request, from ``token_provider``.

    The provider is asked for a token per request. When the upstream answers 401 it is asked
    once more (an ``EntraCredential`` is asked for a token instead of the refused one, on the
    event loop without blocking it), and the request goes again only if that token is a
    different one; a second 401 (or the same token) is the call's answer,
    ``TQX_RUNTIME_PERMANENT``. A provider that raises, or gives no printable ASCII text, fails
    the call unsent with ``TQX_RUNTIME_PERMANENT``, its message naming only the exception's
    class: nothing the provider says, and no token, reaches a message.
    """

    def __init__(self, token_provider: TokenProvider) -> None:
        if not callable(token_provider):
            raise TypeError("token_provider must be a callable that returns a token")
        self._provider = token_provider

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        token = _checked(self._ask(None))
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            fresh = _checked(self._ask(token))
            if fresh != token:
                request.headers["Authorization"] = f"Bearer {fresh}"
                yield request

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token = _checked(await self._ask_async(None))
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            fresh = _checked(await self._ask_async(token))
            if fresh != token:
                request.headers["Authorization"] = f"Bearer {fresh}"
                yield request

    def _ask(self, refused: str | None) -> object:
        with _asking():
            if isinstance(self._provider, EntraCredential):
                return self._provider.token(instead_of=refused)
            return self._provider()

    async def _ask_async(self, refused: str | None) -> object:
        if isinstance(self._provider, EntraCredential):
            with _asking():
                return await self._provider.atoken(instead_of=refused)
        return await _awaited(self._ask(refused))


@contextmanager
def _asking() -> Iterator[None]:
    """What the token provider raises, as the call's coded failure: its class named, nothing
    it said (a message may hold a token, a tenant, a path)."""
    try:
        yield
    except PortError:
        raise
    except Exception as error:
        raise PortError(
            ErrorCode.RUNTIME_PERMANENT,
            f"the Entra ID token provider failed ({type(error).__name__})",
        ) from None


async def _awaited(value: object) -> object:
    if inspect.isawaitable(value):
        with _asking():
            return await value
    return value


def _checked(token: object) -> str:
    if inspect.isawaitable(token):
        close = getattr(token, "close", None)
        if close is not None:
            close()  # never awaited: no "coroutine was never awaited" warning
        raise PortError(
            ErrorCode.RUNTIME_PERMANENT,
            "the Entra ID token provider is a coroutine function: use it on the event loop "
            "(AsyncAzureOpenAIChatAdapter)",
        )
    if type(token) is not str or not token or not (token.isascii() and token.isprintable()):
        raise PortError(
            ErrorCode.RUNTIME_PERMANENT,
            "the Entra ID token provider gave no token (a non-empty printable ASCII string)",
        )
    return token


def checked_deployment(deployment: str) -> str:
    """A deployment name as Azure names them (1 to 64 letters, digits, ``.``, ``_``, ``-``):
    anything else is refused here rather than sent to a path it would change."""
    if (
        type(deployment) is not str
        or not _DEPLOYMENT.fullmatch(deployment)
        or deployment in (".", "..")
    ):
        raise ValueError(
            "deployment must be an Azure deployment name: 1 to 64 letters, digits, '.', '_' "
            f"or '-', not {deployment!r}"
        )
    return deployment


def default_include_usage(api_version: str) -> bool:
    """Whether ``api_version`` takes ``stream_options``: the dated versions from 2024-09-01
    on (earlier ones answer 400), the v1 endpoint and the rolling ``preview``/``latest``."""
    match = _API_VERSION.fullmatch(api_version)
    date = match.group("date") if match else None
    return date is None or date >= _FIRST_WITH_STREAM_OPTIONS


def checked_api_version(api_version: str) -> str:
    if type(api_version) is not str or not _API_VERSION.fullmatch(api_version):
        raise ValueError(
            "api_version must be an Azure OpenAI API version such as "
            f"{DEFAULT_AZURE_API_VERSION!r}, '2025-01-01-preview' or 'v1', not {api_version!r}"
        )
    return api_version


class AzureChatKeywords(ProviderAdapter[ClientT]):
    """The keywords of both flavours: ``base_url`` (the resource's endpoint,
    ``https://NAME.openai.azure.com``), ``model``, ``deployment``, ``api_version``,
    ``api_key`` or ``token_provider`` / ``ad_token``, ``include_usage``, the chat keywords
    and the driver's."""

    def __init__(
        self,
        *,
        deployment: str | None = None,
        api_version: str = DEFAULT_AZURE_API_VERSION,
        token_provider: TokenProvider | None = None,
        ad_token: str | None = None,
        include_usage: bool | None = None,
        response_format_mode: ResponseFormatMode = "json_schema",
        send_reasoning_as: ReasoningField | None = None,
        **keywords: Unpack[ProviderKeywords[ClientT]],
    ) -> None:
        version = checked_api_version(api_version or DEFAULT_AZURE_API_VERSION)
        given = [name for name, value in (("api_key", keywords.get("api_key")),
                 ("token_provider", token_provider), ("ad_token", ad_token)) if value]  # fmt: skip
        if len(given) != 1:
            raise ValueError(
                "Azure OpenAI needs one credential: api_key (sent as api-key), token_provider "
                "or ad_token (an Entra ID token), " + (f"not {' and '.join(given)}" if given
                else "none was given (the azure-openai entry point reads AZURE_OPENAI_API_KEY, "
                "AZURE_OPENAI_AD_TOKEN, or AZURE_TENANT_ID, AZURE_CLIENT_ID and "
                "AZURE_CLIENT_SECRET or AZURE_FEDERATED_TOKEN_FILE)")
            )  # fmt: skip
        if keywords.get("auth") is not None:
            raise ValueError("give token_provider (or ad_token), not auth, to Azure OpenAI")
        if ad_token is not None:
            token_provider = _static(checked_api_key(ad_token) or "")
        if token_provider is not None:
            keywords["auth"] = EntraTokenAuth(token_provider)
        if version == "v1":
            path, params = "openai/v1/chat/completions", {}
        else:
            name = checked_deployment(deployment or keywords.get("model", ""))
            path, params = (
                f"openai/deployments/{quote(name)}/chat/completions",
                {"api-version": version},
            )
        usage = as_switch(include_usage, "include_usage")
        codec = partial(
            ChatCompletionsCodec,
            secrets=(ad_token,) if ad_token else (),
            response_format_mode=as_response_format_mode(response_format_mode),
            send_reasoning_as=as_reasoning_field(send_reasoning_as),
            include_usage=default_include_usage(version) if usage is None else usage,
            api_key_header="api-key",
            descriptor=AZURE_DESCRIPTOR,
            path=path,
            params=params,
        )
        super().__init__(codec, **keywords)
        shown = f"{self._settings.base_url.copy_with(query=None)}".rstrip("/") + "/" + path
        self._show(shown if not params else f"{shown}?api-version={version}", keywords["model"])


def _static(token: str) -> Callable[[], str]:
    return lambda: token


class AzureOpenAIChatAdapter(AzureChatKeywords[httpx.Client], HTTPAdapter):
    """Azure OpenAI's chat completions, on a classic deployment or the v1 endpoint.

    It posts to ``{base_url}/openai/deployments/{deployment}/chat/completions?api-version=…``
    (the deployment is ``model`` unless ``deployment`` names it), or, with
    ``api_version="v1"``, to ``{base_url}/openai/v1/chat/completions`` with the deployment as
    the body's ``model``. The key goes in Azure's ``api-key`` header; an Entra ID token goes
    as ``Authorization: Bearer`` from ``token_provider`` (``EntraTokenAuth``: asked per
    request, once more after a 401) or ``ad_token``. Exactly one credential is given; each is
    kept out of every message, log line and repr.

    ``include_usage`` (unset) follows ``api_version``: versions before 2024-09-01 refuse
    ``stream_options`` with a 400, so they are sent none (their streams then carry no usage).
    Everything else — the stream's reading, Azure's content-filter results passed over, the
    failures and their codes, the bounds — is ``OpenAIChatAdapter``'s.
    """


class AsyncAzureOpenAIChatAdapter(AzureChatKeywords[httpx.AsyncClient], AsyncHTTPAdapter):
    """``AzureOpenAIChatAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``; ``token_provider`` may be a coroutine function, such as
    azure-identity's ``aio`` bearer token provider), equal receipts for the same bytes."""
