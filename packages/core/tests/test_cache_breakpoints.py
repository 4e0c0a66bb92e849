"""A node directly in a message's content may be a prompt-cache breakpoint: what the message
holds up to and including it is a part of its own, marked; it is in the compiled interaction,
and so in the request fingerprint, only when present (ADR 0051)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from runport.contracts import ImagePart, TextPart, fingerprint
from runport.core import ContractError, compile_contract, parse_contract

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode("ascii")


def _contract(*messages: dict[str, Any]) -> dict[str, Any]:
    return {
        "api_version": "runport/v1alpha1",
        "id": "cache.parts",
        "version": "1.0.0",
        "inputs": {
            "question": {"schema": {"type": "string"}},
            "photo": {"kind": "image"},
        },
        "messages": list(messages),
        "output_schema": {"type": "string"},
    }


def _text(value: str, **mark: Any) -> dict[str, Any]:
    return {"kind": "text", "value": value, **mark}


QUESTION = {"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.question"}}


def _compiled(*messages: dict[str, Any], **inputs: Any) -> Any:
    return compile_contract(parse_contract(_contract(*messages)), inputs=inputs)


def test_a_marked_node_ends_a_marked_part_and_the_text_after_it_is_a_part_of_its_own() -> None:
    [system, user] = _compiled(
        {
            "role": "system",
            "content": [
                _text("A long manual. "),
                _text("Its appendix.", cache=True, cache_ttl="1h"),
                _text(" Today is Monday."),
            ],
        },
        {"role": "user", "content": [{**QUESTION, "cache": True}]},
        question="Why?",
    ).messages
    assert system.content == [
        TextPart(text="A long manual. Its appendix.", cache=True, cache_ttl="1h"),
        TextPart(text=" Today is Monday."),
    ]
    assert system.cache is None
    assert user.content == [TextPart(text="Why?", cache=True)]


def test_an_image_node_marks_its_own_part() -> None:
    [message] = _compiled(
        {
            "role": "user",
            "content": [
                {"kind": "image", "source": {"kind": "ref", "path": "inputs.photo"}, "cache": True},
                QUESTION,
            ],
        },
        question="What is it?",
        photo={"media_type": "image/png", "data": PNG},
    ).messages
    image, question = message.content
    assert isinstance(image, ImagePart)
    assert (image.cache, image.sha256 is not None) == (True, True)
    assert question == TextPart(text="What is it?")


def test_a_mark_on_a_node_that_renders_nothing_marks_the_part_before_it_or_nothing() -> None:
    before = {"kind": "image", "source": {"kind": "ref", "path": "inputs.photo"}, "cache": True}
    [message] = _compiled(
        {"role": "user", "content": [_text("Context. "), before, QUESTION]},
        question="Q",
    ).messages
    assert message.content == [TextPart(text="Context. ", cache=True), TextPart(text="Q")]
    [first] = _compiled(
        {"role": "user", "content": [before, QUESTION]},
        question="Q",
    ).messages
    assert first.content == "Q"


def test_a_breakpoint_is_in_the_fingerprint_only_when_present() -> None:
    plain = _compiled({"role": "user", "content": [_text("a"), QUESTION]}, question="b")
    unset = _compiled(
        {"role": "user", "content": [_text("a", cache=False), QUESTION]}, question="b"
    )
    marked = _compiled(
        {"role": "user", "content": [_text("a", cache=True), QUESTION]}, question="b"
    )
    assert plain.messages[0].content == "ab"
    assert fingerprint(unset) == fingerprint(plain)
    assert fingerprint(marked) != fingerprint(plain)
    assert "cache" not in plain.messages[0].model_dump_json()


@pytest.mark.parametrize(
    ("content", "pointer", "reason"),
    [
        (
            [
                {
                    "kind": "when",
                    "condition": QUESTION["expression"],
                    "then": [_text("x", cache=True)],
                }
            ],
            "/messages/0/content/0/then/0/cache",
            "not inside when or for_each",
        ),
        (
            [
                {
                    "kind": "for_each",
                    "collection": {"kind": "literal", "value": [1]},
                    "item": "n",
                    "body": [_text("x", cache=True)],
                }
            ],
            "/messages/0/content/0/body/0/cache",
            "not inside when or for_each",
        ),
        ([_text("x", cache_ttl="5m")], "/messages/0/content/0", "cache_ttl needs cache"),
        ([_text("x", cache=True, cache_ttl="2h")], "/messages/0/content/0/cache_ttl", "'5m'"),
    ],
)
def test_a_breakpoint_out_of_place_or_malformed_is_refused_at_load(
    content: list[dict[str, Any]], pointer: str, reason: str
) -> None:
    with pytest.raises(ContractError) as refused:
        parse_contract(_contract({"role": "user", "content": content}))
    [problem] = refused.value.diagnostics
    assert problem.code == "TQX_CONTRACT_INVALID"
    assert problem.json_pointer == pointer
    assert reason in problem.message


def test_a_when_node_at_the_top_may_be_a_breakpoint() -> None:
    when = {"kind": "when", "condition": QUESTION["expression"], "then": [QUESTION], "cache": True}
    [message] = _compiled({"role": "user", "content": [when, _text("!")]}, question="Hi").messages
    assert message.content == [TextPart(text="Hi", cache=True), TextPart(text="!")]
