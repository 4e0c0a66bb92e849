"""Partial output (ADR 0034): the snapshots of a structured answer as its text streams, over every
prefix of many generated answers and every way of cutting them."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from runport.conformance.json_texts import Written, checked_answers, cuts, written
from runport.contracts import OutputSnapshot
from runport.core import PartialJSON, PartialOutput, parse_json_text, validate_output

_NOTHING: Any = object()


def same(left: Any, right: Any) -> bool:
    """Equal as JSON data, types included (``1`` is not ``1.0`` nor ``True``), keys in order."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return list(left) == list(right) and all(same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same, left, right))
    if isinstance(left, float):
        return repr(left) == repr(right)
    return bool(left == right)


def extends(early: Any, late: Any) -> bool:
    """``late`` keeps everything ``early`` shows: strings may have grown, containers gained
    members (and their last member grown); every other value is the same."""
    if type(early) is not type(late):
        return False
    if isinstance(early, str):
        return late.startswith(early)
    if isinstance(early, list):
        return len(early) <= len(late) and all(map(extends, early, late))
    if isinstance(early, dict):
        return list(early) == list(late)[: len(early)] and all(
            extends(early[k], late[k]) for k in early
        )
    return same(early, late)


def at(value: Any, pointer: str) -> Any:
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def pointers(value: Any, prefix: str = "") -> list[str]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            escaped = key.replace("~", "~0").replace("/", "~1")
            found += pointers(item, f"{prefix}/{escaped}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += pointers(item, f"{prefix}/{index}")
    return found


def unicode(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def play(pieces: list[str], *, read_now: bool = False) -> list[tuple[int, OutputSnapshot]]:
    """Feed ``pieces`` and then close: ``(characters fed, snapshot)`` for every snapshot.
    Unless ``read_now``, no value is read until everything was fed."""
    output = PartialOutput({})
    shown: list[tuple[int, OutputSnapshot]] = []
    fed = 0
    for piece in pieces:
        fed += len(piece)
        snapshot = output.feed(piece)
        if snapshot is not None:
            if read_now:
                _ = snapshot.value
            shown.append((fed, snapshot))
    snapshot = output.close()
    if snapshot is not None:
        shown.append((fed, snapshot))
    assert output.error is None
    assert output.done
    return shown


@given(written())
def test_every_prefix_shows_what_it_determines(answer: Written) -> None:
    shown = play(list(answer.text))  # one character at a time: every prefix
    assert shown
    final = answer.value
    assert same(shown[-1][1].value, final)
    assert shown[-1][1].completed[-1] == ""
    previous: Any = _NOTHING
    closed: list[str] = []
    for _, snapshot in shown:
        value = snapshot.value
        assert unicode(value)  # no lone surrogate, however the escapes were cut
        if previous is not _NOTHING and not answer.repeats_keys:
            # only a change or a closed subtree makes a snapshot
            assert snapshot.completed or not same(previous, value)
            assert extends(previous, value)  # monotone: nothing shown disappears
        if not answer.repeats_keys:
            assert extends(value, final)  # nothing shown contradicts the receipt
            for pointer in snapshot.completed:
                assert same(at(value, pointer), at(final, pointer))  # closed means final
        closed += snapshot.completed
        previous = value
    if not answer.repeats_keys:
        assert sorted(closed) == sorted(pointers(final))  # every subtree closes, once


@settings(max_examples=settings.default.max_examples // 2)
@given(st.data())
def test_a_snapshot_depends_on_the_text_so_far_not_on_how_it_was_cut(data: st.DataObject) -> None:
    answer = data.draw(written())
    one_by_one = play(list(answer.text))
    pieces = data.draw(cuts(answer.text))
    in_pieces = play(pieces, read_now=data.draw(st.booleans()))
    by_end = dict(in_pieces)
    start = 0
    for piece in pieces:
        end = start + len(piece)
        within = [s for fed, s in one_by_one if start < fed <= end]
        if end == len(answer.text):
            within += [s for fed, s in one_by_one if fed == end and s not in within]
        if within:
            snapshot = by_end[end]
            assert same(snapshot.value, within[-1].value)
            assert (
                snapshot.completed
                == [p for s in within for p in s.completed][: len(snapshot.completed)]
            )
        else:
            assert end not in by_end
        start = end


@given(written())
def test_earlier_snapshots_never_change_as_parsing_continues(answer: Written) -> None:
    output = PartialOutput({})
    seen: list[tuple[OutputSnapshot, str]] = []
    for char in answer.text:
        snapshot = output.feed(char)
        if snapshot is not None:
            seen.append((snapshot, json.dumps(snapshot.value)))
    output.close()
    for snapshot, then in seen:
        assert json.dumps(snapshot.value) == then


def test_closed_subtrees_are_shared_between_snapshots_not_copied() -> None:
    output = PartialOutput({})
    first = output.feed('{"done": {"a": [1, 2]}, "open": "x')
    second = output.feed("yz")
    assert first is not None
    assert second is not None
    assert first.value == {"done": {"a": [1, 2]}, "open": "x"}
    assert second.value == {"done": {"a": [1, 2]}, "open": "xyz"}
    assert first.value["done"] is second.value["done"]
    assert first.value is not second.value


def test_the_snapshot_of_a_finished_answer_is_its_parsed_value() -> None:
    output = PartialOutput({})
    shown = [s for s in map(output.feed, ['{"a":', " [1, 2]", "}"]) if s is not None]
    assert [s.completed for s in shown] == [[], ["/a/0", "/a/1", "/a"], [""]]
    snapshot = shown[-1]
    assert snapshot.value == {"a": [1, 2]}
    assert output.feed("  \n") is None  # whitespace after the value changes nothing
    assert output.done


# ---- values as they appear -------------------------------------------------------------------


def values_after(pieces: list[str]) -> list[Any]:
    output = PartialJSON()
    shown = []
    for piece in pieces:
        if output.feed(piece):
            shown.append(output.value)
    if output.close():
        shown.append(output.value)
    return shown


def test_numbers_and_words_appear_once_delimited() -> None:
    assert values_after(["[1", "2", "3", ","]) == [[], [123]]
    assert values_after(["[tr", "ue", "]"]) == [[], [True]]
    assert values_after(['{"n": -1.5e', "+3", "}"]) == [{}, {"n": -1500.0}]
    assert values_after(["-12", "e2"]) == [-1200.0]  # a top-level number ends with the text
    assert values_after(["null", " "]) == [None]


def test_containers_appear_when_they_open() -> None:
    assert values_after(["[", "{", "}", ",", "[", "]", "]"]) == [
        [],
        [{}],
        [{}],
        [{}, []],
        [{}, []],
        [{}, []],
    ]
    assert values_after(['{"a"', ":", " ", '{"b"', ":", "["]) == [{}, {"a": {}}, {"a": {"b": []}}]


def test_a_key_appears_with_its_value_not_before() -> None:
    assert values_after(['{"ke', 'y"', ": ", "4", "}"]) == [{}, {"key": 4}]
    assert values_after(['{"key": "', "v"]) == [{}, {"key": ""}, {"key": "v"}][1:]


def test_a_cut_escape_is_held_back_until_whole() -> None:
    text = '"a\\u00e9\\n\\ud83d\\ude00b"'
    for cut in range(1, len(text)):
        shown = values_after([text[:cut], text[cut:]])
        assert shown[-1] == "aé\n😀b"
        assert all(unicode(value) and "aé\n😀b".startswith(value) for value in shown)
    shown = values_after(list(text))
    assert shown == ["", "a", "aé", "aé\n", "aé\n😀", "aé\n😀b", "aé\n😀b"]


def test_every_escape_and_surrogate_pair_split_at_every_position() -> None:
    escapes = '\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u001F\\uFFFF\\uD834\\uDD1E\\ud83d\\ude00'
    text = '["' + escapes + '"]'
    expected = json.loads(text)
    for first in range(1, len(text)):
        for second in range(first + 1, len(text) + 1, 3):
            shown = values_after([text[:first], text[first:second], text[second:]])
            assert shown[-1] == expected
            assert all(unicode(value) and expected[0].startswith(*value or [""]) for value in shown)


def test_a_key_written_twice_ends_with_the_later_value_in_the_first_place() -> None:
    """As the receipt's output does (Python's json: the last value, the first key's position)."""
    text = '{"a": {"x": 1}, "b": 0, "a": ["y"]}'
    output = PartialOutput({})
    shown = [s for s in (output.feed(c) for c in text) if s is not None]
    assert list(shown[-1].value) == ["a", "b"]
    assert shown[-1].value == json.loads(text) == {"a": ["y"], "b": 0}
    closed = [p for s in shown for p in s.completed]
    assert closed.count("/a") == 2  # closed again: a UI that holds it final learns it changed
    before = next(s for s in shown if s.value.get("a") == [])  # the later value, as it starts
    assert before.value == {"a": [], "b": 0}


# ---- bad input -------------------------------------------------------------------------------


def test_text_that_is_not_json_shows_nothing() -> None:
    for text in ("hello", "NaN", "Infinity", "-Infinity", "\ufeff{}", "+1", ".5", "'a'", "\x00"):
        output = PartialOutput({})
        assert [output.feed(c) for c in text] == [None] * len(text), text
        assert output.error is not None
        assert output.error.code == "TQX_OUTPUT_SCHEMA"
        assert output.close() is None


@given(st.data())
def test_json_that_turns_invalid_half_way_stops_the_snapshots(data: st.DataObject) -> None:
    answer = data.draw(written())
    cut = data.draw(st.integers(0, len(answer.text)))
    garbage = data.draw(st.sampled_from(["}", "]", ",", ":", "x", "'", "\x01", "\ud800"]))
    text = answer.text[:cut] + garbage + answer.text[cut:]
    assume(not parse_json_text(text)[0])  # the character may fit ("," in a string, "}" ...)
    one_by_one = PartialOutput({})
    before = [s for s in map(one_by_one.feed, text) if s is not None]
    one_by_one.close()
    assert one_by_one.error is not None
    stopped = one_by_one.error.offset
    output = PartialOutput({})
    pieces = data.draw(cuts(text))
    shown = []
    fed = 0
    for piece in pieces:
        snapshot = output.feed(piece)
        if snapshot is not None:
            shown.append(snapshot)
            assert fed <= stopped  # nothing from a piece after the character that stopped it
        fed += len(piece)
    assert output.close() is None
    assert output.error is not None
    assert output.error.offset == stopped  # the same character, however the text was cut
    assert not output.done
    if shown:
        assert any(same(shown[-1].value, s.value) for s in before)


def test_a_number_cut_by_the_end_of_the_stream() -> None:
    for text, value in (("12", 12), ("-0", 0), ("1.5E3", 1500.0), ("true", True)):
        output = PartialOutput({})
        assert output.feed(text) is None
        snapshot = output.close()
        assert snapshot is not None
        assert same(snapshot.value, value)
        assert snapshot.completed == [""]
    for text in ("-", "1.", "1e", "1e+", "tru", '{"a": 12', "[1", '"open'):
        output = PartialOutput({})
        for char in text:
            output.feed(char)
        assert output.close() is None
        assert output.error is not None
        assert output.error.code == "TQX_OUTPUT_SCHEMA"
        assert "ended" in output.error.message or "number" in output.error.message


def test_nesting_past_the_bound_is_a_coded_failure_never_a_recursion_error() -> None:
    from runport.contracts import MAX_JSON_DEPTH

    for text in ("[" * 10_000, '{"a":' * 10_000, "[" * MAX_JSON_DEPTH + "[]"):
        output = PartialOutput({"type": "array"})
        shown = [s for s in (output.feed(text[i : i + 7]) for i in range(0, len(text), 7)) if s]
        assert output.error is not None
        assert output.error.code == "TQX_RUNTIME_INVALID_RESPONSE"
        assert output.error.offset == MAX_JSON_DEPTH * (len(text) // 10_000 if "{" in text else 1)
        assert shown  # what came before the bound was shown
    deepest = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert values_after([deepest])[-1] == json.loads(deepest)


def test_integers_are_bounded_like_the_receipts() -> None:
    from runport.contracts import MAX_INT_DIGITS

    assert values_after(["[" + "9" * MAX_INT_DIGITS, "]"])[-1] == [int("9" * MAX_INT_DIGITS)]
    assert values_after(["-" + "9" * MAX_INT_DIGITS])[-1] == -int("9" * MAX_INT_DIGITS)
    for text in ("[" + "9" * (MAX_INT_DIGITS + 1) + "]", "[1e309]", "-1E400"):
        output = PartialJSON()
        output.feed(text)
        output.close()
        assert output.error is not None
        assert output.error.code == "TQX_RUNTIME_INVALID_RESPONSE"
    assert values_after(["[1e-400]"])[-1] == [0.0]  # underflow is a number, as for json


def test_a_string_of_100_mb_streams_in_linear_time() -> None:
    block = "ab\\n" * (1 << 18)  # 1 MiB of text, 768 KiB of string
    output = PartialOutput({"type": "object"})
    first = output.feed('{"text": "')
    snapshots = [output.feed(block) for _ in range(100)]
    last = output.feed('"}')
    assert first is not None
    assert last is not None
    assert all(snapshot is not None for snapshot in snapshots)
    assert snapshots[0] is not None
    assert len(snapshots[0].value["text"]) == 3 << 18
    assert len(last.value["text"]) == 100 * (3 << 18)
    assert last.value["text"][-3:] == "ab\n"
    assert first.value == {"text": ""}


def test_whitespace_everywhere_and_empty_containers() -> None:
    text = ' \n{ \t"a" \r: [ ] ,\n"b":{ } , "c" : [ { } , [ ] ] } \n'
    assert values_after(list(text))[-1] == {"a": [], "b": {}, "c": [{}, []]}


def test_math_stays_exact() -> None:
    shown = values_after(["[0.1, -0, -0.0, 1E2, 2e-2, 123456789012345678901234567890]"])
    assert shown[-1] == [0.1, 0, -0.0, 100.0, 0.02, 123456789012345678901234567890]
    assert math.copysign(1, shown[-1][2]) == -1


# ---- early checks against the schema ---------------------------------------------------------


@settings(max_examples=settings.default.max_examples * 2)
@given(st.data())
def test_a_closed_subtree_that_fails_is_reported_early_and_the_receipt_agrees(
    data: st.DataObject,
) -> None:
    schema, answer = data.draw(checked_answers())
    output = PartialOutput(schema)
    reported: list[tuple[str | None, str]] = []
    closed: list[str] = []
    pieces = data.draw(cuts(answer.text))
    for snapshot in [*map(output.feed, pieces), output.close()]:
        if snapshot is not None:
            closed += snapshot.completed
            for problem in snapshot.problems:
                assert problem.code == "TQX_OUTPUT_SCHEMA"
                assert problem.severity == "error"
                # the problem lies in a subtree that closed by now
                assert any((problem.json_pointer or "").startswith(pointer) for pointer in closed)
                reported.append((problem.json_pointer, problem.message))
    receipt = {(d.json_pointer, d.message) for d in validate_output(schema, answer.value)}
    assert len(set(reported)) == len(reported)  # each once
    if not answer.repeats_keys:  # a replaced member's problem is no longer the receipt's
        assert set(reported) <= receipt  # never a problem the receipt does not have
    if not receipt:
        assert not reported or answer.repeats_keys
    else:
        assert reported  # the root is checked as it closes, whatever the keywords below it


def test_problems_come_with_the_snapshot_of_the_subtree_that_closed() -> None:
    schema = {
        "type": "object",
        "required": ["items", "total"],
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
            "total": {"type": "integer"},
        },
        "$defs": {
            "item": {
                "type": "object",
                "required": ["name"],
                "additionalProperties": False,
                "properties": {"name": {"type": "string", "maxLength": 3}},
            }
        },
    }
    output = PartialOutput(schema)
    text = '{"items": [{"name": "long name"}, {"nam": "x"}], "total": 2.5}'
    problems = []
    for end in range(1, len(text) + 1):
        snapshot = output.feed(text[end - 1])
        for problem in snapshot.problems if snapshot else []:
            problems.append((text[:end], problem.json_pointer, problem.message))
    assert problems == [
        ('{"items": [{"name": "long name"', "/items/0/name", "'long name' is too long"),
        (
            '{"items": [{"name": "long name"}, {"nam": "x"}',
            "/items/1",
            "'name' is a required property",
        ),
        (
            '{"items": [{"name": "long name"}, {"nam": "x"}',
            "/items/1",
            "Additional properties are not allowed ('nam' was unexpected)",
        ),
        (text, "/total", "2.5 is not of type 'integer'"),
    ]
    assert {(p, m) for _, p, m in problems} == {
        (d.json_pointer, d.message) for d in validate_output(schema, json.loads(text))
    }


# ---- a snapshot is an OutputSnapshot -----------------------------------------------------------


def test_a_snapshot_is_an_output_snapshot_in_every_way_a_caller_can_look() -> None:
    import copy
    import pickle

    from pydantic import TypeAdapter

    from runport.contracts import RunEvent

    output = PartialOutput({})
    output.feed('{"a": [1, {"b": "c')
    early = output.feed("d")
    output.feed('"}], "e": 2}')
    assert early is not None
    plain = OutputSnapshot(value={"a": [1, {"b": "cd"}]})
    assert isinstance(early, OutputSnapshot)
    assert early == plain
    assert plain == early
    assert early != OutputSnapshot(value={"a": [1]})
    assert repr(early) == repr(plain)
    assert early.model_dump() == plain.model_dump()
    assert early.model_dump_json() == plain.model_dump_json()
    assert TypeAdapter(RunEvent).dump_json(early) == TypeAdapter(RunEvent).dump_json(plain)
    assert type(pickle.loads(pickle.dumps(early))) is OutputSnapshot
    assert pickle.loads(pickle.dumps(early)) == plain
    assert copy.deepcopy(early) == plain
    assert early.model_copy(update={"completed": ["/x"]}).completed == ["/x"]
    assert early.model_fields_set == plain.model_fields_set | {"kind", "completed", "problems"}
    assert early.model_dump(exclude_unset=True) == plain.model_dump()
    assert copy.copy(early) == plain
    match early:
        case OutputSnapshot(value={"a": [1, {"b": text}]}):
            assert text == "cd"
        case _:
            raise AssertionError(early)


def test_each_way_of_reading_builds_the_value_from_the_same_moment() -> None:
    from pydantic import TypeAdapter

    from runport.contracts import RunEvent

    for read in (
        lambda s: s.value,
        lambda s: s.model_dump()["value"],
        lambda s: json.loads(TypeAdapter(RunEvent).dump_json(s))["value"],
        lambda s: json.loads(s.model_dump_json())["value"],
    ):
        output = PartialOutput({})
        snapshot = output.feed('["ab')
        output.feed('c", "d"]')
        assert snapshot is not None
        assert read(snapshot) == ["ab"]


# ---- a snapshot read as it comes, kept or let go (ADR 0058) -------------------------------------


@settings(max_examples=settings.default.max_examples // 2, deadline=None)
@given(st.data())
def test_a_snapshot_equals_one_built_eagerly_at_its_moment_however_it_is_read(
    data: st.DataObject,
) -> None:
    """Every snapshot equals the plain ``OutputSnapshot`` built from the text so far at its
    moment — whether the consumer reads each one and lets it go (its containers are then
    reused for the next), reads some, keeps them all, or keeps one value and not its
    snapshot — and a value once read never changes afterwards."""
    answer = data.draw(written())
    pieces = data.draw(cuts(answer.text))
    keep = data.draw(st.sampled_from(["nothing", "snapshots", "values", "some"]))
    output = PartialOutput({})
    kept: list[tuple[Any, str]] = []
    for piece in [*pieces, None]:
        snapshot = output.feed(piece) if piece is not None else output.close()
        if snapshot is None:
            continue
        eager = OutputSnapshot.model_construct(
            value=json.loads(json.dumps(output.value)),
            completed=list(snapshot.completed),
            problems=list(snapshot.problems),
        )
        if keep == "some" and not data.draw(st.booleans()):
            del snapshot
            continue
        assert snapshot == eager
        assert same(snapshot.value, eager.value)
        assert snapshot.model_dump_json() == eager.model_dump_json()
        if keep == "snapshots":
            kept.append((snapshot, snapshot.model_dump_json()))
        elif keep == "values":
            kept.append((snapshot.value, json.dumps(snapshot.value)))
        del snapshot, eager  # let go before the next piece: its containers may be reused
    for held, then in kept:
        now = held.model_dump_json() if isinstance(held, OutputSnapshot) else json.dumps(held)
        assert now == then


def test_reading_kind_builds_nothing() -> None:
    output = PartialOutput({})
    snapshot = output.feed('{"a": ["b", "c')
    assert snapshot is not None
    assert snapshot.kind == "OutputSnapshot"
    output.feed('d"]}')
    assert snapshot.value == {"a": ["b", "c"]}  # built now, as it was when it was made


def test_a_long_open_string_is_not_kept_by_the_builder() -> None:
    """A consumer reading each value of one long string leaves the reader's string its own,
    so the reader keeps growing it in place (the builder keeps none of it)."""
    output = PartialOutput({"type": "object"})
    output.feed('{"a": [1, 2], "text": "')
    size = 100
    for _ in range(50):
        snapshot = output.feed("x" * size)  # a new piece each time, not a constant
        assert snapshot is not None
        text = snapshot.value["text"]
        del snapshot
        assert sys.getrefcount(text) == 3  # the reader's, this local's and the argument's
        del text


def _down(value: Any, levels: int) -> Any:
    """The container ``levels`` steps down ``value``'s chain of last members (as deep as it
    goes): where the containers still open are."""
    for _ in range(levels):
        members = list(value.values()) if isinstance(value, dict) else value
        if not isinstance(value, dict | list) or not members:
            break
        if not isinstance(members[-1], dict | list):
            break
        value = members[-1]
    return value


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_a_value_read_as_it_comes_equals_a_fresh_parse_of_its_prefix(data: st.DataObject) -> None:
    """Each value read as its snapshot comes and then let go (so the next one grows the same
    containers) equals what a fresh reader makes of the whole text so far fed at once; and a
    container the consumer keeps — the whole value or one inside it, at any depth — never
    changes afterwards (the next value is built afresh from there down)."""
    answer = data.draw(written())
    pieces = data.draw(cuts(answer.text))
    keep_every = data.draw(st.integers(0, 4))  # keep something from every nth snapshot; 0: none
    levels = data.draw(st.integers(0, 4))
    output = PartialOutput({})
    prefix = ""
    kept: list[tuple[Any, str]] = []
    for index, piece in enumerate([*pieces, None]):
        if piece is None:
            snapshot = output.close()
        else:
            prefix += piece
            snapshot = output.feed(piece)
        if snapshot is None:
            continue
        fresh = PartialOutput({})
        fresh.feed(prefix)
        if piece is None:
            fresh.close()
        value = snapshot.value
        assert same(value, fresh.value)
        if keep_every and index % keep_every == 0:
            kept.append((_down(value, levels), json.dumps(_down(value, levels))))
        del snapshot, value  # let go before the next piece
    for held, then in kept:
        assert json.dumps(held) == then
