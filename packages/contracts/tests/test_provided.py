"""What the provider did itself, on the wire: ``ServerToolCall``, ``ServerToolResult``,
``Citation``, ``FileDelta`` and the receipt's ``server_tools``, ``citations``, ``files`` and
``provider_metadata`` (adr/0055-what-the-provider-did-itself.md)."""

from __future__ import annotations

import base64
import json

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import (
    AdapterDescriptor,
    Citation,
    CitationSource,
    Complete,
    ExecutionReceipt,
    FileDelta,
    FilePart,
    Message,
    RunEvent,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
    fingerprint,
)

EVENTS = pydantic.TypeAdapter(StreamEvent)
RUN_EVENTS = pydantic.TypeAdapter(RunEvent)
NULL_FP = fingerprint(None)
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()

_text = st.text(min_size=1, max_size=12)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
_metadata = st.none() | st.dictionaries(st.sampled_from(["anthropic", "openai"]), _json, max_size=1)
_sources = st.builds(
    CitationSource,
    type=st.sampled_from(["url", "document"]),
    url=st.none() | st.just("https://example.com/a?b=1"),
    title=st.none() | _text,
    document_index=st.none() | st.integers(0, 9),
    file_id=st.none() | _text,
    filename=st.none() | _text,
)
_spans = st.tuples(st.integers(0, 50), st.integers(0, 50)).map(sorted)
_provided = st.one_of(
    st.builds(ServerToolCall, call_id=_text, name=_text, input=_json, provider_metadata=_metadata),
    st.builds(
        ServerToolResult,
        call_id=_text,
        name=_text,
        output=_json,
        error=st.none() | _text,
        provider_metadata=_metadata,
    ),
    st.builds(
        lambda source, quoted, span: Citation(
            source=source, cited_text=quoted, start=span[0], end=span[1]
        ),
        _sources,
        st.none() | _text,
        _spans,
    ),
    st.builds(FileDelta, media_type=st.just("image/png"), data=st.just(PNG), partial=st.booleans()),
)


def _receipt(**overrides: object) -> ExecutionReceipt:
    fields: dict[str, object] = {
        "adapter": AdapterDescriptor(id="a", version="1"),
        "request_fingerprint": NULL_FP,
        "output_fingerprint": NULL_FP,
        "output": None,
        "output_schema_valid": None,
    }
    fields.update(overrides)
    return ExecutionReceipt.model_validate(fields)


@settings(deadline=None, max_examples=60)
@given(_provided)
def test_every_new_event_round_trips_as_a_stream_and_a_run_event(
    event: ServerToolCall | ServerToolResult | Citation | FileDelta,
) -> None:
    assert EVENTS.validate_json(event.model_dump_json()) == event
    assert RUN_EVENTS.validate_python(json.loads(RUN_EVENTS.dump_json(event))) == event


@settings(deadline=None, max_examples=40)
@given(_provided, st.text(min_size=1, max_size=8).filter(lambda key: key != "kind"))
def test_unknown_fields_are_refused_on_the_new_events(
    event: ServerToolCall | ServerToolResult | Citation | FileDelta, key: str
) -> None:
    payload = event.model_dump(mode="json")
    if key in payload:
        return
    payload[key] = 1
    with pytest.raises(pydantic.ValidationError):
        EVENTS.validate_python(payload)


@settings(deadline=None, max_examples=40)
@given(st.lists(_provided, max_size=6))
def test_a_receipt_keeps_them_in_order_and_round_trips(
    provided: list[ServerToolCall | ServerToolResult | Citation | FileDelta],
) -> None:
    tools = [item for item in provided if isinstance(item, ServerToolCall | ServerToolResult)]
    citations = [item for item in provided if isinstance(item, Citation)]
    files = [
        FilePart(media_type=item.media_type, data=item.data)
        for item in provided
        if isinstance(item, FileDelta)
    ]
    receipt = _receipt(server_tools=tools, citations=citations, files=files)
    assert receipt.server_tools == (tools or None)
    back = ExecutionReceipt.model_validate_json(receipt.model_dump_json())
    assert back == receipt
    assert Complete.model_validate_json(Complete(receipt=receipt).model_dump_json()).receipt == back


def test_a_receipt_without_them_keeps_its_bytes() -> None:
    plain = _receipt()
    empty = _receipt(server_tools=[], citations=[], files=[], provider_metadata=None)
    assert empty.model_dump_json() == plain.model_dump_json()
    dumped = json.loads(plain.model_dump_json())
    assert not {"server_tools", "citations", "files", "provider_metadata"} & set(dumped)


def test_a_generated_file_is_fingerprinted_by_its_digest_not_its_bytes() -> None:
    from runport.contracts import canonical_json

    receipt = _receipt(files=[FilePart(media_type="image/png", data=PNG)])
    canonical = canonical_json(receipt).decode()
    assert PNG not in canonical
    assert receipt.files is not None
    assert str(receipt.files[0].sha256) in canonical


@pytest.mark.parametrize(
    "payload",
    [
        {"kind": "Citation", "source": {"type": "url"}, "start": 5, "end": 2},
        {"kind": "Citation", "source": {"type": "web"}},
        {"kind": "Citation", "source": {"type": "url"}, "start": -1},
        {"kind": "ServerToolCall", "call_id": "", "name": "web_search"},
        {"kind": "ServerToolResult", "call_id": "a", "name": ""},
        {"kind": "FileDelta", "media_type": "image/png", "data": ""},
    ],
)
def test_malformed_new_events_are_refused(payload: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        EVENTS.validate_python(payload)


def test_provider_metadata_stays_out_of_the_repr() -> None:
    call = ServerToolCall(
        call_id="srvtoolu_1",
        name="web_search",
        input={"query": "q"},
        provider_metadata={"anthropic": {"secret": "ZXhhbXBsZQ"}},
    )
    assert "ZXhhbXBsZQ" not in repr(call)
    receipt = _receipt(provider_metadata={"anthropic": {"unknown": [{"type": "x", "k": "ZZ9"}]}})
    assert "ZZ9" not in repr(receipt)


def test_an_assistant_message_carries_its_server_tools_and_drops_an_empty_list() -> None:
    call = ServerToolCall(call_id="s1", name="web_search", input={"query": "q"})
    result = ServerToolResult(call_id="s1", name="web_search", output=[{"url": "https://x.io"}])
    message = Message(role="assistant", content="Found.", server_tools=[call, result])
    assert Message.model_validate_json(message.model_dump_json()) == message
    bare = Message(role="assistant", content="Found.", server_tools=[])
    assert "server_tools" not in bare.model_dump()
