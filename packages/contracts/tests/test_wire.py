from __future__ import annotations

import json

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    Complete,
    Delta,
    Diagnostic,
    ErrorCode,
    ExecutionReceipt,
    Failed,
    FilePart,
    ImagePart,
    Message,
    OperationEnvelope,
    ReasoningPart,
    StreamEvent,
    TextPart,
    ToolCall,
    ToolCallDelta,
    Usage,
    fingerprint,
)

EVENTS = pydantic.TypeAdapter(StreamEvent)
NULL_FP = fingerprint(None)


def _receipt(**overrides: object) -> ExecutionReceipt:
    fields: dict[str, object] = {
        "adapter": AdapterDescriptor(id="a", version="1", capabilities=["text"]),
        "request_fingerprint": NULL_FP,
        "output_fingerprint": NULL_FP,
        "output": None,
        "output_schema_valid": None,
    }
    fields.update(overrides)
    return ExecutionReceipt.model_validate(fields)


def test_events_serialize_exactly_as_the_spec_writes_them() -> None:
    assert Delta(text="a").model_dump_json() == '{"kind":"Delta","text":"a"}'
    assert (
        ToolCallDelta(
            index=0, call_id="call_1", name="get_weather", arguments_fragment='{"ci'
        ).model_dump_json()
        == '{"kind":"ToolCallDelta","index":0,"call_id":"call_1","name":"get_weather",'
        '"arguments_fragment":"{\\"ci"}'
    )
    failed = Failed(code=ErrorCode.RUNTIME_UNAVAILABLE, message="reset")
    assert json.loads(failed.model_dump_json()) == {
        "kind": "Failed",
        "code": "TQX_RUNTIME_UNAVAILABLE",
        "message": "reset",
    }


def test_optional_fields_are_omitted_by_the_models_own_serialization() -> None:
    receipt = _receipt()
    dumped = receipt.model_dump(mode="json")
    assert set(dumped) == {
        "adapter",
        "request_fingerprint",
        "output_fingerprint",
        "output",
        "output_schema_valid",
    }
    assert dumped["output"] is None
    assert json.loads(receipt.model_dump_json()) == dumped
    full = _receipt(text="hi", finish_reason="stop", usage=Usage(input_tokens=1, output_tokens=2))
    assert set(full.model_dump(mode="json")) >= {"text", "finish_reason", "usage"}
    assert "tool_calls" not in Message(role="user", content="x").model_dump(mode="json")


def test_empty_lists_and_text_normalize_to_absent_so_round_trips_are_equal() -> None:
    receipt = _receipt(text="", tool_calls=[])
    assert receipt.text is None
    assert receipt.tool_calls is None
    assert ExecutionReceipt.model_validate_json(receipt.model_dump_json()) == receipt


def test_capabilities_are_sorted_and_deduplicated() -> None:
    interaction = CompiledInteraction(
        compiler="c",
        contract_id="x",
        contract_version="1.0.0",
        messages=[],
        output_schema={},
        required_capabilities=["tool_calls", "text", "text"],
    )
    assert interaction.required_capabilities == ["text", "tool_calls"]


@pytest.mark.parametrize(
    "payload",
    [
        {"kind": "Delta", "text": "a", "extra": 1},
        {"kind": "Delta", "text": ""},
        {"kind": "Nope", "text": "a"},
        {"kind": "Failed", "code": "TQX_X", "message": "m", "retry_after_ms": 5},
        {"kind": "ToolCallDelta", "index": -1, "call_id": "c", "name": "n"},
        {"kind": "Failed", "code": "lower", "message": "m"},
    ],
)
def test_bad_events_are_refused(payload: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        EVENTS.validate_python(payload)


def test_wire_models_are_frozen_values() -> None:
    delta = Delta(text="a")
    with pytest.raises(pydantic.ValidationError):
        delta.text = "b"  # type: ignore[misc]
    assert Delta(text="a") == delta


def test_envelope_round_trips_with_its_stream_events() -> None:
    receipt = _receipt(output="x", text="x")
    envelope = OperationEnvelope(
        operation="execute_contract",
        ok=True,
        result=receipt,
        diagnostics=[Diagnostic(code="TQX_TOOL_CALLS_PENDING", severity="warning", message="m")],
        fingerprints={"request": receipt.request_fingerprint, "output": receipt.output_fingerprint},
        stream_events=[Delta(text="x"), Complete(receipt=receipt)],
    )
    assert OperationEnvelope.model_validate_json(envelope.model_dump_json()) == envelope
    bare = OperationEnvelope(operation="execute_contract", ok=False).model_dump(mode="json")
    assert "result" not in bare
    assert "stream_events" not in bare
    assert bare["api_version"] == "runport/v1alpha1"


_text = st.text(min_size=1, max_size=20)


def _containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.lists(children, max_size=3) | st.dictionaries(
        st.text(max_size=5), children, max_size=3
    )


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    _containers,
    max_leaves=10,
)
_events = st.one_of(
    st.builds(Delta, text=_text),
    st.builds(
        ToolCallDelta,
        index=st.integers(0, 5),
        call_id=_text,
        name=_text,
        arguments_fragment=st.text(max_size=10),
    ),
    st.builds(Failed, code=st.sampled_from(list(ErrorCode)).map(str), message=st.text(max_size=10)),
    st.builds(
        lambda out, text, calls: Complete(
            receipt=_receipt(
                output=out, output_fingerprint=fingerprint(out), text=text, tool_calls=calls
            )
        ),
        _json_values,
        st.none() | _text,
        st.lists(
            st.builds(ToolCall, call_id=_text, name=_text, arguments=_json_values), max_size=2
        ),
    ),
)


@settings(deadline=None)
@given(_events)
def test_every_event_round_trips_through_json(event: StreamEvent) -> None:
    assert EVENTS.validate_json(event.model_dump_json()) == event
    assert EVENTS.validate_python(json.loads(EVENTS.dump_json(event))) == event


@settings(deadline=None)
@given(_events, st.text(min_size=1, max_size=8).filter(lambda k: k not in {"kind"}))
def test_unknown_fields_are_refused_on_every_event(event: StreamEvent, key: str) -> None:
    payload = event.model_dump(mode="json")
    if key in payload:
        return
    payload[key] = 1
    with pytest.raises(pydantic.ValidationError):
        EVENTS.validate_python(payload)


# A receipt written before descriptors had provider and model, with the fingerprint the models
# of that time gave it: both must survive a load and a dump unchanged.
OLD_RECEIPT = (
    '{"adapter":{"id":"runport-openai","version":"0.1.0","capabilities":["streaming","text"]},'
    '"request_fingerprint":"' + "a" * 64 + '",'
    '"output_fingerprint":"91640673585241a75c30eee1ea7cecaced4a8655eff9dc3313a17a7c20361569",'
    '"output":"Rivers run downhill.","output_schema_valid":true,'
    '"text":"Rivers run downhill.","finish_reason":"stop"}'
)
OLD_RECEIPT_FINGERPRINT = "ce82372042dd44320f6884872648b3d96a1ce897dbae4e0751db10997a8b1de5"


def test_descriptors_without_provider_or_model_keep_their_json_and_fingerprint() -> None:
    receipt = ExecutionReceipt.model_validate_json(OLD_RECEIPT)
    assert receipt.adapter.provider is None
    assert receipt.adapter.model is None
    assert receipt.model_dump_json() == OLD_RECEIPT
    assert fingerprint(receipt) == OLD_RECEIPT_FINGERPRINT
    assert fingerprint(json.loads(OLD_RECEIPT)) == OLD_RECEIPT_FINGERPRINT
    blank = AdapterDescriptor(id="a", version="1", provider="", model="")
    assert blank.model_dump_json() == '{"id":"a","version":"1","capabilities":[]}'


def test_provider_and_model_are_written_when_set_and_round_trip() -> None:
    descriptor = AdapterDescriptor(id="a", version="1", provider="openai", model="gpt-4o-mini")
    dumped = descriptor.model_dump(mode="json")
    assert dumped == {
        "id": "a",
        "version": "1",
        "capabilities": [],
        "provider": "openai",
        "model": "gpt-4o-mini",
    }
    assert AdapterDescriptor.model_validate_json(descriptor.model_dump_json()) == descriptor
    receipt = _receipt(adapter=descriptor)
    assert fingerprint(receipt) != fingerprint(_receipt())


def test_a_reasoning_parts_provider_metadata_is_kept_but_never_in_its_repr() -> None:
    part = ReasoningPart(text="thinking", provider_metadata={"anthropic": {"signature": "SIG-42"}})
    assert "SIG-42" not in repr(part)
    assert "SIG-42" not in repr(Message(role="assistant", content="", reasoning=[part]))
    assert ReasoningPart.model_validate_json(part.model_dump_json()) == part


def test_cache_counts_are_omitted_when_absent_or_zero_so_old_receipts_keep_their_bytes() -> None:
    plain = Usage(input_tokens=5, output_tokens=2)
    zeros = Usage(input_tokens=5, output_tokens=2, cache_read_tokens=0, cache_write_tokens=0)
    assert zeros == plain
    assert plain.model_dump_json() == '{"input_tokens":5,"output_tokens":2}'
    cached = Usage(input_tokens=5, output_tokens=2, cache_read_tokens=3, cache_write_tokens=1)
    assert json.loads(cached.model_dump_json()) == {
        "input_tokens": 5,
        "output_tokens": 2,
        "cache_read_tokens": 3,
        "cache_write_tokens": 1,
    }
    assert Usage.model_validate_json(cached.model_dump_json()) == cached


def test_cache_counts_add_up_and_stay_omitted_when_no_side_has_them() -> None:
    one = Usage(input_tokens=5, output_tokens=2, cache_read_tokens=3)
    two = Usage(input_tokens=7, output_tokens=1, cache_write_tokens=4)
    total = one + two
    assert (total.cache_read_tokens, total.cache_write_tokens) == (3, 4)
    assert total.input_tokens == 12
    plain = Usage(input_tokens=1, output_tokens=1) + Usage(input_tokens=1, output_tokens=1)
    assert "cache_read_tokens" not in plain.model_dump(mode="json")


@pytest.mark.parametrize("bad", [-1, 1.5])
def test_cache_counts_reject_negative_and_non_integer_counts(bad: object) -> None:
    with pytest.raises(pydantic.ValidationError):
        Usage.model_validate({"input_tokens": 5, "cache_read_tokens": bad})


def test_a_cache_breakpoint_is_in_a_messages_bytes_only_when_present() -> None:
    plain = Message(role="user", content="x")
    assert Message(role="user", content="x", cache=False) == plain
    assert plain.model_dump_json() == '{"role":"user","content":"x"}'
    marked = Message(role="user", content="x", cache=True, cache_ttl="1h")
    assert json.loads(marked.model_dump_json()) == {
        "role": "user",
        "content": "x",
        "cache": True,
        "cache_ttl": "1h",
    }
    assert fingerprint(marked) != fingerprint(plain)


def test_a_cache_ttl_without_a_breakpoint_is_refused() -> None:
    with pytest.raises(pydantic.ValidationError, match="cache_ttl needs cache"):
        Message(role="user", content="x", cache_ttl="5m")


@pytest.mark.parametrize(
    "part",
    [
        TextPart(text="A long manual."),
        ImagePart(media_type="image/png", url="https://example.org/a.png"),
        FilePart(media_type="application/pdf", data="JVBERi0xLjcK", filename="a.pdf"),
    ],
)
def test_a_parts_cache_breakpoint_is_in_its_bytes_only_when_present(
    part: TextPart | ImagePart | FilePart,
) -> None:
    plain = part.model_dump_json()
    assert "cache" not in plain
    assert type(part).model_validate({**part.model_dump(), "cache": False}) == part
    marked = part.model_copy(update={"cache": True, "cache_ttl": "5m"})
    assert json.loads(marked.model_dump_json()) == {
        **json.loads(plain),
        "cache": True,
        "cache_ttl": "5m",
    }
    message = Message(role="user", content=[part])
    assert fingerprint(Message(role="user", content=[marked])) != fingerprint(message)
    assert Message.model_validate_json(message.model_dump_json()) == message
    with pytest.raises(pydantic.ValidationError, match="cache_ttl needs cache"):
        type(part).model_validate({**part.model_dump(), "cache_ttl": "1h"})
