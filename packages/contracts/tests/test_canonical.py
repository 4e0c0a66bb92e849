from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import AdapterDescriptor, ErrorCode, canonical_json, fingerprint


def test_the_spec_test_vector() -> None:
    assert canonical_json({"b": 2, "a": 1}) == b'{"a":1,"b":2}'
    assert (
        fingerprint({"a": 1, "b": 2})
        == "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777"
    )


def test_floats_and_non_ascii_keep_their_form() -> None:
    assert canonical_json({"x": 1.0, "y": "é€"}) == '{"x":1.0,"y":"é€"}'.encode()
    assert canonical_json(1e16) == b"1e+16"
    assert canonical_json({"é": 1, "z": 2, "Z": 3}) == '{"Z":3,"z":2,"é":1}'.encode()


def test_models_are_fingerprinted_by_their_json_form() -> None:
    descriptor = AdapterDescriptor(id="a", version="1")
    assert fingerprint(descriptor) == fingerprint(descriptor.model_dump(mode="json"))
    assert fingerprint({"d": descriptor}) == fingerprint({"d": descriptor.model_dump(mode="json")})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {"x": object()}])
def test_non_json_values_are_refused(bad: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        canonical_json(bad)


def _reference(value: Any) -> bytes:
    """An independent encoder: the spec's rules written out by hand."""
    if isinstance(value, dict):
        items = sorted(value.items())
        return b"{" + b",".join(_reference(k) + b":" + _reference(v) for k, v in items) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(_reference(v) for v in value) + b"]"
    if isinstance(value, str):
        out = ['"']
        for ch in value:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ch in "\n\r\t\b\f":
                out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}[ch])
            elif ord(ch) < 0x20:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        out.append('"')
        return "".join(out).encode("utf-8")
    if value is None:
        return b"null"
    if value is True:
        return b"true"
    if value is False:
        return b"false"
    return repr(value).replace("inf", "Infinity").encode()


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(deadline=None)
@given(_json)
def test_canonical_json_equals_the_reference_encoding(value: Any) -> None:
    encoded = canonical_json(value)
    assert encoded == _reference(value)
    assert json.loads(encoded) == value
    assert fingerprint(value) == hashlib.sha256(encoded).hexdigest()


def test_retryable_codes_are_exactly_the_spec_table() -> None:
    assert {c for c in ErrorCode if c.retryable} == {
        ErrorCode.RUNTIME_TIMEOUT,
        ErrorCode.RUNTIME_RATE_LIMITED,
        ErrorCode.RUNTIME_UNAVAILABLE,
        ErrorCode.RUNTIME_STREAM_TRUNCATED,
    }


_long_text = st.lists(
    st.sampled_from(["a", "é", "€", "😀", '"', "\\", "\n", "\x00", "\x1f", "plain text "]),
    min_size=1,
    max_size=40,
).map(lambda parts: "".join(parts) * (70_000 // len("".join(parts)) + 1))


@settings(deadline=None, max_examples=settings.default.max_examples // 2)
@given(_long_text)
def test_long_strings_fingerprint_as_their_whole_encoding(text: str) -> None:
    assert len(text) > 1 << 16  # takes the sliced path
    assert fingerprint(text) == hashlib.sha256(canonical_json(text)).hexdigest()


def test_every_code_has_a_one_sentence_meaning() -> None:
    for code in ErrorCode:
        meaning = code.meaning
        assert meaning.endswith("."), code
        assert meaning[0].isupper(), code
        assert "\n" not in meaning, code
