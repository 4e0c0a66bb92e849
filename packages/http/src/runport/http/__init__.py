"""runport's HTTP layer: a provider written as a sans-IO codec, turned into sync and async
runtime adapters that keep the streaming law (docs/codecs.md, docs/upstream-safety.md).

``TurnBuilder``, ``TextPieces``, ``parsed_tool_call`` and ``turn_receipt`` live in
``runport.core`` (they need no HTTP); they are re-exported here, where codecs long found them.
"""

from runport.core import TextPieces, TurnBuilder, parsed_tool_call, turn_receipt
from runport.http._async import (
    ASYNC_TRANSPORTS,
    DEFAULT_ASYNC_LIMITS,
    TRANSPORT_VARIABLE,
    AsyncHTTPAdapter,
)
from runport.http._codec import Codec, HTTPRequest, ResponseDecoder
from runport.http._decoders import JSONTurnDecoder, SSETurnDecoder, TurnDecoder, json_object
from runport.http._errors import (
    MAX_RETRY_AFTER_MS,
    PROVIDER_TEXT_LIMIT,
    error_from_words,
    provider_text,
    retry_after_ms,
    status_error,
    transport_error,
)
from runport.http._eventstream import (
    EVENTSTREAM_MAX_MESSAGE_BYTES,
    EventStreamDecoder,
    EventStreamMessage,
    EventStreamTurnDecoder,
    HeaderValue,
    eventstream_error,
)
from runport.http._google import CLOUD_PLATFORM, GoogleAuth, Vertex, on_vertex
from runport.http._json import check_json_text, encode_json
from runport.http._json_api import (
    DecoderFactory,
    JSONAPICodec,
    bearer_headers,
    error_message,
    json_headers,
    provider_descriptor,
    reads_as_events,
)
from runport.http._parts import PartRules, data_url, joined_turns, message_parts, text_content
from runport.http._policy import (
    cache_key,
    reasoning_policy,
    sampling_settings,
    server_tools_policy,
)
from runport.http._provider import ProviderAdapter, ProviderEnvironment, ProviderKeywords
from runport.http._settings import (
    DEFAULT_TIMEOUT,
    ClientT,
    CodecCarrier,
    DriverOptions,
    checked_api_key,
    from_environment,
    require,
)
from runport.http._sse import ServerSentEvent, SSEDecoder
from runport.http._sync import HTTPAdapter
from runport.http._tools import function_tool, own_server_tools, tool_declaration
from runport.http._urls import redact_url
from runport.http._usage import cache_counts

__all__ = [
    "ASYNC_TRANSPORTS",
    "CLOUD_PLATFORM",
    "DEFAULT_ASYNC_LIMITS",
    "DEFAULT_TIMEOUT",
    "EVENTSTREAM_MAX_MESSAGE_BYTES",
    "MAX_RETRY_AFTER_MS",
    "PROVIDER_TEXT_LIMIT",
    "TRANSPORT_VARIABLE",
    "AsyncHTTPAdapter",
    "ClientT",
    "Codec",
    "CodecCarrier",
    "DecoderFactory",
    "DriverOptions",
    "EventStreamDecoder",
    "EventStreamMessage",
    "EventStreamTurnDecoder",
    "GoogleAuth",
    "HTTPAdapter",
    "HTTPRequest",
    "HeaderValue",
    "JSONAPICodec",
    "JSONTurnDecoder",
    "PartRules",
    "ProviderAdapter",
    "ProviderEnvironment",
    "ProviderKeywords",
    "ResponseDecoder",
    "SSEDecoder",
    "SSETurnDecoder",
    "ServerSentEvent",
    "TextPieces",
    "TurnBuilder",
    "TurnDecoder",
    "Vertex",
    "bearer_headers",
    "cache_counts",
    "cache_key",
    "check_json_text",
    "checked_api_key",
    "data_url",
    "encode_json",
    "error_from_words",
    "error_message",
    "eventstream_error",
    "from_environment",
    "function_tool",
    "joined_turns",
    "json_headers",
    "json_object",
    "message_parts",
    "on_vertex",
    "own_server_tools",
    "parsed_tool_call",
    "provider_descriptor",
    "provider_text",
    "reads_as_events",
    "reasoning_policy",
    "redact_url",
    "require",
    "retry_after_ms",
    "sampling_settings",
    "server_tools_policy",
    "status_error",
    "text_content",
    "tool_declaration",
    "transport_error",
    "turn_receipt",
]
