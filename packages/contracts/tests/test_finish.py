"""``ExecutionReceipt.finish`` (SPEC §29): the provider's finish reason normalised, left out of
the JSON when it is the same word as ``finish_reason`` — so every receipt written before it
keeps its bytes — and read back whole."""

from __future__ import annotations

import json
from typing import get_args

from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import AdapterDescriptor, ExecutionReceipt, Finish, OperationEnvelope

WORDS = list(get_args(Finish))
HASH = "0" * 64


def receipt(reason: str | None, finish: str | None) -> ExecutionReceipt:
    return ExecutionReceipt.model_validate(
        {
            "adapter": AdapterDescriptor(id="a", version="1"),
            "request_fingerprint": HASH,
            "output_fingerprint": HASH,
            "output": None,
            "output_schema_valid": None,
            "finish_reason": reason,
            "finish": finish,
        }
    )


reasons = st.one_of(st.none(), st.sampled_from([*WORDS, "end_turn", "MAX_TOKENS"]), st.text())


@settings(deadline=None, max_examples=200)
@given(reason=reasons, finish=st.one_of(st.none(), st.sampled_from(WORDS)))
def test_finish_is_written_only_when_it_says_more_and_reads_back_whole(
    reason: str | None, finish: str | None
) -> None:
    made = receipt(reason, finish)
    expected = finish if finish is not None else (reason if reason in WORDS else None)
    assert made.finish == expected
    dumped = json.loads(made.model_dump_json())
    assert ("finish" in dumped) == (expected is not None and expected != reason)
    assert ExecutionReceipt.model_validate_json(made.model_dump_json()) == made
    envelope = OperationEnvelope(operation="x", ok=True, result=made)
    assert OperationEnvelope.model_validate_json(envelope.model_dump_json()) == envelope


def test_a_receipt_written_before_finish_keeps_its_bytes() -> None:
    before = receipt("stop", None)
    assert before.finish == "stop"
    assert "finish" not in before.model_dump(mode="json")
    cut = receipt("max_tokens", "length")
    assert cut.model_dump(mode="json")["finish"] == "length"


def test_the_serialized_schema_still_describes_the_receipt() -> None:
    schema = OperationEnvelope.model_json_schema(mode="serialization")
    fields = schema["$defs"]["ExecutionReceipt"]["properties"]
    assert {"finish", "finish_reason", "output"} <= set(fields)
