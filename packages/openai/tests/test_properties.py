"""Properties over generated turns (docs/streaming-law.md laws 1–4): however the upstream fragments
text and
tool-call arguments, interleaves parallel calls, or the network splits the bytes, the adapter
assembles the receipt the turn implies, forwards events in upstream order and ends in exactly
one terminal. Plus parity (the same turn as SSE and as JSON) and a differential check against
the official ``openai`` SDK reading the same bytes."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.conformance.providers import make_request, run_streamed
from runport.contracts import (
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.core import build_receipt, parse_json_text
from runport.openai import OpenAIChatAdapter

from .openai_upstream import (
    ChunkedBody,
    LoopbackUpstream,
    Reply,
    chunk,
    completion,
    role_chunk,
    sse,
    text_chunk,
    usage_chunk,
)

openai = pytest.importorskip("openai", reason="the differential test needs the openai SDK")

REQUEST = make_request({"type": ["object", "array", "string", "number", "boolean", "null"]})
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Call:
    index: int
    upstream_id: str | None
    name: str
    fragments: tuple[str, ...]  # the first may be "" (an announcement); the rest are not

    @property
    def call_id(self) -> str:
        return self.upstream_id or f"call_{self.index}"


@dataclass(frozen=True)
class Turn:
    """One generated upstream turn: what it says, and the order its pieces go on the wire."""

    text_pieces: tuple[str, ...]
    calls: tuple[Call, ...]
    order: tuple[tuple[str, int], ...]  # ("text", i) or ("call", position in calls)
    finish: str | None
    usage: tuple[int, int] | None
    repeat_identity: bool  # llama.cpp style: id and name on every fragment

    def frames(self) -> list[dict[str, Any]]:
        frames: list[dict[str, Any]] = [role_chunk()]
        cursor = dict.fromkeys(range(len(self.calls)), 0)
        for kind, number in self.order:
            if kind == "text":
                frames.append(text_chunk(self.text_pieces[number]))
                continue
            call = self.calls[number]
            step = cursor[number]
            cursor[number] += 1
            fragment: dict[str, Any] = {"index": call.index}
            function: dict[str, Any] = {"arguments": call.fragments[step]}
            if step == 0 or self.repeat_identity:
                if call.upstream_id is not None:
                    fragment["id"] = call.upstream_id
                    fragment["type"] = "function"
                function["name"] = call.name
            fragment["function"] = function
            frames.append(chunk({"tool_calls": [fragment]}))
        frames.append(chunk(finish=self.finish))
        if self.usage is not None:
            frames.append(usage_chunk(*self.usage))
        return frames

    def sse(self) -> bytes:
        return sse(self.frames(), done=True)

    def completion(self) -> dict[str, Any]:
        return completion(
            "".join(self.text_pieces) or None,
            [(c.call_id, c.name, "".join(c.fragments)) for c in self.calls_by_index()],
            finish=self.finish,
            usage=self.usage,
        )

    def calls_by_index(self) -> list[Call]:
        return sorted(self.calls, key=lambda call: call.index)

    def expected_events(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        cursor = dict.fromkeys(range(len(self.calls)), 0)
        for kind, number in self.order:
            if kind == "text":
                events.append(Delta(text=self.text_pieces[number]))
                continue
            call = self.calls[number]
            step = cursor[number]
            cursor[number] += 1
            if step == 0 or call.fragments[step]:
                events.append(
                    ToolCallDelta(
                        index=call.index,
                        call_id=call.call_id,
                        name=call.name,
                        arguments_fragment=call.fragments[step],
                    )
                )
        return events

    def expected_receipt(
        self, request: ExecutionRequest, adapter: OpenAIChatAdapter
    ) -> ExecutionReceipt:
        return build_receipt(
            request,
            adapter=adapter.descriptor(),
            text="".join(self.text_pieces),
            tool_calls=[
                ToolCall(
                    call_id=call.call_id,
                    name=call.name,
                    arguments=parse_json_text("".join(call.fragments))[1],
                )
                for call in self.calls_by_index()
            ],
            finish_reason=self.finish,
            usage=None
            if self.usage is None
            else Usage(input_tokens=self.usage[0], output_tokens=self.usage[1]),
        )


@st.composite
def pieces(draw: st.DrawFn, text: str) -> tuple[str, ...]:
    """``text`` cut into non-empty pieces at arbitrary code-point boundaries."""
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=6)))
    bounds = [0, *(cut for cut in cuts if 0 < cut < len(text)), len(text)]
    return tuple(text[a:b] for a, b in itertools.pairwise(bounds) if b > a)


def _containers(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=6),
    _containers,
    max_leaves=6,
)


@st.composite
def calls(draw: st.DrawFn, count: int) -> tuple[Call, ...]:
    indices = list(range(count))
    made = []
    for position, index in enumerate(indices):
        arguments = draw(
            st.one_of(
                json_values.map(lambda v: json.dumps(v, ensure_ascii=False)),
                st.text(max_size=10),  # not always JSON: kept as text
            )
        )
        split = draw(pieces(arguments)) if arguments else ()
        announce = draw(st.booleans())
        fragments = ("", *split) if announce or not split else split
        made.append(
            Call(
                index=index,
                upstream_id=draw(
                    st.sampled_from([None, f"call_up{position}", f"toolu_{position}x"])
                ),
                name=draw(st.sampled_from(["get_weather", "search", "f"])),
                fragments=fragments,
            )
        )
    return tuple(made)


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    text = draw(st.text(max_size=40))
    text_pieces = draw(pieces(text)) if text else ()
    made_calls = draw(calls(draw(st.integers(0, 3))))
    queues: list[list[tuple[str, int]]] = [[("text", i) for i in range(len(text_pieces))]]
    queues += [[("call", p)] * len(call.fragments) for p, call in enumerate(made_calls)]
    order: list[tuple[str, int]] = []
    while any(queues):
        queue = draw(st.sampled_from([q for q in queues if q]))
        order.append(queue.pop(0))
    finish = draw(st.sampled_from(["stop", "length", "tool_calls", None]))
    return Turn(
        text_pieces=text_pieces,
        calls=made_calls,
        order=tuple(order),
        finish=finish,
        usage=draw(st.none() | st.tuples(st.integers(0, 10**6), st.integers(0, 10**6))),
        repeat_identity=draw(st.booleans()),
    )


@pytest.fixture(scope="module")
def loopback() -> Iterator[tuple[LoopbackUpstream, OpenAIChatAdapter]]:
    server = LoopbackUpstream()
    with OpenAIChatAdapter(base_url=server.base_url, model="m") as adapter:
        yield server, adapter
    server.close()


@SETTINGS
@given(turn=turns())
def test_any_fragmentation_and_interleaving_over_http(
    loopback: tuple[LoopbackUpstream, OpenAIChatAdapter], turn: Turn
) -> None:
    server, adapter = loopback
    server.queue(Reply([turn.sse()]))
    outcome = run_streamed(adapter, REQUEST)  # law 1 (one terminal), 2 and 3 checked inside
    assert outcome.receipt == turn.expected_receipt(REQUEST, adapter)
    assert outcome.events[:-1] == turn.expected_events()  # upstream order, nothing extra


@SETTINGS
@given(turn=turns(), data=st.data())
def test_any_byte_chunking_of_the_body(turn: Turn, data: st.DataObject) -> None:
    body = turn.sse()
    cuts = sorted(data.draw(st.sets(st.integers(0, len(body)), max_size=20)))
    reads = [body[a:b] for a, b in itertools.pairwise([0, *cuts, len(body)])]
    with httpx.Client(transport=ChunkedBody(reads)) as client:
        adapter = OpenAIChatAdapter(
            base_url="http://upstream.test/v1", model="m", http_client=client
        )
        outcome = run_streamed(adapter, REQUEST)
    assert outcome.receipt == turn.expected_receipt(REQUEST, adapter)
    assert outcome.events[:-1] == turn.expected_events()


@SETTINGS
@given(turn=turns())
def test_sse_and_json_give_equal_receipts(
    loopback: tuple[LoopbackUpstream, OpenAIChatAdapter], turn: Turn
) -> None:
    server, adapter = loopback
    server.queue(Reply([turn.sse()]), Reply.json(turn.completion()))
    streamed = run_streamed(adapter, REQUEST).receipt
    assert streamed is not None
    assert adapter.execute(REQUEST) == streamed


def sdk_accumulation(
    body: bytes,
) -> tuple[str, dict[int, tuple[str | None, str | None, str]], str | None]:
    """What accumulating the official SDK's parsed chunks by index gives, on the same bytes."""
    with httpx.Client(transport=ChunkedBody([body])) as http_client:
        client = openai.OpenAI(
            api_key="unused",
            base_url="http://upstream.test/v1",
            http_client=http_client,
            max_retries=0,
        )
        text: list[str] = []
        calls: dict[int, tuple[str | None, str | None, str]] = {}
        finish: str | None = None
        for parsed in client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], stream=True
        ):
            for choice in parsed.choices:
                delta = choice.delta
                if delta.content:
                    text.append(delta.content)
                for fragment in delta.tool_calls or []:
                    call_id, name, arguments = calls.get(fragment.index, (None, None, ""))
                    function = fragment.function
                    calls[fragment.index] = (
                        call_id or fragment.id,
                        name or (function.name if function else None),
                        arguments + ((function.arguments or "") if function else ""),
                    )
                if choice.finish_reason is not None:
                    finish = choice.finish_reason
    return "".join(text), calls, finish


@settings(deadline=None)
@given(turn=turns().filter(lambda t: t.finish in (None, "stop", "length", "tool_calls")))
def test_differential_against_the_openai_sdk(turn: Turn) -> None:
    body = turn.sse()
    text, sdk_calls, finish = sdk_accumulation(body)
    with httpx.Client(transport=ChunkedBody([body])) as client:
        adapter = OpenAIChatAdapter(
            base_url="http://upstream.test/v1", model="m", http_client=client
        )
        outcome = run_streamed(adapter, REQUEST)
    assert outcome.receipt is not None
    assert (outcome.receipt.text or "") == text
    assert outcome.receipt.finish_reason == finish
    ours: dict[int, tuple[str, str, str]] = {}
    for event in outcome.tool_deltas:
        call_id, name, arguments = ours.get(event.index, (event.call_id, event.name, ""))
        ours[event.index] = (call_id, name, arguments + event.arguments_fragment)
    theirs = {
        index: (call_id or f"call_{index}", name, arguments)
        for index, (call_id, name, arguments) in sdk_calls.items()
    }
    assert ours == theirs
