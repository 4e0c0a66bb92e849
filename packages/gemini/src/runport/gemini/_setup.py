"""Where the Gemini entry points read their settings, and the entry points themselves."""

from runport.gemini._adapter import GeminiAdapter
from runport.gemini._async_adapter import AsyncGeminiAdapter
from runport.http import ProviderEnvironment

ENVIRONMENT = ProviderEnvironment(
    "gemini",
    "RUNPORT_GEMINI",
    api_key=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    example="RUNPORT_GEMINI_MODEL=gemini-2.5-flash",
)

create_adapter = ENVIRONMENT.entry_point(GeminiAdapter)
"""``runport run … --adapter gemini``: ``GEMINI_API_KEY`` (else ``GOOGLE_API_KEY``) and
``RUNPORT_GEMINI_MODEL`` are required, ``RUNPORT_GEMINI_BASE_URL`` defaults to
``https://generativelanguage.googleapis.com``."""

create_async_adapter = ENVIRONMENT.entry_point(AsyncGeminiAdapter)
"""``create_adapter``'s settings on the event loop (``runport.async_adapters``)."""

VERTEX = ProviderEnvironment.vertex(
    "vertex-gemini",
    "RUNPORT_VERTEX_GEMINI",
    api_key=("RUNPORT_VERTEX_API_KEY",),
    example="RUNPORT_VERTEX_GEMINI_MODEL=gemini-2.5-flash",
)

create_vertex_adapter = VERTEX.entry_point(GeminiAdapter)
"""``runport run … --adapter vertex-gemini``: Gemini on Vertex AI. ``RUNPORT_VERTEX_GEMINI_MODEL``
is required; ``RUNPORT_VERTEX_PROJECT`` (and ``RUNPORT_VERTEX_LOCATION``, default ``global``)
with google-auth's default credentials, or, without a project, express mode with
``RUNPORT_VERTEX_API_KEY``; ``RUNPORT_VERTEX_GEMINI_BASE_URL`` defaults to the location's host."""

create_async_vertex_adapter = VERTEX.entry_point(AsyncGeminiAdapter)
"""``create_vertex_adapter``'s settings on the event loop (``runport.async_adapters``)."""
