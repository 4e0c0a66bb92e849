"""Where the Anthropic entry points read their settings, and the entry points themselves."""

from runport.anthropic._adapter import AnthropicMessagesAdapter
from runport.anthropic._async_adapter import AsyncAnthropicMessagesAdapter
from runport.http import ProviderEnvironment

ENVIRONMENT = ProviderEnvironment(
    "anthropic",
    "RUNPORT_ANTHROPIC",
    api_key=("ANTHROPIC_API_KEY",),
    example="RUNPORT_ANTHROPIC_MODEL=claude-sonnet-4-5",
)

create_adapter = ENVIRONMENT.entry_point(AnthropicMessagesAdapter)
"""``runport run … --adapter anthropic``: ``ANTHROPIC_API_KEY`` and ``RUNPORT_ANTHROPIC_MODEL``
are required, ``RUNPORT_ANTHROPIC_BASE_URL`` defaults to ``https://api.anthropic.com``."""

create_async_adapter = ENVIRONMENT.entry_point(AsyncAnthropicMessagesAdapter)
"""``create_adapter``'s settings on the event loop (``runport.async_adapters``)."""

VERTEX = ProviderEnvironment.vertex(
    "vertex-anthropic",
    "RUNPORT_VERTEX_ANTHROPIC",
    example="RUNPORT_VERTEX_ANTHROPIC_MODEL=claude-sonnet-4@20250514",
)

create_vertex_adapter = VERTEX.entry_point(AnthropicMessagesAdapter)
"""``runport run … --adapter vertex-anthropic``: Claude on Vertex AI, signed by google-auth's
default credentials. ``RUNPORT_VERTEX_ANTHROPIC_MODEL`` and ``RUNPORT_VERTEX_PROJECT`` are
required (``RUNPORT_VERTEX_LOCATION`` defaults to ``global``); ``RUNPORT_VERTEX_ANTHROPIC_BASE_URL``
defaults to the location's host."""

create_async_vertex_adapter = VERTEX.entry_point(AsyncAnthropicMessagesAdapter)
"""``create_vertex_adapter``'s settings on the event loop (``runport.async_adapters``)."""
