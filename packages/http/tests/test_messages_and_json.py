"""What may reach a message, what a hint may be, and JSON bounds both ways."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import MAX_JSON_DEPTH, ErrorCode
from runport.http import (
    MAX_RETRY_AFTER_MS,
    PROVIDER_TEXT_LIMIT,
    check_json_text,
    encode_json,
    joined_turns,
    provider_text,
    retry_after_ms,
)
from runport.ports import PortError


@settings(deadline=None)
@given(st.text(max_size=3000))
def test_provider_text_is_bounded_and_printable(text: str) -> None:
    cleaned = provider_text(text)
    if cleaned is not None:
        assert len(cleaned) <= PROVIDER_TEXT_LIMIT
        assert all(ch.isprintable() for ch in cleaned)


@pytest.mark.parametrize(
    "key",
    ["sk-proj-AbC123dEf456", "Bearer abc.def.ghi", "AIzaSyA1234567890abcdefghij", "ghp-abcd1234"],
)
def test_key_shaped_strings_are_redacted(key: str) -> None:
    cleaned = provider_text(f"Incorrect API key provided: {key}.")
    assert cleaned is not None
    assert key not in cleaned
    assert "[redacted]" in cleaned


def test_the_adapters_own_secret_is_removed_whatever_its_shape() -> None:
    assert provider_text("the key plain is wrong", secrets=("plain",)) == (
        "the key [redacted] is wrong"
    )


def test_only_strings_are_provider_text() -> None:
    assert provider_text({"message": "x"}) is None
    assert provider_text(5) is None


@settings(deadline=None)
@given(st.one_of(st.text(max_size=60), st.floats().map(repr), st.integers().map(str)))
def test_any_retry_after_is_none_or_a_bounded_int(value: str) -> None:
    for name in ("retry-after", "retry-after-ms"):
        try:
            headers = httpx.Headers({name: value})
        except (UnicodeEncodeError, ValueError):
            continue
        hint = retry_after_ms(headers)
        assert hint is None or (type(hint) is int and 0 <= hint <= MAX_RETRY_AFTER_MS)


def test_retry_after_ms_is_preferred_and_dates_in_the_past_mean_now() -> None:
    headers = httpx.Headers({"retry-after-ms": "1500.2", "retry-after": "9"})
    assert retry_after_ms(headers) == 1501
    assert retry_after_ms(httpx.Headers({"retry-after": "Mon, 01 Jan 2001 00:00:00 GMT"})) == 0


def test_json_nested_past_the_bound_is_a_coded_failure() -> None:
    check_json_text("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, "the answer")
    with pytest.raises(PortError) as raised:
        check_json_text("[" * 1000 + "]" * 1000, "the answer")
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in raised.value.message


def test_brackets_inside_strings_do_not_count() -> None:
    check_json_text('{"a": "' + "[" * 5000 + '\\"' + "{" * 100 + '"}', "the answer")


def test_an_integer_past_pythons_limit_is_a_coded_failure() -> None:
    check_json_text('{"n": 1.' + "5" * 5000 + "}", "the answer")  # a long fraction is a float
    with pytest.raises(PortError) as raised:
        check_json_text('{"n": ' + "7" * 4301 + "}", "tool call 0's arguments")
    assert raised.value.message == (
        "tool call 0's arguments: the JSON holds an integer with more than 4300 digits"
    )


def test_a_lone_surrogate_in_a_request_says_so() -> None:
    with pytest.raises(PortError) as raised:
        encode_json({"content": "bad \ud800 text"})
    assert raised.value.code == ErrorCode.DATA_INVALID
    assert "not valid Unicode" in raised.value.message
    with pytest.raises(PortError) as number:
        encode_json({"temperature": float("nan")})
    assert "number JSON cannot carry" in number.value.message


def test_turns_of_one_role_in_a_row_are_joined_and_empty_ones_left_out() -> None:
    turns = [
        ("user", [{"text": "hi"}]),
        ("assistant", [{"call": 1}]),
        ("user", [{"result": 1}]),
        ("user", []),
        ("user", [{"result": 2}]),
        ("assistant", []),
        ("assistant", [{"text": "done"}]),
    ]
    assert joined_turns(iter(turns), "parts") == [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "assistant", "parts": [{"call": 1}]},
        {"role": "user", "parts": [{"result": 1}, {"result": 2}]},
        {"role": "assistant", "parts": [{"text": "done"}]},
    ]
    assert joined_turns([("user", [])]) == []
