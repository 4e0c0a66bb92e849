"""Partial output over the answers of Anthropic's forced tool as the adapter streams them: each
``input_json_delta`` fragment with the whitespace outside strings dropped by ``SpaceStripper``
(ADR 0025), cut anywhere — inside strings, escapes and numbers (ADR 0034)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runport.anthropic._answer import SpaceStripper, compact
from runport.conformance.json_texts import cuts, written
from runport.core import PartialOutput, parse_json_text


@given(st.data())
def test_the_stripped_fragments_fill_in_to_the_receipts_output(data: st.DataObject) -> None:
    answer = data.draw(written())
    stripper = SpaceStripper()
    deltas = [stripper.strip(fragment) for fragment in data.draw(cuts(answer.text))]
    deltas = [delta for delta in deltas if delta]  # an all-space fragment is no Delta
    assert "".join(deltas) == compact(answer.text)
    ok, output = parse_json_text("".join(deltas))
    assert ok

    partial = PartialOutput({"type": "object"})
    shown = [s for s in map(partial.feed, deltas) if s is not None]
    last = partial.close()
    if last is not None:  # a lone number ends with the text
        shown.append(last)
    assert partial.error is None
    assert shown[-1].value == output == answer.value
    assert shown[-1].completed[-1] == ""
    # the same values as the spaced text shows, in the same order
    spaced = PartialOutput({"type": "object"})
    expected = [s.value for s in map(spaced.feed, answer.text) if s is not None]
    tail = spaced.close()
    expected += [tail.value] if tail is not None else []
    values = [s.value for s in shown]
    position = 0
    for value in values:
        while expected[position] != value:
            position += 1
        position += 1
