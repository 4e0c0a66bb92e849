"""``TurnBuilder`` and ``StreamAssembler`` on what the provider did itself: the events a turn
emits assemble to its receipt's ``server_tools``, ``citations`` and ``files``; bad input is
refused, coded (adr/0055-what-the-provider-did-itself.md)."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue, ValidationError
from pydantic_core import from_json

from runport.contracts import (
    AdapterDescriptor,
    Citation,
    CitationSource,
    CompiledInteraction,
    Complete,
    Delta,
    ErrorCode,
    ExecutionRequest,
    FileDelta,
    Message,
    PortError,
    ServerToolCall,
    ServerToolResult,
)
from runport.core import StreamAssembler, StreamGrammarError, TurnBuilder

ADAPTER = AdapterDescriptor(id="turn-test", version="1.0.0")
REQUEST = ExecutionRequest(
    interaction=CompiledInteraction(
        compiler="test/0",
        contract_id="provided",
        contract_version="1.0.0",
        messages=[Message(role="user", content="Search.")],
        output_schema={"type": "string"},
    )
)
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x01" * 20).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff" + b"\x02" * 20).decode()

# one step of a turn: ("text", piece) | ("tool", n) | ("cite", n) | ("file", partial)
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("text"), st.text(min_size=1, max_size=6)),
        st.tuples(st.just("tool"), st.integers(0, 3)),
        st.tuples(st.just("cite"), st.integers(0, 3)),
        st.tuples(st.just("file"), st.booleans()),
    ),
    max_size=12,
)


def _play(turn: TurnBuilder, steps: list[tuple[str, object]]) -> None:
    said = 0
    for kind, value in steps:
        if kind == "text":
            assert isinstance(value, str)
            turn.text(value)
            said += len(value)
        elif kind == "tool":
            call_id = f"srvtoolu_{len(turn.events)}"
            turn.server_call(call_id, "web_search", {"query": f"q{value}"}, {"p": {"n": value}})
            turn.server_result(call_id, [{"url": f"https://example.com/{value}"}])
        elif kind == "cite":
            source = {"type": "url", "url": f"https://example.com/{value}", "title": "T"}
            turn.citation(source, cited_text="quoted", start=0, end=said)
        else:
            turn.file("image/png", PNG, partial=bool(value))


@settings(deadline=None, max_examples=80)
@given(_steps)
def test_the_events_a_turn_emits_assemble_to_its_receipt(steps: list[tuple[str, object]]) -> None:
    turn = TurnBuilder()
    _play(turn, steps)
    receipt = turn.receipt(REQUEST, ADAPTER)
    assembler = StreamAssembler()
    for event in [*turn.events, Complete(receipt=receipt)]:
        assembler.feed(event)
    assert assembler.assembly_problems(receipt) == []
    assert len(receipt.server_tools or []) == 2 * sum(1 for k, _ in steps if k == "tool")
    assert len(receipt.citations or []) == sum(1 for k, _ in steps if k == "cite")
    assert len(receipt.files or []) == sum(1 for k, v in steps if k == "file" and not v)
    # a test double that plays the same events assembles the same receipt
    double = TurnBuilder()
    for event in turn.events:
        double.assemble(event)  # type: ignore[arg-type]
    assert double.receipt(REQUEST, ADAPTER) == receipt


def test_a_turn_whose_only_output_is_a_file_is_not_empty() -> None:
    turn = TurnBuilder()
    assert turn.empty
    turn.file("image/png", PNG)
    assert not turn.empty
    receipt = turn.receipt(REQUEST, ADAPTER)
    assert receipt.files is not None
    assert receipt.files[0].raw().startswith(b"\x89PNG")


def test_a_server_tool_result_for_a_call_never_announced_is_coded() -> None:
    turn = TurnBuilder()
    with pytest.raises(PortError) as caught:
        turn.server_result("srvtoolu_x", {"ok": True})
    assert caught.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "never announced" in str(caught.value)
    turn.server_call("srvtoolu_1", "web_search", {})
    turn.server_result("srvtoolu_1", [])
    with pytest.raises(PortError, match="already answered"):
        turn.server_result("srvtoolu_1", [])
    with pytest.raises(PortError, match="announced twice"):
        turn.server_call("srvtoolu_1", "web_search", {})


def test_a_citation_pointing_past_the_text_is_coded() -> None:
    turn = TurnBuilder()
    turn.text("Short.")
    turn.citation({"type": "url", "url": "https://example.com"}, start=2, end=60)
    with pytest.raises(PortError) as caught:
        turn.receipt(REQUEST, ADAPTER)
    assert caught.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "past the answer" in str(caught.value)


@pytest.mark.parametrize(
    "source",
    [{"type": "web"}, {"type": "url", "document_index": -1}, {"url": "https://x.io"}],
)
def test_a_malformed_citation_is_coded(source: dict[str, object]) -> None:
    with pytest.raises(PortError) as caught:
        TurnBuilder().citation(source)  # type: ignore[arg-type]
    assert caught.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_a_file_whose_bytes_are_not_its_declared_type_is_coded() -> None:
    with pytest.raises(PortError) as caught:
        TurnBuilder().file("image/png", JPEG)
    assert caught.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "image/jpeg" in str(caught.value)
    with pytest.raises(PortError) as not_base64:
        TurnBuilder().file("image/png", "not base64!")
    assert not_base64.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_a_preview_whose_bytes_are_not_its_declared_type_is_coded_before_its_event() -> None:
    # a preview is never kept, but every surface shows it as a data: URL of its type
    made = TurnBuilder()
    with pytest.raises(PortError) as caught:
        made.file("image/png", JPEG, partial=True)
    assert caught.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert made.events == []
    played = TurnBuilder()
    with pytest.raises(PortError) as assembled:
        played.assemble(FileDelta(media_type="image/png", data=JPEG, partial=True))
    assert assembled.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_a_file_past_the_part_bound_is_too_large() -> None:
    from runport.contracts import MAX_PART_BYTES

    huge = "A" * (4 * (MAX_PART_BYTES // 3 + 2))
    with pytest.raises(PortError) as caught:
        TurnBuilder().file("application/octet-stream", huge)
    assert caught.value.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE


def test_unknown_items_are_kept_by_provider_in_order() -> None:
    turn = TurnBuilder()
    turn.unknown("anthropic", {"type": "container_upload", "file_id": "f1"})
    turn.unknown("anthropic", {"type": "novel"})
    assert not turn.empty
    receipt = turn.receipt(REQUEST, ADAPTER)
    assert receipt.provider_metadata == {
        "anthropic": {"unknown": [{"type": "container_upload", "file_id": "f1"}, {"type": "novel"}]}
    }


def test_the_grammar_refuses_a_result_before_its_call_and_twice() -> None:
    result = ServerToolResult(call_id="s1", name="web_search", output=None)
    with pytest.raises(StreamGrammarError, match="never announced"):
        StreamAssembler().feed(result)
    assembler = StreamAssembler()
    assembler.feed(ServerToolCall(call_id="s1", name="web_search"))
    assembler.feed(result)
    with pytest.raises(StreamGrammarError, match="answered twice"):
        assembler.feed(result)
    with pytest.raises(StreamGrammarError, match="announced twice"):
        assembler.feed(ServerToolCall(call_id="s1", name="web_search"))
    assert not assembler.done


_SOURCE_VALUES = st.one_of(
    st.none(), st.text(max_size=8), st.integers(-2, 5), st.booleans(), st.just(["x"])
)


@settings(deadline=None, max_examples=150)
@given(
    kind=st.sampled_from(["url", "document", "web"]),
    fields=st.dictionaries(
        st.sampled_from(["url", "title", "document_index", "file_id", "filename", "extra"]),
        _SOURCE_VALUES,
        max_size=4,
    ),
    cited=st.one_of(st.none(), st.text(max_size=6)),
    start=st.one_of(st.none(), st.integers(-1, 9)),
    end=st.one_of(st.none(), st.integers(-1, 9)),
)
def test_a_citation_is_the_model_its_fields_validate_to_or_coded_alike(
    kind: str,
    fields: dict[str, object],
    cited: str | None,
    start: int | None,
    end: int | None,
) -> None:
    """The citation a turn emits without validating again is the very model validation
    makes (equal, the same JSON, the same fields set); what validation refuses is refused."""
    source = {"type": kind, **fields}
    try:
        expected = Citation(
            source=CitationSource.model_validate(source), cited_text=cited or None,
            start=start, end=end,
        )  # fmt: skip
    except ValidationError:
        with pytest.raises(PortError) as caught:
            TurnBuilder().citation(source, cited_text=cited, start=start, end=end)  # type: ignore[arg-type]
        assert caught.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
        return
    turn = TurnBuilder()
    turn.citation(source, cited_text=cited, start=start, end=end)  # type: ignore[arg-type]
    (made,) = turn.events
    assert made == expected
    assert made.model_dump_json() == expected.model_dump_json()
    assert made.model_dump(exclude_unset=True) == expected.model_dump(exclude_unset=True)


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False),
              st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=8,
)  # fmt: skip
_ODD = st.one_of(_JSON, st.just((1, 2)), st.just({1: "a"}), st.just({"a": {2}}))


def _call_and_result(
    turn: TurnBuilder,
    given_input: object,
    output: object,
    metadata: dict[str, object] | None,
    error: str | None,
) -> TurnBuilder:
    turn.server_call("c", "web_search", given_input, metadata)  # type: ignore[arg-type]
    turn.server_result("c", output, error=error, metadata=metadata)  # type: ignore[arg-type]
    return turn


@settings(deadline=None, max_examples=120)
@given(
    given_input=_ODD,
    output=_ODD,
    metadata=st.one_of(st.none(), st.dictionaries(st.text(max_size=3), _ODD, max_size=2)),
    error=st.one_of(st.none(), st.text(max_size=4)),
)
def test_server_tool_events_are_the_models_their_fields_validate_to(
    given_input: object, output: object, metadata: dict[str, object] | None, error: str | None
) -> None:
    """A server tool's call and result, kept without validating again when their values are
    plainly JSON, are the very models validation makes; other values are validated (and
    refused, coded, when they are not JSON)."""
    try:
        expected: list[object] = [
            ServerToolCall(
                call_id="c", name="web_search", input=given_input,
                provider_metadata=metadata or None,
            ),
            ServerToolResult(
                call_id="c", name="web_search", output=output, error=error or None,
                provider_metadata=metadata or None,
            ),
        ]  # fmt: skip
    except ValidationError:
        with pytest.raises((PortError, ValidationError)):
            _call_and_result(TurnBuilder(), given_input, output, metadata, error)
        return
    turn = _call_and_result(TurnBuilder(), given_input, output, metadata, error)
    assert turn.events == expected
    for made, want in zip(turn.events, expected, strict=True):
        assert isinstance(want, ServerToolCall | ServerToolResult)
        assert made.model_dump_json() == want.model_dump_json()
        assert made.model_dump(exclude_unset=True) == want.model_dump(exclude_unset=True)


@settings(deadline=None, max_examples=80)
@given(
    given_input=_JSON,
    output=_JSON,
    metadata=st.one_of(st.none(), st.dictionaries(st.text(max_size=3), _JSON, max_size=2)),
    error=st.one_of(st.none(), st.text(max_size=4)),
)
def test_decoded_server_tool_values_make_the_events_validation_makes(
    given_input: object, output: object, metadata: dict[str, object] | None, error: str | None
) -> None:
    """Values a codec says it decoded from a body (here: decoded from their JSON text) are
    kept without a walk, and the events are the ones the checking path makes."""
    decoded = [from_json(json.dumps(value)) for value in (given_input, output, metadata)]
    checked = _call_and_result(TurnBuilder(), given_input, output, metadata, error)
    turn = TurnBuilder()
    turn.server_call("c", "web_search", decoded[0], decoded[2], decoded=True)
    turn.server_result("c", decoded[1], error=error, metadata=decoded[2], decoded=True)
    assert turn.events == checked.events
    for made, want in zip(turn.events, checked.events, strict=True):
        assert made.model_dump_json() == want.model_dump_json()
        assert made.model_fields_set == want.model_fields_set


def test_a_citation_event_is_kept_and_returned_not_owed() -> None:
    """``citation_event`` keeps the citation for the receipt and hands it back, owing
    nothing; ``citation`` owes the same event."""
    source: dict[str, JsonValue] = {"type": "url", "url": "https://example.com/a", "title": "A"}
    turn = TurnBuilder()
    turn.text("Harbour news.")
    event = turn.citation_event(source, start=0, end=7)
    assert turn.events == [Delta(text="Harbour news.")]
    owed = TurnBuilder()
    owed.citation(source, start=0, end=7)
    assert owed.events == [event]
    receipt = turn.receipt(REQUEST, ADAPTER)
    assert receipt.citations == [event]
    beyond = TurnBuilder()
    beyond.text("Harbour news.")
    beyond.citation_event(source, start=0, end=99)
    with pytest.raises(PortError) as caught:  # past the text: still refused at the receipt
        beyond.receipt(REQUEST, ADAPTER)
    assert caught.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
