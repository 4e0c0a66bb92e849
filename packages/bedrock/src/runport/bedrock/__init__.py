"""An Amazon Bedrock runtime adapter — Converse and ConverseStream, the latter read from the
binary ``application/vnd.amazon.eventstream`` framing — as a codec on runport's HTTP layer
(docs/providers.md)."""

from runport.bedrock._adapter import DEFAULT_REGION, BedrockConverseAdapter, region_url
from runport.bedrock._async_adapter import AsyncBedrockConverseAdapter
from runport.bedrock._setup import create_adapter, create_async_adapter
from runport.bedrock._sigv4 import SigV4Auth

__all__ = [
    "DEFAULT_REGION",
    "AsyncBedrockConverseAdapter",
    "BedrockConverseAdapter",
    "SigV4Auth",
    "create_adapter",
    "create_async_adapter",
    "region_url",
]
