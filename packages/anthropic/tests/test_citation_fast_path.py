"""A ``citations_delta`` read on the stream's fast path (``MessageAssembly.single``) makes the
events, and keeps the citations, the careful path (``MessageAssembly.delta``, with its checks)
makes for the same frame: for any citation, of a known kind or not, well-formed or not."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runport.anthropic._message import MessageAssembly
from runport.contracts import (
    AdapterDescriptor,
    Citation,
    CompiledInteraction,
    ExecutionRequest,
    Message,
    StreamEvent,
)
from runport.core import TurnBuilder
from runport.ports import PortError

_ADAPTER = AdapterDescriptor(id="citation-test", version="1.0.0")
_REQUEST = ExecutionRequest(
    interaction=CompiledInteraction(
        compiler="test/0",
        contract_id="citation-test",
        contract_version="1.0.0",
        messages=[Message(role="user", content="Cite it.")],
        output_schema={"type": "string"},
    )
)

_KINDS = (
    "web_search_result_location",
    "char_location",
    "page_location",
    "content_block_location",
    "search_result_location",
    "a_location_not_known",
)
_ODD: list[Any] = [None, "", "Harbour", "https://example.com/a", "http://example.com/b"]
_ODD += [0, 2, -1, True, False, 1.5, [1], {"a": 1}]
_VALUES = st.one_of(st.sampled_from(_ODD), st.text(max_size=8))
_FIELDS = ("url", "title", "cited_text", "document_index", "document_title", "source")


@st.composite
def citations(draw: st.DrawFn) -> Any:
    """A citation as a ``citations_delta`` carries it: a kind, each field present or not and
    of any JSON type, and a field no reader knows; now and then not an object at all."""
    if draw(st.integers(0, 19)) == 0:
        return draw(_VALUES)
    citation: dict[str, Any] = {"type": draw(st.sampled_from(_KINDS))}
    for field in _FIELDS:
        if draw(st.booleans()):
            citation[field] = draw(_VALUES)
    if draw(st.booleans()):
        citation["encrypted_index"] = "Eo8BCioIAhgBIiQy"
    return citation


def _read(citation: Any, *, fast: bool) -> tuple[list[StreamEvent], list[Citation], str | None]:
    """One text block, its text, then the citation's frame: the events the frame made, the
    citations the turn keeps, and the code of a refusal (from the frame or the receipt's
    span check)."""
    turn = TurnBuilder()
    assembly = MessageAssembly(turn, answer_tool=False)
    assembly.start(0, {"type": "text", "text": "Before. "})
    assembly.delta(0, {"type": "text_delta", "text": "The harbour reopened."})
    turn.events.clear()
    frame = {"type": "citations_delta", "citation": citation}
    events: list[StreamEvent] = []
    try:
        made = assembly.single(0, frame) if fast else None
        if made is not None:
            events.append(made)
        else:
            assembly.delta(0, frame)
        events += turn.events
        receipt = turn.receipt(_REQUEST, _ADAPTER)
    except PortError as error:
        return events, [], str(error.code)
    return events, list(receipt.citations or ()), None


@settings(deadline=None, max_examples=200)
@given(citations())
def test_the_fast_path_reads_a_citation_as_the_careful_path_does(citation: Any) -> None:
    assert _read(citation, fast=True) == _read(citation, fast=False)


def test_a_usual_citation_takes_the_fast_path_and_keeps_its_fields() -> None:
    turn = TurnBuilder()
    assembly = MessageAssembly(turn, answer_tool=False)
    assembly.start(0, {"type": "text", "text": "Cited. "})
    turn.events.clear()
    cited = {"type": "web_search_result_location", "url": "https://example.com/a",
             "title": "A", "cited_text": "Cited.", "encrypted_index": "Eo8B"}  # fmt: skip
    made = assembly.single(0, {"type": "citations_delta", "citation": cited})
    assert isinstance(made, Citation)
    assert made.source.type == "url"
    assert made.source.url == "https://example.com/a"
    assert (made.source.title, made.cited_text, made.start) == ("A", "Cited.", 0)
    assert made == Citation.model_validate(made.model_dump())
    assert turn.events == []  # returned, not also owed
    odd = {"type": "web_search_result_location", "url": 7}
    assert assembly.single(0, {"type": "citations_delta", "citation": odd}) is None
