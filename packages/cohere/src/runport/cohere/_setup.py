"""Where the Cohere entry points read their settings, and the entry points themselves."""

from runport.cohere._adapter import CohereChatAdapter
from runport.cohere._async_adapter import AsyncCohereChatAdapter
from runport.http import ProviderEnvironment

ENVIRONMENT = ProviderEnvironment(
    "cohere",
    "RUNPORT_COHERE",
    api_key=("CO_API_KEY", "COHERE_API_KEY"),
    example="RUNPORT_COHERE_MODEL=command-a-03-2025",
)

create_adapter = ENVIRONMENT.entry_point(CohereChatAdapter)
"""``runport run … --adapter cohere``: ``CO_API_KEY`` (else ``COHERE_API_KEY``) and
``RUNPORT_COHERE_MODEL`` are required, ``RUNPORT_COHERE_BASE_URL`` defaults to
``https://api.cohere.com``."""

create_async_adapter = ENVIRONMENT.entry_point(AsyncCohereChatAdapter)
"""``create_adapter``'s settings on the event loop (``runport.async_adapters``)."""
