"""A structured answer given through the forced tool reads the same streamed and whole
(docs/streaming-law.md, law 2; ADR 0025): the stream's fragments carry the model's spacing, the
message body the server's, and both lose exactly the whitespace outside strings — numbers and
escapes stay as written."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.anthropic import ANSWER_TOOL, AnthropicMessagesAdapter
from runport.anthropic._answer import SpaceStripper, compact, raw_member
from runport.conformance.loopback import Playback, json_reply, rechunk, stream_reply
from runport.conformance.providers import make_request, run_streamed

from .anthropic_wire import ToolUse, Turn, message_body, stream_events

SCHEMA: dict[str, Any] = {"type": "object"}
_STRINGS = re.compile(r'("(?:[^"\\]|\\.)*")')
_SPACES = re.compile(r"[ \t\n\r]+")
SCALARS = [
    '"caf\\u00e9"',
    '"café"',
    '"a b  c"',
    '"\\/\\\\"',
    '"x\\"y"',
    '"line\\nnext"',
    '"\\ud83d\\ude00"',
    '" "',
    '""',
    "1.50",
    "-0",
    "1e5",
    "2E-3",
    "42",
    "true",
    "null",
]
SPACES = ["", " ", "  ", "\n", "\n  ", "\t", "\r\n"]


@st.composite
def _json_text(draw: st.DrawFn, depth: int = 0) -> str:
    """A JSON text written token by token with random whitespace between the tokens."""
    kind = draw(st.sampled_from(["scalar", "array", "object"] if depth < 3 else ["scalar"]))
    if depth == 0:
        kind = "object"
    if kind == "scalar":
        return draw(st.sampled_from(SCALARS))
    space = st.sampled_from(SPACES)
    count = draw(st.integers(0, 3))
    if kind == "array":
        items = [draw(space) + draw(_json_text(depth + 1)) + draw(space) for _ in range(count)]
        return "[" + ",".join(items) + draw(space) + "]"
    members = [
        f'{draw(space)}"k {index}"{draw(space)}:{draw(space)}{draw(_json_text(depth + 1))}'
        + draw(space)
        for index in range(count)
    ]
    return "{" + ",".join(members) + draw(space) + "}"


def _reference(text: str) -> str:
    """A whole JSON text's whitespace outside strings dropped: split around the string
    literals, squeeze the rest."""
    parts = _STRINGS.split(text)
    return "".join(part if odd % 2 else _SPACES.sub("", part) for odd, part in enumerate(parts))


def _pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({cut for cut in cuts if 0 < cut < len(text)})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


@settings(deadline=None)
@given(text=_json_text(), cuts=st.lists(st.integers(0, 200), max_size=12))
def test_stripping_fragments_is_stripping_the_whole(text: str, cuts: list[int]) -> None:
    stripper = SpaceStripper()
    streamed = "".join(stripper.strip(piece) for piece in _pieces(text, cuts))
    assert streamed == compact(text) == _reference(text)
    assert json.loads(streamed) == json.loads(text)


def _body(turn: Turn, answer: str, *, indent: int | None) -> bytes:
    """The message body with the answer's tokens spliced in as the server wrote them."""
    body = message_body(turn)
    body["content"][0]["input"] = "RUNPORT-ANSWER"
    data = json.dumps(body, ensure_ascii=False, indent=indent)
    return data.replace('"RUNPORT-ANSWER"', answer).encode()


@settings(deadline=None)
@given(
    text=_json_text(),
    cuts=st.lists(st.integers(0, 200), max_size=8),
    wire_cuts=st.lists(st.integers(0, 4000), max_size=6),
    indent=st.sampled_from([None, 2]),
)
def test_a_forced_tool_answer_is_the_same_text_streamed_and_whole(
    playback: Playback, text: str, cuts: list[int], wire_cuts: list[int], indent: int | None
) -> None:
    turn = Turn([ToolUse("toolu_1", ANSWER_TOOL, _pieces(text, cuts))], stop_reason="tool_use")
    request = make_request(SCHEMA)
    with httpx.Client() as http:
        adapter = AnthropicMessagesAdapter(
            base_url=playback.base_url, model="claude-test", api_key="sk-test", http_client=http
        )
        playback.answer = stream_reply(rechunk(b"".join(stream_events(turn)), wire_cuts))
        outcome = run_streamed(adapter, request)
        playback.answer = json_reply(_body(turn, _reference(text), indent=indent))
        whole = adapter.execute(request)
    assert outcome.receipt == whole
    assert whole.text == _reference(text)
    assert outcome.text == whole.text
    assert whole.output == json.loads(text)


def test_raw_member_finds_the_last_of_repeated_keys_and_refuses_other_shapes() -> None:
    body = '{"content" : [ {"input":1}, {"a":[1,{"input":2}], "input" : {"x" : 1.50} ,"input":3}]}'
    assert raw_member(body, 1, "input") == "3"
    assert raw_member(body, 0, "input") == "1"
    assert raw_member(body, 2, "input") is None
    assert raw_member('{"content": {}}', 0, "input") is None
    assert raw_member('{"content": [{}]}', 0, "input") is None
    assert raw_member('{"content": [{"input": {"x" : 1.50}}]}', 0, "input") == '{"x" : 1.50}'
