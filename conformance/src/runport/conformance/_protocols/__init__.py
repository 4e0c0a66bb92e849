"""The protocols runport ships, each a ``WireProtocol`` like any author's: nothing the suite's
core does for them is not done for a protocol it has never heard of.

``PROTOCOLS`` names them; a suite class's ``protocol`` is one of those names, a
``WireProtocol`` instance, or ``None`` (black box). ``resolve`` turns that into the protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from runport.conformance._protocols._anthropic_messages import AnthropicMessages
from runport.conformance._protocols._azure_openai_chat import AzureOpenAIChat
from runport.conformance._protocols._bedrock_anthropic import BedrockAnthropic
from runport.conformance._protocols._bedrock_converse import BedrockConverse
from runport.conformance._protocols._cohere_chat import CohereChat
from runport.conformance._protocols._gemini import Gemini
from runport.conformance._protocols._ollama import Ollama
from runport.conformance._protocols._openai_chat import OpenAIChat
from runport.conformance._protocols._openai_responses import OpenAIResponses
from runport.conformance._protocols._scenario import Scenario
from runport.conformance._protocols._vertex import VertexAnthropic, VertexGemini
from runport.conformance._wire_protocol import WireProtocol

__all__ = ["PROTOCOLS", "UnknownProtocol", "resolve"]

PROTOCOLS: Final[Mapping[str, WireProtocol]] = MappingProxyType(
    {
        protocol.name: protocol
        for protocol in (
            Scenario(),
            OpenAIChat(),
            AzureOpenAIChat(),
            OpenAIResponses(),
            AnthropicMessages(),
            VertexAnthropic(),
            Gemini(),
            VertexGemini(),
            BedrockConverse(),
            BedrockAnthropic(),
            Ollama(),
            CohereChat(),
        )
    }
)
"""The built-in protocols by name."""


class UnknownProtocol(LookupError):
    """A protocol that is neither a built-in's name nor a ``WireProtocol``."""


def resolve(protocol: object) -> WireProtocol | None:
    """The protocol a suite class's ``protocol`` names (``None`` stays ``None``: black box)."""
    if protocol is None:
        return None
    if isinstance(protocol, WireProtocol):
        return protocol
    if isinstance(protocol, type) and issubclass(protocol, WireProtocol):
        return protocol()
    if isinstance(protocol, str) and protocol in PROTOCOLS:
        return PROTOCOLS[protocol]
    names = ", ".join(repr(name) for name in PROTOCOLS)
    raise UnknownProtocol(
        f"protocol is {protocol!r}; expected one of {names}, a runport.conformance.WireProtocol, "
        "or None"
    )
