"""OpenAI's Responses API as a codec on ``runport.http`` (docs/providers-openai-responses.md):
the request body (``_request``), what the answer's events and items mean (``_output``), the
codec and its decoders (``_codec``), the adapters (``_adapter``; their entry points are
``runport.openai._setup``'s, beside the chat adapters')."""

from runport.openai._responses._adapter import AsyncOpenAIResponsesAdapter, OpenAIResponsesAdapter

__all__ = ["AsyncOpenAIResponsesAdapter", "OpenAIResponsesAdapter"]
