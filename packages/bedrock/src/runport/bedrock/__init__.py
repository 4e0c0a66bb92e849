"""Amazon Bedrock runtime adapters — Converse and ConverseStream, and Anthropic's Claude models
through InvokeModel and InvokeModelWithResponseStream, the streams read from the binary
``application/vnd.amazon.eventstream`` framing — as codecs on runport's HTTP layer
(docs/providers.md)."""

from runport.bedrock._adapter import DEFAULT_REGION, BedrockConverseAdapter, region_url
from runport.bedrock._anthropic import BedrockAnthropicAdapter
from runport.bedrock._async_adapter import AsyncBedrockAnthropicAdapter, AsyncBedrockConverseAdapter
from runport.bedrock._invoke import BEDROCK_ANTHROPIC_VERSION
from runport.bedrock._setup import (
    create_adapter,
    create_anthropic_adapter,
    create_async_adapter,
    create_async_anthropic_adapter,
)
from runport.bedrock._sigv4 import SigV4Auth

__all__ = [
    "BEDROCK_ANTHROPIC_VERSION",
    "DEFAULT_REGION",
    "AsyncBedrockAnthropicAdapter",
    "AsyncBedrockConverseAdapter",
    "BedrockAnthropicAdapter",
    "BedrockConverseAdapter",
    "SigV4Auth",
    "create_adapter",
    "create_anthropic_adapter",
    "create_async_adapter",
    "create_async_anthropic_adapter",
    "region_url",
]
