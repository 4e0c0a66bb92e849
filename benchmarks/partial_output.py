"""What partial output costs (ADRs 0034 and 0040): a structured answer of 10 KB, 100 KB and 1 MB
streamed in deltas of 1–6 characters, side by side in one process:

- ``delta path``     the mock (``ScriptedRuntime``) streaming the answer through
                     ``runport.application.execute_contract`` with an ``on_event`` sink that
                     counts: the least a run's streaming costs (the mock walks a list in
                     memory);
- ``never reads``    the same call with ``partial_output=True``: core's ``PartialOutput`` fed
                     each ``Delta``, an ``OutputSnapshot`` after each one that changed the value,
                     every closed subtree checked against its part of the schema; the sink
                     tells events apart with ``isinstance`` and never touches a snapshot;
- ``reads kind``     that call with a sink that dispatches on ``event.kind``, as the docs'
                     loops do;
- ``reads values``   that call with a sink that reads every snapshot's ``value``,
                     ``completed`` and ``problems``, as a UI rendering each one does;
- ``openai path``    the same call through ``OpenAIChatAdapter``, one chat-completions SSE
                     frame per delta read from memory in 64 KiB reads (httpx with an in-memory
                     transport, as ``streaming_overhead.py`` does, so only this process's own
                     reading is timed): what streaming an answer from a provider costs;
- ``oa never``, ``oa kind``, ``oa values``  that call with ``partial_output=True`` and each
                     of the three sinks;
- ``feed alone``     ``PartialOutput.feed`` over the same deltas with no run around it;
- ``floor alone``    ``FloorLexer``, which only decides which deltas get a snapshot (asserted to
                     decide as the reader does on every delta) and does nothing else: the
                     least a pure-Python reader pays per delta;
- ``floor in run``   the mock's call with the reader swapped for that lexer handing on one
                     ready-made snapshot (the ``never reads`` sink): the least a run pays for
                     snapshots in pure Python;
- ``json.loads``     one parse of the final text (the least any reader of the answer pays);
- ``from_json``      ``pydantic_core.from_json(prefix, allow_partial="trailing-strings")`` on
                     every prefix, what peers do per delta: quadratic, so above 100 KB it is
                     timed on every 500th prefix and the sum extrapolated;
- ``ijson``          ``ijson``'s push parser (yajl2 C backend) with its ``ObjectBuilder``, fed
                     every delta: incremental, but it shows no open string and makes no snapshot
                     (only when installed);
- ``partial-json``   ``partial_json_parser.loads(prefix)`` per delta, sampled like
                     ``from_json`` (only when installed).

Then the cost of reading one snapshot taken halfway through the 1 MB answer, and the same
value by ``json.loads`` of a completed prefix.

Times are CPU time (``time.process_time``), repetitions interleaved and the median reported.
Not run in CI: timings belong to a quiet machine, not to a test verdict.

    .venv/bin/python benchmarks/partial_output.py [--rounds 5] [--sizes 10000,100000,1000000]
    uv pip install --python .venv/bin/python ijson partial-json-parser  # optional columns
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import random
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx
import pydantic_core
from streaming_overhead import BodyTransport, tail, text_frame  # the sibling benchmark's frames

import runport.application._envelope as application_envelope
from runport.application import execute_contract
from runport.contracts import Delta, OutputSnapshot
from runport.core import PartialOutput, parse_contract, parse_scenario
from runport.mock import ScriptedRuntime
from runport.openai import OpenAIChatAdapter

try:
    import ijson
except ImportError:  # optional: only for its column
    ijson = None
try:
    import partial_json_parser
except ImportError:  # optional: only for its column
    partial_json_parser = None

ITEM = {
    "type": "object",
    "required": ["id", "name", "tags", "score", "ok", "note"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "name": {"type": "string", "minLength": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
        "score": {"type": "number"},
        "ok": {"type": "boolean"},
        "note": {"type": "string", "maxLength": 80},
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["items"],
    "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
    "$defs": {"item": ITEM},
}
SAMPLE_EVERY = 500
MAX_BYTES = 256 * 1024 * 1024  # the 1 MB answer's SSE body is about 70 MB


def answer(size: int) -> str:
    """A list of records about ``size`` characters long, written as ``json.dumps`` does."""
    rnd = random.Random(size)
    items = []
    length = 12
    while length < size:
        item = {
            "id": len(items),
            "name": f"item {len(items)}",
            "tags": rnd.sample(["red", "green", "blue", "cyan"], 2),
            "score": rnd.random(),
            "ok": rnd.random() < 0.5,
            "note": "é ok \\n " * rnd.randint(0, 7),
        }
        length += len(json.dumps(item)) + 2
        items.append(item)
    return json.dumps({"items": items})


def deltas(text: str) -> list[str]:
    rnd = random.Random(len(text))
    pieces = []
    start = 0
    while start < len(text):
        size = rnd.randint(1, 6)
        pieces.append(text[start : start + size])
        start += size
    return pieces


def contract() -> Any:
    return parse_contract(
        {
            "api_version": "runport/v1alpha1",
            "id": "bench.partial",
            "version": "1.0.0",
            "messages": [{"role": "user", "content": [{"kind": "text", "value": "List."}]}],
            "output_schema": SCHEMA,
            "runtime_policy": {"max_response_bytes": MAX_BYTES},
        }
    )


def scenario(pieces: list[str]) -> Any:
    events: list[dict[str, Any]] = [{"kind": "delta", "text": piece} for piece in pieces]
    events.append({"kind": "finish", "finish_reason": "stop"})
    return parse_scenario(
        {"api_version": "runport.mock/v1", "id": "b", "turns": [{"events": events}]}
    )


def sse_body(pieces: list[str]) -> bytes:
    """The answer as OpenAI's chat completions streams it: one chunk per delta, framed as
    ``streaming_overhead.py`` frames its workloads."""
    return b"".join(text_frame(piece) for piece in pieces) + tail()


def timed(work: Callable[[], object]) -> float:
    gc.collect()
    start = time.process_time()
    work()
    return time.process_time() - start


def never_reads(counts: dict[str, int]) -> Callable[[object], None]:
    """A sink that tells events apart by type and never touches a snapshot."""

    def sink(event: object) -> None:
        if isinstance(event, Delta):
            counts["deltas"] += 1
        elif isinstance(event, OutputSnapshot):
            counts["snapshots"] += 1

    return sink


def reads_kind(counts: dict[str, int]) -> Callable[[object], None]:
    """A sink that dispatches on ``event.kind``, as the docs' loops do."""

    def sink(event: Any) -> None:
        kind = event.kind
        if kind == "Delta":
            counts["deltas"] += 1
        elif kind == "OutputSnapshot":
            counts["snapshots"] += 1

    return sink


def reads_values(counts: dict[str, int]) -> Callable[[object], None]:
    """A sink that reads every snapshot's fields, as a UI rendering each one does."""

    def sink(event: object) -> None:
        if isinstance(event, Delta):
            counts["deltas"] += 1
        elif isinstance(event, OutputSnapshot):
            counts["snapshots"] += 1
            event.value  # noqa: B018  # the read is the work measured
            event.completed  # noqa: B018
            event.problems  # noqa: B018

    return sink


CONSUMERS: dict[str, Callable[[dict[str, int]], Callable[[Any], None]]] = {
    "never reads": never_reads,
    "reads kind": reads_kind,
    "reads values": reads_values,
}
OA = {"never reads": "oa never", "reads kind": "oa kind", "reads values": "oa values"}


def counted_run(
    bench: Any, adapter: Any, partial: bool, consumer: str = "never reads"
) -> dict[str, int]:
    """One ``execute_contract`` of ``bench`` through ``adapter``, its deltas and snapshots
    counted by the sink of ``consumer``."""
    counts = {"deltas": 0, "snapshots": 0}
    sink = CONSUMERS[consumer](counts)
    envelope = execute_contract(bench, adapter, on_event=sink, partial_output=partial)
    assert envelope.ok, envelope.diagnostics
    return counts


def run_delta_path(
    bench: Any, play: Any, partial: bool, consumer: str = "never reads"
) -> Callable[[], object]:
    return lambda: counted_run(bench, ScriptedRuntime(play), partial, consumer)


def run_openai_path(
    bench: Any, body: bytes, partial: bool, consumer: str = "never reads"
) -> Callable[[], object]:
    def work() -> object:
        with httpx.Client(transport=BodyTransport(body, 65536)) as http:
            adapter = OpenAIChatAdapter(
                base_url="http://bench.invalid/v1",
                model="m",
                http_client=http,
                max_response_bytes=MAX_BYTES,
            )
            return counted_run(bench, adapter, partial, consumer)

    return work


_FLOOR_TOKEN = re.compile(r'[ \t\n\r]*(?:(")|(,)|(:)|([\[{])|([\]}])|([-0-9tfn]))')
_FLOOR_RUN = re.compile(
    r'(?:[^"\\]+|\\["\\/bfnrt]|\\u(?![dD][89abAB])[0-9a-fA-F]{4}'
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})*"
)
_FLOOR_SCALAR = re.compile(r"[-+.0-9a-zE]*")
_BETWEEN, _KEY, _STRING, _SCALAR = range(4)


class FloorLexer:
    """The least a pure-Python reader does per delta (ADR 0040): it tracks only where it is —
    in a key, a value string, a number or word, between tokens, which containers are open —
    and says whether a delta would get a snapshot. It keeps no value, writes no pointer,
    checks nothing, makes no snapshot, decodes no escape and knows no error: a measuring
    instrument for well-formed JSON, not a reader."""

    __slots__ = ("_held", "_key_next", "_mode", "_stack")

    def __init__(self) -> None:
        self._mode = _BETWEEN
        self._stack: list[bool] = []  # open containers, true for an object
        self._key_next = False
        self._held = ""  # a cut escape

    def feed(self, text: str) -> bool:
        mode = self._mode
        held = self._held
        if held:
            text = held + text
            self._held = ""
        elif mode >= _KEY and mode <= _STRING and '"' not in text and "\\" not in text:
            return mode == _STRING
        changed = False
        position = 0
        end = len(text)
        while position < end:
            if mode in (_STRING, _KEY):
                stop = _FLOOR_RUN.match(text, position).end()
                if stop > position and mode == _STRING:
                    changed = True
                if stop == end:
                    break
                if text[stop] == '"':
                    changed = changed or mode == _STRING
                    mode = _BETWEEN
                    position = stop + 1
                    continue
                self._held = text[stop:]
                break
            if mode == _SCALAR:
                stop = _FLOOR_SCALAR.match(text, position).end()
                if stop == end:
                    break
                changed = True
                mode = _BETWEEN
                position = stop
                continue
            found = _FLOOR_TOKEN.match(text, position)
            if found is None:
                break
            kind = found.lastindex
            position = found.end()
            if kind == 1:
                if self._key_next:
                    mode = _KEY
                    self._key_next = False
                else:
                    mode = _STRING
                    changed = True
            elif kind == 2:
                self._key_next = self._stack[-1]
            elif kind == 4:
                is_object = text[position - 1] == "{"
                self._stack.append(is_object)
                self._key_next = is_object
                changed = True
            elif kind == 5:
                self._stack.pop()
                changed = True
            elif kind == 6:
                mode = _SCALAR
                position -= 1
        self._mode = mode
        return changed


FLOOR_SNAPSHOT = OutputSnapshot(value=None, completed=[], problems=[])


class FloorSnapshots:
    """The floor lexer where a run's reader goes: a ready-made snapshot for each delta the
    reader would make one for."""

    def __init__(self) -> None:
        self._lexer = FloorLexer()

    def feed(self, text: str) -> OutputSnapshot | None:
        return FLOOR_SNAPSHOT if self._lexer.feed(text) else None

    def close(self) -> OutputSnapshot | None:
        return None


def floor_alone(pieces: list[str]) -> Callable[[], object]:
    def work() -> object:
        feed = FloorLexer().feed
        for piece in pieces:
            feed(piece)
        return None

    return work


def floor_in_run(bench: Any, play: Any) -> Callable[[], object]:
    """The mock's call with partial output, the reader swapped for ``FloorSnapshots`` (by
    replacing the application's private factory, for this measurement only): the least a run
    can pay for snapshots with any pure-Python reader."""
    run = run_delta_path(bench, play, True)

    def work() -> object:
        made = application_envelope.snapshots_for
        application_envelope.snapshots_for = lambda schema, wanted: FloorSnapshots()  # type: ignore[assignment,return-value]
        try:
            return run()
        finally:
            application_envelope.snapshots_for = made

    return work


def feed_alone(pieces: list[str]) -> Callable[[], object]:
    def work() -> object:
        output = PartialOutput(SCHEMA)
        feed = output.feed
        for piece in pieces:
            feed(piece)
        return output

    return work


def per_prefix(parse: Callable[[str], object], pieces: list[str], sample: int) -> float:
    """Seconds to parse every prefix (timed on every ``sample``-th one, the sum scaled)."""
    prefixes = []
    end = 0
    for index, piece in enumerate(pieces):
        end += len(piece)
        if index % sample == 0:
            prefixes.append(end)
    text = "".join(pieces)
    gc.collect()
    start = time.process_time()
    for end in prefixes:
        with contextlib.suppress(ValueError):  # a prefix partial_json_parser cannot complete
            parse(text[:end])
    return (time.process_time() - start) * sample


def ijson_fed(pieces: list[str]) -> Callable[[], object]:
    def work() -> object:
        builder = ijson.ObjectBuilder()
        events = ijson.sendable_list()
        parser = ijson.parse_coro(events)
        for piece in pieces:
            parser.send(piece.encode())
            for _, event, value in events:
                builder.event(event, value)
            del events[:]
        parser.close()
        return builder.value

    return work


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    args = parser.parse_args()
    bench = contract()
    rows = []
    for size in (int(each) for each in args.sizes.split(",")):
        text = answer(size)
        pieces = deltas(text)
        play = scenario(pieces)
        body = sse_body(pieces)
        contenders: dict[str, Callable[[], object]] = {
            "delta path": run_delta_path(bench, play, False),
            **{name: run_delta_path(bench, play, True, name) for name in CONSUMERS},
            "openai path": run_openai_path(bench, body, False),
            **{OA[name]: run_openai_path(bench, body, True, name) for name in CONSUMERS},
            "feed alone": feed_alone(pieces),
            "floor alone": floor_alone(pieces),
            "floor in run": floor_in_run(bench, play),
            "json.loads": lambda text=text: json.loads(text),
        }
        if ijson is not None:
            contenders["ijson"] = ijson_fed(pieces)
        counts = run_delta_path(bench, play, True)()
        for name in CONSUMERS:
            assert run_delta_path(bench, play, True, name)() == counts
            assert run_openai_path(bench, body, True, name)() == counts
        assert floor_in_run(bench, play)() == counts
        reader, lexer = PartialOutput(SCHEMA), FloorLexer()
        assert [reader.feed(each) is not None for each in pieces] == [
            lexer.feed(each) for each in pieces
        ], "the floor lexer must decide as the reader does"
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.rounds):
            for name, work in contenders.items():
                times[name].append(timed(work))
        median = {name: statistics.median(each) for name, each in times.items()}
        sample = 1 if size <= 100_000 else SAMPLE_EVERY
        median["from_json"] = per_prefix(
            lambda prefix: pydantic_core.from_json(prefix, allow_partial="trailing-strings"),
            pieces,
            sample,
        )
        sampled = {"from_json": sample > 1}
        if partial_json_parser is not None:  # pure Python: sampled from 100 KB up
            slow = 1 if size <= 10_000 else 100 if size <= 100_000 else SAMPLE_EVERY * 4
            median["partial-json"] = per_prefix(partial_json_parser.loads, pieces, slow)
            sampled["partial-json"] = slow > 1
        rows.append((size, len(text), len(pieces), counts, median, sampled))

    names = list(rows[0][4])
    print(f"median CPU time of {args.rounds} interleaved rounds; µs per delta")
    print("| answer | deltas | snapshots | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for _, length, count, counts, median, sampled in rows:
        cells = []
        for name in names:
            mark = "*" if sampled.get(name) else ""
            cells.append(f"{median[name] / count * 1e6:,.2f}{mark}")
        print(
            f"| {length / 1000:,.0f} KB | {count:,} | {counts['snapshots']:,} | "
            + " | ".join(cells)
            + " |"
        )
    print("(* extrapolated: from_json from every 500th prefix above 100 KB, partial-json from")
    print(" every 100th at 100 KB and every 2,000th at 1 MB)")
    print()
    print(
        "| answer | consumer | snapshots add (ns/byte) | ÷ delta path | openai: snapshots add "
        "÷ its path |"
    )
    print("|---|---|---|---|---|")
    added_at: dict[str, dict[int, float]] = {name: {} for name in CONSUMERS}
    for size, length, _, _, median, _ in rows:
        for name in CONSUMERS:
            added = median[name] - median["delta path"]
            added_openai = median[OA[name]] - median["openai path"]
            added_at[name][size] = added / length
            print(
                f"| {length / 1000:,.0f} KB | {name} | {added / length * 1e9:,.0f} | "
                f"{added / median['delta path']:.2f}× | "
                f"{added_openai / median['openai path']:.2f}× |"
            )
    print()
    print("| answer | floor in run adds ÷ delta path | from_json ÷ snapshots added (never reads) |")
    print("|---|---|---|")
    for _, length, _, _, median, _ in rows:
        added = median["never reads"] - median["delta path"]
        print(
            f"| {length / 1000:,.0f} KB | "
            f"{(median['floor in run'] - median['delta path']) / median['delta path']:.2f}× | "
            f"{median['from_json'] / added:,.0f}× |"
        )
    for name, at in added_at.items():
        smallest, largest = min(at), max(at)
        print(
            f"{name}: extra cost per byte, {largest:,} ÷ {smallest:,} characters: "
            f"{at[largest] / at[smallest]:.2f}×"
        )
    reading(rows[-1][1])


def reading(size: int) -> None:
    text = answer(size)
    pieces = deltas(text)
    half = len(pieces) // 2
    output = PartialOutput(SCHEMA)
    snapshot = None
    for piece in pieces[:half]:
        snapshot = output.feed(piece) or snapshot
    assert snapshot is not None
    prefix = "".join(pieces[:half])
    build = time.process_time()
    value = snapshot.value
    build = time.process_time() - build
    again = time.process_time()
    _ = snapshot.value
    again = time.process_time() - again
    closed = prefix[: prefix.rindex("}") + 1] + "]}"
    loads = timed(lambda: json.loads(closed))
    print()
    print(
        f"reading a snapshot halfway through {size / 1000:,.0f} KB ({len(value['items']):,} "
        f"records so far): first read {build * 1e6:,.0f} µs, again {again * 1e6:,.1f} µs; "
        f"json.loads of the same records {loads * 1e6:,.0f} µs; making it cost "
        f"{feed_cost(pieces[:half]) * 1e6:.2f} µs per delta"
    )


def feed_cost(pieces: list[str]) -> float:
    return timed(feed_alone(pieces)) / len(pieces)


if __name__ == "__main__":
    main()
