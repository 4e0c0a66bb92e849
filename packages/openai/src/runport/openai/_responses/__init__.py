"""OpenAI's Responses API as a codec on ``runport.http`` (docs/providers-openai-responses.md):
the request body (``_request``), what the answer's events and items mean (``_output``), the
codec and its decoders (``_codec``), the adapters (``_adapter``)."""
