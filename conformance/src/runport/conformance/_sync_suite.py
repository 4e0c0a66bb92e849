"""``RuntimeAdapterConformance``: the standard tests every runport adapter runs
(docs/conformance.md, docs/streaming-law.md).

The tests themselves live in ``_law_tests``, ``_receipt_tests`` and ``_black_box_tests`` and
are shared with the async suite; this class only says how its adapters are called
(synchronously, on a worker thread).
"""

from __future__ import annotations

from runport.conformance._black_box_tests import BlackBoxTests
from runport.conformance._upstream import Upstream
from runport.ports import RuntimeAdapter

__all__ = ["RuntimeAdapterConformance"]


class RuntimeAdapterConformance(BlackBoxTests):
    """The conformance suite: subclass it as ``Test…``, set ``protocol``, implement
    ``make_adapter``.

    ``protocol`` is ``"scenario"`` (the adapter plays ``upstream.scenario``, a
    ``runport.core.Scenario``), ``"openai-chat"``, ``"openai-responses"``,
    ``"anthropic-messages"``, ``"gemini"``, ``"bedrock-converse"``,
    ``"bedrock-anthropic"``, ``"ollama"``, ``"cohere-chat"`` or any ``WireProtocol``
    instance (the adapter talks to ``upstream.base_url``, a loopback server speaking that
    protocol) or ``None`` (black-box checks over ``sample_requests()``).
    Pass ``upstream.read_timeout`` and ``upstream.api_key`` on. ``make_adapter`` may be called
    several times in one test; each call must return a fresh adapter. An adapter with a
    ``close()`` method is closed when its test ends.

    The capability flags (``supports_streaming``, ``supports_tool_calls``,
    ``supports_structured_output``, ``is_composite``) follow the adapter's
    ``descriptor().capabilities``; override one to switch a group off, and the tests it skips
    say so. A standard test may be overridden only with ``@pytest.mark.xfail(reason=…)``: the
    plugin refuses to collect the class otherwise, so a weakened check never passes silently.
    """

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        """A fresh adapter wired to ``upstream`` (see the class docstring)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_adapter(upstream)")
