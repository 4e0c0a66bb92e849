"""Reading numbered SSE frames the way a resuming client does: each frame's id, event and
data, and a stream cut after any number of frames."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

SSE = {"Accept": "text/event-stream"}
STORY = "/v1/contracts/demo.story/executions"
ID = re.compile(r"([0-9a-f]{32}):([1-9][0-9]*)")


@dataclass(frozen=True)
class Frame:
    id: str | None
    event: str
    data: str

    @property
    def seq(self) -> int:
        assert self.id is not None
        found = ID.fullmatch(self.id)
        assert found, self.id
        return int(found.group(2))

    @property
    def run_id(self) -> str:
        assert self.id is not None
        return self.id.partition(":")[0]

    def same_event(self) -> tuple[int, str, str]:
        """What two runs of one stream share: the number, the event and its data."""
        return self.seq, self.event, self.data


def frames(lines: Iterator[str], pings: list[str] | None = None) -> Iterator[Frame]:
    """Frames as they arrive; comments (``: ping``) go to ``pings`` when given."""
    fields: dict[str, str] = {}
    for line in lines:
        if line == "":
            if "data" in fields:
                yield Frame(fields.get("id"), fields.get("event", "message"), fields["data"])
            fields = {}
        elif line.startswith(":"):
            if pings is not None:
                pings.append(line)
        else:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
    if "data" in fields:
        yield Frame(fields.get("id"), fields.get("event", "message"), fields["data"])


def parse(text: str) -> list[Frame]:
    return list(frames(iter(text.split("\n"))))


def read_some(response: httpx.Response, count: int) -> list[Frame]:
    """The first ``count`` frames of a streamed response (the caller then cuts it)."""
    got: list[Frame] = []
    if count == 0:
        return got
    for frame in frames(response.iter_lines()):
        got.append(frame)
        if len(got) == count:
            break
    return got


def check_numbered(got: list[Frame], run_id: str, first: int = 1) -> None:
    """Every frame carries this run's id and the next number, and only the last is final."""
    assert [frame.id for frame in got] == [f"{run_id}:{n}" for n in range(first, first + len(got))]


def strip_ids(text: str) -> str:
    """A stream of bare ``data:`` frames with its ``id:`` lines checked (one per frame, one
    run, numbered from 1) and taken out, as the protocol's own clients read it."""
    out: list[str] = []
    run_ids: set[str] = set()
    blocks = [block for block in text.split("\n\n") if block]
    for number, block in enumerate(blocks, start=1):
        first, newline, rest = block.partition("\n")
        found = ID.fullmatch(first.removeprefix("id: "))
        assert newline, block
        assert first.startswith("id: "), block
        assert found, block
        assert int(found.group(2)) == number, block
        run_ids.add(found.group(1))
        out.append(rest)
    assert len(run_ids) <= 1, run_ids
    return "".join(frame + "\n\n" for frame in out)
