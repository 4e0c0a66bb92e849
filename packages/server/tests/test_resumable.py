"""Numbered frames, heartbeats and ``--resumable`` runs with the in-memory event log, over real
uvicorn on 127.0.0.1, driven with httpx."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.application import async_adapter_factory
from runport.contracts import ErrorCode
from runport.mock import AsyncEmitter, AsyncFunctionRuntime
from runport.server import MemoryEventLog, create_app, serve_in_background

from .conftest import SCENARIO, PacedUpstream, Thinking, catalog, still_serving
from .slow_readers import (
    OPS,
    SIZES,
    ClockedMemoryLog,
    LoopWatch,
    SlowReader,
    Upstreams,
    check_ended,
    drive,
)
from .sse_frames import SSE, STORY, Frame, check_numbered, frames, parse, read_some

THINKING = Thinking(["Ships ", "and ", "keepers. "], ["The ", "light ", "turns ", "all ", "night."])
PIECES = len(THINKING.thinking) + len(THINKING.answer)
INPUTS = {"inputs": {"topic": "ships"}}


def _error(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


def _until(check: object, what: str) -> None:
    """Poll (no fixed sleep) until ``check()`` is true, or fail after a generous bound."""
    assert callable(check)
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


@pytest.fixture(scope="module")
def resumable() -> Iterator[httpx.Client]:
    app = create_app(catalog(), THINKING, event_log=MemoryEventLog())
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


@pytest.fixture(scope="module")
def whole(resumable: httpx.Client) -> list[Frame]:
    """The uninterrupted stream every cut and resume must add up to."""
    response = resumable.post(STORY, json=INPUTS, headers=SSE)
    assert response.status_code == 200
    got = parse(response.text)
    check_numbered(got, response.headers["x-runport-run-id"])
    assert len(got) == PIECES + 2  # the pieces, Complete, envelope
    return got


def test_every_event_frame_carries_the_run_id_and_its_number() -> None:
    app = create_app(catalog(), async_adapter_factory("mock", scenario=SCENARIO))
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        first = http.post(STORY, json=INPUTS, headers=SSE)
        second = http.post(STORY, json=INPUTS, headers=SSE)
    for response in (first, second):
        run_id = response.headers["x-runport-run-id"]
        got = parse(response.text)
        check_numbered(got, run_id)
        assert [frame.event for frame in got] == ["Delta", "Delta", "Delta", "Complete", "envelope"]
    assert first.headers["x-runport-run-id"] != second.headers["x-runport-run-id"]


def test_a_quiet_stream_sends_ping_comments_before_and_between_events(
    paced: PacedUpstream,
) -> None:
    app = create_app(catalog(), paced.adapter, heartbeat=0.05)
    with (
        serve_in_background(app) as url,
        httpx.Client(base_url=url, timeout=30) as http,
        http.stream("POST", STORY, json=INPUTS, headers=SSE) as got,
    ):
        assert got.status_code == 200  # the first ping started the response
        lines = got.iter_lines()
        assert next(lines) == ": ping"  # nothing was released: the upstream is silent
        pings: list[str] = []
        stream = frames(lines, pings)
        paced.release(1)
        first = next(stream)
        assert first.event == "Delta"
        # the next piece is held back: the stream is quiet again, so it pings again
        assert next(lines) == ": ping"
        paced.release_all()
        rest = list(stream)
    assert [frame.event for frame in rest] == ["Delta"] * 3 + ["Complete", "envelope"]
    check_numbered([first, *rest], got.headers["x-runport-run-id"])
    assert set(pings) <= {": ping"}


def test_without_resumable_there_are_no_runs_to_read_or_stop() -> None:
    app = create_app(catalog(), THINKING)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        run_id = http.post(STORY, json=INPUTS, headers=SSE).headers["x-runport-run-id"]
        for response in (
            http.get(f"/v1/runs/{run_id}/events"),
            http.delete(f"/v1/runs/{run_id}"),
        ):
            assert response.status_code == 404
            assert _error(response) == ErrorCode.RUN_NOT_FOUND
            assert "--resumable" in response.json()["error"]["message"]


@settings(
    deadline=None,
    max_examples=settings.default.max_examples // 4,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(cut=st.integers(min_value=0, max_value=PIECES + 1), by_header=st.booleans())
def test_a_cut_at_any_frame_then_a_resume_is_exactly_the_uninterrupted_stream(
    resumable: httpx.Client, whole: list[Frame], cut: int, by_header: bool
) -> None:
    with resumable.stream("POST", STORY, json=INPUTS, headers=SSE) as response:
        run_id = response.headers["x-runport-run-id"]
        before = read_some(response, cut)
    headers = {"Last-Event-ID": f"{run_id}:{cut}"} if by_header and cut else {}
    params = {} if by_header else {"after": str(cut)}
    after = resumable.get(f"/v1/runs/{run_id}/events", headers=headers, params=params)
    assert after.status_code == 200
    assert after.headers["x-runport-run-id"] == run_id
    got = [*before, *parse(after.text)]
    check_numbered(got, run_id)
    assert [frame.same_event() for frame in got] == [frame.same_event() for frame in whole]


def test_a_resumed_run_goes_on_live_and_its_upstream_is_never_closed(
    paced: PacedUpstream,
) -> None:
    app = create_app(catalog(), paced.adapter, event_log=MemoryEventLog())
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        paced.release(1)
        with http.stream("POST", STORY, json=INPUTS, headers=SSE) as response:
            run_id = response.headers["x-runport-run-id"]
            before = read_some(response, 1)
        # the connection is gone; the run is not: the next piece still goes to the log
        paced.release(1)
        with http.stream(
            "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": f"{run_id}:1"}
        ) as resumed:
            stream = frames(resumed.iter_lines())
            second = next(stream)
            assert second.id == f"{run_id}:2"
            paced.release_all()  # and the rest arrives live, on this connection
            rest = list(stream)
    got = [before[0], second, *rest]
    check_numbered(got, run_id)
    assert [frame.event for frame in got] == ["Delta"] * 4 + ["Complete", "envelope"]
    text = "".join(json.loads(frame.data)["text"] for frame in got[:4])
    assert text == "Once upon a time."
    assert json.loads(got[-1].data)["ok"] is True
    assert not paced.closed.is_set()


@pytest.mark.parametrize(
    "last_event_id",
    ["", "nonsense", "{run}", "{run}:", "{run}:-1", "{run}:01", "{run}:1.5", ":3", "{run}:1:2"],
)
def test_a_malformed_last_event_id_is_refused(
    resumable: httpx.Client, whole: list[Frame], last_event_id: str
) -> None:
    run_id = whole[0].run_id
    value = last_event_id.replace("{run}", run_id)
    response = resumable.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": value})
    assert response.status_code == 400
    assert _error(response) == ErrorCode.DATA_INVALID
    assert "Last-Event-ID" in response.json()["error"]["message"]


def test_a_last_event_id_of_another_run_or_from_the_future_is_refused(
    resumable: httpx.Client, whole: list[Frame]
) -> None:
    run_id = whole[0].run_id
    other = resumable.post(STORY, json=INPUTS, headers=SSE).headers["x-runport-run-id"]
    foreign = resumable.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": f"{other}:2"})
    assert foreign.status_code == 400
    assert _error(foreign) == ErrorCode.DATA_INVALID
    assert other in foreign.json()["error"]["message"]
    last = whole[-1].seq
    future = resumable.get(
        f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": f"{run_id}:{last + 1}"}
    )
    assert future.status_code == 400
    assert _error(future) == ErrorCode.DATA_INVALID
    assert resumable.get(f"/v1/runs/{run_id}/events", params={"after": "x"}).status_code == 400


def test_an_unknown_run_is_not_found(resumable: httpx.Client) -> None:
    for run_id in ("0" * 32, "not-a-run", "ABCDEF" * 6):
        for response in (
            resumable.get(f"/v1/runs/{run_id}/events"),
            resumable.delete(f"/v1/runs/{run_id}"),
        ):
            assert response.status_code == 404
            assert _error(response) == ErrorCode.RUN_NOT_FOUND


def test_a_finished_run_replays_to_its_terminal_and_then_has_nothing_more(
    resumable: httpx.Client, whole: list[Frame]
) -> None:
    run_id = whole[0].run_id
    replay = parse(resumable.get(f"/v1/runs/{run_id}/events").text)
    assert replay == whole  # the same run, so the same ids too
    assert [frame.event for frame in replay].count("Complete") == 1
    done = resumable.get(
        f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": f"{run_id}:{whole[-1].seq}"}
    )
    assert done.status_code == 204  # an EventSource stops reconnecting
    stopped = resumable.delete(f"/v1/runs/{run_id}")
    assert stopped.status_code == 200
    assert stopped.json() == {"run_id": run_id, "state": "finished"}


def test_a_finished_run_is_gone_after_its_retention() -> None:
    app = create_app(catalog(), THINKING, event_log=MemoryEventLog(retention=0.2))
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        run_id = http.post(STORY, json=INPUTS, headers=SSE).headers["x-runport-run-id"]
        assert http.get(f"/v1/runs/{run_id}/events").status_code == 200
        _until(
            lambda: http.get(f"/v1/runs/{run_id}/events").status_code == 404,
            "the run expired",
        )
        expired = http.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": f"{run_id}:3"})
        assert _error(expired) == ErrorCode.RUN_NOT_FOUND
        assert "0.2 s ago" in expired.json()["error"]["message"]


def test_two_readers_of_one_run_both_get_every_event(paced: PacedUpstream) -> None:
    app = create_app(catalog(), paced.adapter, event_log=MemoryEventLog())

    async def main(url: str) -> tuple[str, str, str]:
        async with (
            httpx.AsyncClient(base_url=url, timeout=30) as http,
            http.stream("POST", STORY, json=INPUTS, headers=SSE) as first,
        ):
            run_id = first.headers["x-runport-run-id"]
            async with http.stream("GET", f"/v1/runs/{run_id}/events") as second:
                paced.release_all()
                texts = await asyncio.gather(first.aread(), second.aread())
        return run_id, texts[0].decode(), texts[1].decode()

    with serve_in_background(app) as url:
        run_id, one, two = asyncio.run(main(url))
    assert one == two
    got = parse(one)
    check_numbered(got, run_id)
    assert [frame.event for frame in got] == ["Delta"] * 4 + ["Complete", "envelope"]


def test_delete_stops_the_run_closes_the_upstream_and_ends_every_reader(
    paced: PacedUpstream,
) -> None:
    app = create_app(catalog(), paced.adapter, event_log=MemoryEventLog())
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        paced.release(1)
        with http.stream("POST", STORY, json=INPUTS, headers=SSE) as response:
            run_id = response.headers["x-runport-run-id"]
            stream = frames(response.iter_lines())
            first = next(stream)
            stopped = http.delete(f"/v1/runs/{run_id}")
            assert stopped.status_code == 202
            assert stopped.json() == {"run_id": run_id, "state": "stopping"}
            rest = list(stream)
        assert paced.closed.wait(30)
        replay = parse(http.get(f"/v1/runs/{run_id}/events").text)
    got = [first, *rest]
    check_numbered(got, run_id)
    assert got == replay
    assert [frame.event for frame in got] == ["Delta", "Failed", "envelope"]
    assert json.loads(got[1].data)["code"] == ErrorCode.CALLER_STOPPED
    envelope = json.loads(got[2].data)
    assert envelope["ok"] is False
    assert envelope["diagnostics"][0]["code"] == ErrorCode.CALLER_STOPPED


def test_a_run_nobody_reads_is_stopped_after_the_orphan_timeout(paced: PacedUpstream) -> None:
    app = create_app(catalog(), paced.adapter, event_log=MemoryEventLog(), orphan_timeout=0.3)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        paced.release(1)
        with http.stream("POST", STORY, json=INPUTS, headers=SSE) as response:
            run_id = response.headers["x-runport-run-id"]
            read_some(response, 1)
        assert paced.closed.wait(30)  # the tab is closed: the upstream too, in time
        got = parse(http.get(f"/v1/runs/{run_id}/events").text)
    assert [frame.event for frame in got] == ["Delta", "Failed", "envelope"]
    failed = json.loads(got[1].data)
    assert failed["code"] == ErrorCode.CALLER_STOPPED
    assert "no client read the run for 0.3 s" in failed["message"]


def test_a_reader_keeps_an_unfinished_run_alive_past_the_orphan_timeout(
    paced: PacedUpstream,
) -> None:
    app = create_app(
        catalog(), paced.adapter, event_log=MemoryEventLog(), orphan_timeout=0.3, heartbeat=0.05
    )
    with (
        serve_in_background(app) as url,
        httpx.Client(base_url=url, timeout=30) as http,
        http.stream("POST", STORY, json=INPUTS, headers=SSE) as response,
    ):
        lines = response.iter_lines()
        # many orphan timeouts' worth of pings, with the reader connected all along
        pings = 0
        while pings < 20:
            line = next(lines)
            assert line in (": ping", "")
            pings += line == ": ping"
        paced.release_all()
        got = list(frames(lines))
    assert [frame.event for frame in got] == ["Delta"] * 4 + ["Complete", "envelope"]
    assert not paced.closed.is_set()


def test_inputs_refused_before_the_run_are_still_a_422_envelope(
    resumable: httpx.Client,
) -> None:
    response = resumable.post(STORY, json={"inputs": {}}, headers=SSE)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/json"
    assert response.json()["diagnostics"][0]["code"] == ErrorCode.VALUE_REQUIRED


def test_reading_and_stopping_runs_are_guarded_like_every_route(paced: PacedUpstream) -> None:
    app = create_app(catalog(), paced.adapter, event_log=MemoryEventLog(), token="let-me-in")
    auth = {"Authorization": "Bearer let-me-in"}
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        paced.release(1)
        with http.stream("POST", STORY, json=INPUTS, headers={**SSE, **auth}) as response:
            run_id = response.headers["x-runport-run-id"]
            read_some(response, 1)
        assert http.get(f"/v1/runs/{run_id}/events").status_code == 401
        assert http.delete(f"/v1/runs/{run_id}").status_code == 401
        foreign = http.delete(
            f"/v1/runs/{run_id}", headers={**auth, "Origin": "https://elsewhere.example"}
        )
        assert foreign.status_code == 403
        assert _error(foreign) == ErrorCode.ACCESS_DENIED
        assert not paced.closed.is_set()  # none of them stopped it
        assert http.delete(f"/v1/runs/{run_id}", headers=auth).status_code == 202
        assert paced.closed.wait(30)


async def _coat(request: object, emit: AsyncEmitter) -> None:
    for piece in ('{"coat": ', '"a warm', ' one"}'):
        await emit.text(piece)


def test_partial_output_rides_a_resumable_run_and_its_resume() -> None:
    """``?partial_output=true`` with ``--resumable``: the snapshots are frames of the log like
    any event, numbered, replayed by a resume, and the run without them is the same run."""
    forecast = "/v1/contracts/demo.forecast/executions"
    city = {"inputs": {"city": "Delft"}}
    app = create_app(catalog(), lambda: AsyncFunctionRuntime(_coat), event_log=MemoryEventLog())
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        asked = http.post(forecast + "?partial_output=true", json=city, headers=SSE)
        plain = http.post(forecast, json=city, headers=SSE)
        run_id = asked.headers["x-runport-run-id"]
        replayed = http.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": f"{run_id}:1"})
        wrong = http.post(forecast + "?partial_output=yes", json=city, headers=SSE)
    got = parse(asked.text)
    check_numbered(got, run_id)
    names = [frame.event for frame in got]
    assert "OutputSnapshot" in names
    snapshots = [json.loads(frame.data) for frame in got if frame.event == "OutputSnapshot"]
    assert snapshots[-1]["value"] == {"coat": "a warm one"}
    assert parse(replayed.text) == got[1:]
    without = [(f.event, f.data) for f in got if f.event != "OutputSnapshot"]
    assert [(f.event, f.data) for f in parse(plain.text)] == without
    assert wrong.status_code == 400
    assert _error(wrong) == ErrorCode.DATA_INVALID


def _stalling_pieces() -> list[str]:
    """Pieces that back a reader's socket up before its 128th frame (more than the kernel's
    largest send buffer), then as many small ones after: the frame the reader stalls on is
    far from the run's end."""
    wmem_max = 4 << 20
    with contextlib.suppress(OSError, ValueError, IndexError):
        wmem_max = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    big = "x" * ((wmem_max + (1 << 20)) // 128)
    return [big] * 128 + ["."] * 200


def test_a_reader_stalled_past_its_run_s_retention_ends_with_run_not_found() -> None:
    pieces = _stalling_pieces()
    last = len(pieces) + 2  # the deltas, Complete, envelope
    paced = PacedUpstream(pieces)
    log = LoopWatch(MemoryEventLog(retention=0.2))
    app = create_app(catalog(), paced.adapter, event_log=log)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        reader = SlowReader(url, "POST", STORY, INPUTS)
        run_id = reader.head()["x-runport-run-id"]
        paced.release_all()  # the run ends; its reader is stuck on a socket nobody reads
        _until(
            lambda: http.get(f"/v1/runs/{run_id}/events?after={last}").status_code == 404,
            "the run finished and expired",
        )
        answer = reader.drain()  # the client reads again: what is left of the run is gone
        assert check_ended(answer, run_id, 0) == "not found"
        assert len(answer.got) - 2 < last
        still_serving(http)
    assert log.held == []


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sizes=SIZES, ops=OPS)
def test_every_reader_of_the_memory_log_ends_and_none_holds_the_loop(
    sizes: list[int], ops: list[tuple[Any, ...]]
) -> None:
    memory = ClockedMemoryLog(retention=5)
    log = LoopWatch(memory)
    upstreams = Upstreams()
    app = create_app(catalog(), upstreams.adapter, event_log=log)
    with serve_in_background(app) as url:
        drive(url, upstreams, log, lambda run_id: memory.expire(), sizes, ops)
    assert log.reads > 0
