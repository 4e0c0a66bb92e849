"""Where the OpenAI entry points read their settings, and the entry points themselves: chat
completions and the Responses API read the same variables."""

import logging
from dataclasses import dataclass, replace
from typing import Any

from runport.http import ProviderAdapter, ProviderEnvironment
from runport.openai._adapter import OpenAIChatAdapter
from runport.openai._async_adapter import AsyncOpenAIChatAdapter
from runport.openai._azure import AsyncAzureOpenAIChatAdapter, AzureOpenAIChatAdapter
from runport.openai._entra import EntraCredential
from runport.openai._responses import AsyncOpenAIResponsesAdapter, OpenAIResponsesAdapter

CHAT = ProviderEnvironment(
    "openai",
    "RUNPORT_OPENAI",
    api_key=("OPENAI_API_KEY",),
    example="RUNPORT_OPENAI_BASE_URL=https://api.openai.com/v1, RUNPORT_OPENAI_MODEL=gpt-4o-mini",
    key_required=False,
    options={
        "response_format_mode": "RUNPORT_OPENAI_RESPONSE_FORMAT",
        "send_reasoning_as": "RUNPORT_OPENAI_SEND_REASONING_AS",
        "include_usage": "RUNPORT_OPENAI_INCLUDE_USAGE",
    },
)
"""There is no default server or model: a run must say where it goes; local servers need no
key. ``RUNPORT_OPENAI_RESPONSE_FORMAT`` is ``json_schema`` (unset), ``json_object`` or
``none``; ``RUNPORT_OPENAI_SEND_REASONING_AS`` ``reasoning_content`` or ``reasoning`` (unset,
no reasoning text is sent back); ``RUNPORT_OPENAI_INCLUDE_USAGE`` ``true`` or ``false``
(unset: true, but for Mistral's API, which refuses ``stream_options``)."""

RESPONSES = replace(
    CHAT,
    adapter="openai-responses",
    options={"response_format_mode": "RUNPORT_OPENAI_RESPONSE_FORMAT"},
)

create_adapter = CHAT.entry_point(OpenAIChatAdapter)
"""``runport run … --adapter openai``."""

create_async_adapter = CHAT.entry_point(AsyncOpenAIChatAdapter)
"""``create_adapter``'s settings on the event loop (``runport.async_adapters``)."""

create_responses_adapter = RESPONSES.entry_point(OpenAIResponsesAdapter)
"""``runport run … --adapter openai-responses``."""

create_async_responses_adapter = RESPONSES.entry_point(AsyncOpenAIResponsesAdapter)
"""``create_responses_adapter``'s settings on the event loop."""


@dataclass(frozen=True, slots=True)
class _AzureEnvironment(ProviderEnvironment):
    """Azure's settings, and when they hold neither a key nor a static token, the Entra ID
    service principal the environment describes (``EntraCredential.from_environment``): its
    tokens are fetched, and renewed before they expire, for as long as the adapter lives."""

    def settings(self, kind: type[ProviderAdapter[Any]], **given: str | None) -> dict[str, Any]:
        settings = ProviderEnvironment.settings(self, kind, **given)
        if not settings.get("api_key") and not settings.get("ad_token"):
            credential = EntraCredential.from_environment()
            if credential is not None:
                settings["token_provider"] = credential
                logging.getLogger("runport.openai").info(
                    "%s adapter: Entra ID tokens from %r", self.adapter, credential
                )
        return settings


AZURE = _AzureEnvironment(
    "azure-openai",
    "RUNPORT_AZURE_OPENAI",
    api_key=("AZURE_OPENAI_API_KEY",),
    example=(
        "AZURE_OPENAI_ENDPOINT=https://NAME.openai.azure.com, "
        "RUNPORT_AZURE_OPENAI_MODEL=my-gpt-4o-deployment, AZURE_OPENAI_API_KEY=…"
    ),
    key_required=False,
    options={
        "deployment": "RUNPORT_AZURE_OPENAI_DEPLOYMENT",
        "api_version": "RUNPORT_AZURE_OPENAI_API_VERSION",
        "ad_token": "AZURE_OPENAI_AD_TOKEN",
        "include_usage": "RUNPORT_AZURE_OPENAI_INCLUDE_USAGE",
        "response_format_mode": "RUNPORT_AZURE_OPENAI_RESPONSE_FORMAT",
    },
    base_url_also=("AZURE_OPENAI_ENDPOINT",),
)
"""Azure OpenAI: the resource's endpoint and the deployment (the model's variable) are
required, and one credential: ``AZURE_OPENAI_API_KEY`` (sent as ``api-key``),
``AZURE_OPENAI_AD_TOKEN`` (a static Entra ID token), or, when neither is set, a service
principal's tokens, renewed before they expire: ``AZURE_TENANT_ID``, ``AZURE_CLIENT_ID`` and
``AZURE_CLIENT_SECRET``, or ``AZURE_FEDERATED_TOKEN_FILE`` (workload identity) in place of the
secret, and ``AZURE_AUTHORITY_HOST`` for another cloud. ``RUNPORT_AZURE_OPENAI_DEPLOYMENT`` names a
deployment other than the model, ``RUNPORT_AZURE_OPENAI_API_VERSION`` the ``api-version``
(``v1`` for the v1 endpoint), ``RUNPORT_AZURE_OPENAI_INCLUDE_USAGE`` ``true``/``false``."""

create_azure_adapter = AZURE.entry_point(AzureOpenAIChatAdapter)
"""``runport run … --adapter azure-openai``."""

create_async_azure_adapter = AZURE.entry_point(AsyncAzureOpenAIChatAdapter)
"""``create_azure_adapter``'s settings on the event loop."""
