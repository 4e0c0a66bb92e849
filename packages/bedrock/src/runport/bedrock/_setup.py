"""Where the Bedrock entry points read their settings, and the entry points themselves."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from runport.bedrock._adapter import (
    DEFAULT_REGION,
    BedrockConverseAdapter,
    ConverseKeywords,
    region_url,
)
from runport.bedrock._anthropic import AnthropicKeywords, BedrockAnthropicAdapter
from runport.bedrock._async_adapter import AsyncBedrockAnthropicAdapter, AsyncBedrockConverseAdapter
from runport.bedrock._sigv4 import SigV4Auth
from runport.http import ProviderEnvironment

ENVIRONMENT = ProviderEnvironment(
    "bedrock",
    "RUNPORT_BEDROCK",
    api_key=("AWS_BEARER_TOKEN_BEDROCK",),
    example="RUNPORT_BEDROCK_MODEL=us.anthropic.claude-sonnet-4-20250514-v1:0",
    key_required=False,
    options={"region": "AWS_REGION"},
)

ANTHROPIC = replace(
    ENVIRONMENT,
    adapter="bedrock-anthropic",
    prefix="RUNPORT_BEDROCK_ANTHROPIC",
    example="RUNPORT_BEDROCK_ANTHROPIC_MODEL=us.anthropic.claude-sonnet-4-20250514-v1:0",
)
"""Claude through InvokeModel reads AWS's key, region and credentials as ``bedrock`` does."""

_A = TypeVar("_A", bound=ConverseKeywords[Any] | AnthropicKeywords[Any])


def _entry_point(
    kind: type[_A], environment: ProviderEnvironment = ENVIRONMENT
) -> Callable[..., _A]:
    def create(
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        region: str | None = None,
    ) -> _A:
        region = region or os.environ.get("AWS_REGION") or DEFAULT_REGION
        base_url = base_url or os.environ.get(environment.base_url) or region_url(region)
        settings = environment.settings(
            kind, base_url=base_url, model=model, api_key=api_key, region=region
        )
        if not settings.get("api_key"):
            settings["auth"] = SigV4Auth(settings["region"])
        build: Callable[..., _A] = kind
        return build(**settings)

    prefix = environment.prefix
    create.__doc__ = (
        f"The entry point ``{environment.adapter}``: a ``{kind.__name__}`` whose settings each "
        f"fall back to the environment: ``{prefix}_MODEL`` (required), "
        "``AWS_BEARER_TOKEN_BEDROCK`` (a Bedrock API key; without one, requests are signed "
        "with SigV4 from the standard AWS credential chain, which needs "
        "``runport[bedrock]``), ``AWS_REGION`` (default "
        f"``us-east-1``), ``{prefix}_BASE_URL`` (default the region's endpoint)."
    )
    return create


create_adapter = _entry_point(BedrockConverseAdapter)
"""``runport run … --adapter bedrock``."""

create_async_adapter = _entry_point(AsyncBedrockConverseAdapter)
"""``create_adapter``'s settings on the event loop (``runport.async_adapters``)."""

create_anthropic_adapter = _entry_point(BedrockAnthropicAdapter, ANTHROPIC)
"""``runport run … --adapter bedrock-anthropic``: Claude through InvokeModel."""

create_async_anthropic_adapter = _entry_point(AsyncBedrockAnthropicAdapter, ANTHROPIC)
"""``create_anthropic_adapter``'s settings on the event loop (``runport.async_adapters``)."""
