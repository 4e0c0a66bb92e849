"""``runport record`` keeps how a turn ended and what it cost: the provider's finish reason with
runport's word beside it, and the cache counts, so the mock's replay gives the same receipt."""

from __future__ import annotations

import pytest

from runport.application import RunError, execute_contract, run
from runport.cli._record import comparable, turn_events
from runport.contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    Complete,
    Delta,
    ExecutionRequest,
    Finish,
    Message,
    Usage,
)
from runport.core import build_receipt, parse_contract, parse_scenario
from runport.mock import ScriptedRuntime

ADAPTER = AdapterDescriptor(id="anthropic", version="1", capabilities=["text"])
REQUEST = ExecutionRequest(
    interaction=CompiledInteraction(
        compiler="tests/0",
        contract_id="tests.record",
        contract_version="1.0.0",
        messages=[Message(role="user", content="Name three people.")],
        output_schema={"type": "object"},
    )
)


@pytest.mark.parametrize(
    ("reason", "finish"),
    [("max_tokens", "length"), ("refusal", "content_filter"), ("pause_turn", "pause"),
     ("end_turn", "stop"), ("length", "length"), ("a_new_word", "other")],
)  # fmt: skip
def test_a_recorded_turn_replays_with_its_finish_and_cache_counts(
    reason: str, finish: Finish
) -> None:
    usage = Usage(input_tokens=1200, output_tokens=16, cache_read_tokens=1024, cache_write_tokens=8)
    text = '{"people": ["Ada", "Gra'
    live = build_receipt(
        REQUEST, adapter=ADAPTER, text=text, finish_reason=reason, usage=usage, finish=finish
    )
    events = turn_events([Delta(text=text), Complete(receipt=live)])

    assert events[-2] == {
        "kind": "usage",
        "input_tokens": 1200,
        "output_tokens": 16,
        "cache_read_tokens": 1024,
        "cache_write_tokens": 8,
    }
    ending = {"kind": "finish", "finish_reason": reason}
    assert events[-1] == (ending if reason == finish else {**ending, "finish": finish})
    scenario = parse_scenario(
        {"api_version": "runport.mock/v1", "id": "recorded", "turns": [{"events": events}]}
    )
    replayed = ScriptedRuntime(scenario).execute(REQUEST)
    assert (replayed.finish_reason, replayed.finish, replayed.usage) == (reason, finish, usage)
    assert comparable(replayed) == comparable(live)


@pytest.mark.parametrize(
    ("reason", "finish", "code"),
    [("max_tokens", "length", "TQX_OUTPUT_TRUNCATED"),
     ("refusal", "content_filter", "TQX_OUTPUT_REFUSED"),
     ("pause_turn", "pause", "TQX_OUTPUT_TRUNCATED")],
)  # fmt: skip
def test_a_recorded_cut_or_refusal_replays_with_its_code(
    reason: str, finish: Finish, code: str
) -> None:
    contract = parse_contract(
        {
            "api_version": "runport/v1alpha1",
            "id": "tests.record",
            "version": "1.0.0",
            "messages": [{"role": "user", "content": "Name three people."}],
            "output_schema": {"type": "object"},
        }
    )
    live = build_receipt(
        REQUEST,
        adapter=ADAPTER,
        text='{"people": ["Ada", "Gra',
        finish_reason=reason,
        finish=finish,
    )
    events = turn_events([Delta(text='{"people": ["Ada", "Gra'), Complete(receipt=live)])
    recorded = parse_scenario(
        {"api_version": "runport.mock/v1", "id": "recorded", "turns": [{"events": events}] * 2}
    )
    envelope = execute_contract(contract, ScriptedRuntime(recorded), inputs={})
    assert [d.code for d in envelope.diagnostics] == [code]
    if finish == "pause":  # a run continues a paused turn; the replayed pause repeats, bounded
        with pytest.raises(RunError) as ended:
            run(contract, ScriptedRuntime(recorded), inputs={}, max_turns=2)
        assert ended.value.code == "TQX_RUN_TURNS_EXHAUSTED"
        return
    with pytest.raises(RunError) as failed:
        run(contract, ScriptedRuntime(recorded), inputs={})
    assert (failed.value.code, len(failed.value.partial.receipts)) == (code, 1)
