"""Where the Ollama entry points read their settings, and the entry points themselves."""

from runport.http import ProviderEnvironment
from runport.ollama._adapter import OllamaChatAdapter
from runport.ollama._async_adapter import AsyncOllamaChatAdapter

ENVIRONMENT = ProviderEnvironment(
    "ollama",
    "RUNPORT_OLLAMA",
    api_key=("OLLAMA_API_KEY",),
    example="RUNPORT_OLLAMA_MODEL=llama3.2",
    key_required=False,
    options={"num_ctx": "RUNPORT_OLLAMA_NUM_CTX", "keep_alive": "RUNPORT_OLLAMA_KEEP_ALIVE"},
)

create_adapter = ENVIRONMENT.entry_point(OllamaChatAdapter)
"""``runport run … --adapter ollama``: ``RUNPORT_OLLAMA_MODEL`` is required;
``RUNPORT_OLLAMA_BASE_URL`` defaults to ``http://localhost:11434``; ``OLLAMA_API_KEY`` (Ollama's
cloud), ``RUNPORT_OLLAMA_NUM_CTX`` and ``RUNPORT_OLLAMA_KEEP_ALIVE`` are optional."""

create_async_adapter = ENVIRONMENT.entry_point(AsyncOllamaChatAdapter)
"""``create_adapter``'s settings on the event loop (``runport.async_adapters``)."""
