"""Where the OpenAI entry points read their settings, and the entry points themselves: chat
completions and the Responses API read the same variables."""

from dataclasses import replace

from runport.http import ProviderEnvironment
from runport.openai._adapter import OpenAIChatAdapter
from runport.openai._async_adapter import AsyncOpenAIChatAdapter
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
    },
)
"""There is no default server or model: a run must say where it goes; local servers need no
key. ``RUNPORT_OPENAI_RESPONSE_FORMAT`` is ``json_schema`` (unset), ``json_object`` or
``none``; ``RUNPORT_OPENAI_SEND_REASONING_AS`` ``reasoning_content`` or ``reasoning`` (unset,
no reasoning text is sent back)."""

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
