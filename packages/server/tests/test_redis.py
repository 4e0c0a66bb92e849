"""Resumable runs on the Redis Streams event log, against a real ``redis-server`` (Debian's
package) that each test module starts on a free 127.0.0.1 port in a temporary folder: two
``runport serve`` processes sharing runs, a cut on one and a resume on the other, a producer
killed with ``SIGKILL``, Redis down at start and lost mid-run, a slow reader.

These tests run in their own tox env, ``redis``, which CI runs after installing redis-server
with apt; elsewhere they are skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
)
from runport.core import build_receipt
from runport.ports import AsyncRuntimeAdapter, AsyncSink, deliver

from .conftest import CONTRACTS, SCENARIO, PacedUpstream, Thinking, catalog
from .slow_readers import (
    OPS,
    SIZES,
    LoopWatch,
    SlowReader,
    Upstreams,
    check_ended,
    drive,
)
from .sse_frames import SSE, STORY, Frame, check_numbered, frames, parse, read_some

ENABLED = os.environ.get("RUNPORT_REDIS_TESTS") == "1"
SKIP_REASON = (
    "the Redis event-log tests run in their own tox env: `tox run -e redis` "
    "(needs Debian's redis-server package; .ci/run installs it)"
)

if not ENABLED:
    pytest.skip(SKIP_REASON, allow_module_level=True)

import redis  # noqa: E402

from runport.server import RedisEventLog, create_app, serve_in_background  # noqa: E402

from .chat_tools import FILES_FOLDER  # noqa: E402
from .frontend_serve import DeletingOpenAI  # noqa: E402
from .frontend_serve import runport_serve as serve_chat  # noqa: E402
from .redis_tools import (  # noqa: E402
    RedisServer,
    free_port,
    paced_openai,
    redis_server,
    runport_serve,
    serve_command,
)
from .test_chat import CHAT, chunks  # noqa: E402
from .test_chat_approvals import answered, paused_message  # noqa: E402

PIECES = ["Once ", "upon ", "a ", "time ", "there ", "was ", "a ", "log."]
INPUTS = {"inputs": {"topic": "logs"}}
THINKING = Thinking(["Streams ", "and ", "leases. "], ["A ", "stream ", "goes ", "on."])


@pytest.fixture(scope="module")
def shared_redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


def _text(got: list[Frame]) -> str:
    return "".join(json.loads(frame.data)["text"] for frame in got if frame.event == "Delta")


def _error(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


def test_redis_down_at_start_is_a_clear_error() -> None:
    closed = free_port()
    result = subprocess.run(
        [
            *serve_command(
                "--contracts",
                CONTRACTS,
                "--scenario",
                SCENARIO,
            ),
            "--resumable",
            "--event-log",
            f"redis://127.0.0.1:{closed}/0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert ErrorCode.EVENT_LOG_UNAVAILABLE in result.stderr
    assert f"redis://127.0.0.1:{closed}/0" in result.stderr
    assert "serving" not in result.stderr


def test_an_event_log_without_resumable_is_a_usage_error(shared_redis: RedisServer) -> None:
    result = subprocess.run(
        serve_command("--contracts", CONTRACTS, "--event-log", shared_redis.url),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "--resumable" in result.stderr


def test_a_cut_on_one_process_is_resumed_on_another_and_both_readers_get_every_event(
    shared_redis: RedisServer,
) -> None:
    with (
        paced_openai(PIECES) as upstream,
        runport_serve(shared_redis.url, upstream.url) as one,
        runport_serve(shared_redis.url, upstream.url) as two,
        httpx.Client(timeout=30) as http,
    ):
        upstream.release(2)
        with http.stream("POST", one.url + STORY, json=INPUTS, headers=SSE) as response:
            assert response.status_code == 200
            run_id = response.headers["x-runport-run-id"]
            before = read_some(response, 2)
        # process one still runs it; process two reads it from the log
        watcher = http.stream("GET", f"{two.url}/v1/runs/{run_id}/events")
        with watcher as whole:
            upstream.release(1)
            with http.stream(
                "GET",
                f"{two.url}/v1/runs/{run_id}/events",
                headers={"Last-Event-ID": f"{run_id}:2"},
            ) as resumed:
                stream = frames(resumed.iter_lines())
                third = next(stream)
                upstream.release_all()
                rest = list(stream)
            everything = parse(whole.read().decode())
    got = [*before, third, *rest]
    check_numbered(got, run_id)
    assert got == everything
    assert _text(got) == "".join(PIECES)
    assert [frame.event for frame in got][-2:] == ["Complete", "envelope"]
    assert json.loads(got[-1].data)["result"]["output"] == "".join(PIECES)
    assert upstream.calls == 1
    assert upstream.finished.is_set()


def test_a_killed_producer_gives_every_reader_the_coded_terminal_within_the_lease(
    shared_redis: RedisServer,
) -> None:
    with (
        paced_openai(PIECES) as upstream,
        runport_serve(shared_redis.url, upstream.url, "--lease", "1") as one,
        runport_serve(shared_redis.url, upstream.url, "--lease", "1") as two,
        httpx.Client(timeout=30) as http,
    ):
        upstream.release(1)
        with http.stream("POST", one.url + STORY, json=INPUTS, headers=SSE) as response:
            run_id = response.headers["x-runport-run-id"]
            before = read_some(response, 1)
            with http.stream("GET", f"{two.url}/v1/runs/{run_id}/events") as reader:
                stream = frames(reader.iter_lines())
                assert next(stream) == before[0]
                one.process.send_signal(signal.SIGKILL)
                killed = time.monotonic()
                one.process.wait(timeout=30)
                rest = list(stream)  # ends: never a hang (the client's timeout is the bound)
                took = time.monotonic() - killed
        print(f"\nthe readers of a killed producer's run got its ending {took:.2f} s later")
        again = parse(http.get(f"{two.url}/v1/runs/{run_id}/events").text)
    assert [frame.event for frame in rest] == ["Failed", "envelope"]
    failed = json.loads(rest[0].data)
    assert failed["code"] == ErrorCode.RUN_PRODUCER_LOST
    check_numbered([before[0], *rest], run_id)
    assert again == [before[0], *rest]  # one ending, the same for every reader


def test_delete_on_one_process_stops_the_run_on_the_other(shared_redis: RedisServer) -> None:
    # A long lease: a producer that a loaded machine kept from renewing a one-second lease
    # would end as lost, not stopped; the stop itself does not wait on the lease.
    with (
        paced_openai(PIECES) as upstream,
        runport_serve(shared_redis.url, upstream.url, "--lease", "10") as one,
        runport_serve(shared_redis.url, upstream.url, "--lease", "10") as two,
        httpx.Client(timeout=30) as http,
    ):
        upstream.release(1)
        with http.stream("POST", one.url + STORY, json=INPUTS, headers=SSE) as response:
            run_id = response.headers["x-runport-run-id"]
            stream = frames(response.iter_lines())
            first = next(stream)
            stopped = http.delete(f"{two.url}/v1/runs/{run_id}")
            assert stopped.status_code == 202
            rest = list(stream)
        assert upstream.hung_up.wait(30)  # process one closed its upstream
        assert not upstream.finished.is_set()
    got = [first, *rest]
    check_numbered(got, run_id)
    assert [frame.event for frame in got] == ["Delta", "Failed", "envelope"]
    assert json.loads(got[1].data)["code"] == ErrorCode.CALLER_STOPPED


@pytest.fixture(scope="module")
def two_apps(shared_redis: RedisServer) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """Two servers in this process, each with its own connection to the one Redis: as two
    processes behind a balancer see the log (the subprocess tests above show the same)."""
    first = create_app(catalog(), THINKING, event_log=RedisEventLog(shared_redis.url, lease=1))
    second = create_app(catalog(), THINKING, event_log=RedisEventLog(shared_redis.url, lease=1))
    with (
        serve_in_background(first) as one,
        serve_in_background(second) as two,
        httpx.Client(base_url=one, timeout=30) as http_one,
        httpx.Client(base_url=two, timeout=30) as http_two,
    ):
        yield http_one, http_two


@pytest.fixture(scope="module")
def whole(two_apps: tuple[httpx.Client, httpx.Client]) -> list[Frame]:
    response = two_apps[0].post(STORY, json=INPUTS, headers=SSE)
    got = parse(response.text)
    check_numbered(got, response.headers["x-runport-run-id"])
    return got


@settings(
    deadline=None,
    max_examples=max(1, settings.default.max_examples // 10),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(cut=st.integers(min_value=0, max_value=8), elsewhere=st.booleans())
def test_a_cut_at_a_sampled_frame_resumed_on_either_server_is_the_uninterrupted_stream(
    two_apps: tuple[httpx.Client, httpx.Client], whole: list[Frame], cut: int, elsewhere: bool
) -> None:
    start, resume = two_apps if elsewhere else (two_apps[0], two_apps[0])
    with start.stream("POST", STORY, json=INPUTS, headers=SSE) as response:
        run_id = response.headers["x-runport-run-id"]
        before = read_some(response, cut)
    headers = {"Last-Event-ID": f"{run_id}:{cut}"} if cut else {}
    after = resume.get(f"/v1/runs/{run_id}/events", headers=headers)
    got = [*before, *parse(after.text)]
    check_numbered(got, run_id)
    assert [frame.same_event() for frame in got] == [frame.same_event() for frame in whole]


def test_bad_resumes_are_refused_the_same_on_redis(
    two_apps: tuple[httpx.Client, httpx.Client], whole: list[Frame]
) -> None:
    http = two_apps[1]
    run_id = whole[0].run_id
    for value in ("x", f"{run_id}:01", f"{'0' * 32}:1", f"{run_id}:{whole[-1].seq + 1}"):
        response = http.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": value})
        assert response.status_code == 400, value
        assert _error(response) == ErrorCode.DATA_INVALID
    gone = http.get(f"/v1/runs/{'a' * 32}/events", headers={"Last-Event-ID": f"{'a' * 32}:2"})
    assert gone.status_code == 404
    assert _error(gone) == ErrorCode.RUN_NOT_FOUND
    done = http.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": whole[-1].id or ""})
    assert done.status_code == 204


def test_a_finished_run_expires_after_its_retention(shared_redis: RedisServer) -> None:
    log = RedisEventLog(shared_redis.url, retention=0.3)
    app = create_app(catalog(), THINKING, event_log=log)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        run_id = http.post(STORY, json=INPUTS, headers=SSE).headers["x-runport-run-id"]
        deadline = time.monotonic() + 30
        while http.get(f"/v1/runs/{run_id}/events").status_code != 404:
            assert time.monotonic() < deadline
            time.sleep(0.02)


def test_redis_lost_mid_run_fails_the_run_and_the_server_stays_up(paced: PacedUpstream) -> None:
    with redis_server() as own:
        app = create_app(catalog(), paced.adapter, event_log=RedisEventLog(own.url, lease=1))
        with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
            paced.release(1)
            with http.stream("POST", STORY, json=INPUTS, headers=SSE) as response:
                run_id = response.headers["x-runport-run-id"]
                stream = frames(response.iter_lines())
                first = next(stream)
                own.stop()
                rest = list(stream)
            assert paced.closed.wait(30)  # the run stopped: its upstream was closed
            assert http.get("/v1/contracts").status_code == 200
            refused = http.post(STORY, json=INPUTS, headers=SSE)
            assert refused.status_code == 503
            assert _error(refused) == ErrorCode.EVENT_LOG_UNAVAILABLE
            own.start()  # Redis is back (empty): new runs work again
            paced.release_all()
            again = parse(http.post(STORY, json=INPUTS, headers=SSE).text)
            assert [frame.event for frame in again][-2:] == ["Complete", "envelope"]
    assert first.id == f"{run_id}:1"
    assert [frame.event for frame in rest] == ["Failed", "envelope"]
    assert [frame.id for frame in rest] == [None, None]  # a later resume starts after frame 1
    assert json.loads(rest[0].data)["code"] == ErrorCode.EVENT_LOG_UNAVAILABLE


class Flood(AsyncRuntimeAdapter):
    """An adapter that sends ``count`` deltas of ``size`` characters as fast as it can. Its
    receipt's text is short, so the run's last frames are small and the deltas are the
    backlog (a test double's receipt need not repeat them)."""

    DESCRIPTOR = AdapterDescriptor(id="flood", version="0.1.0", capabilities=["streaming", "text"])

    def __init__(self, count: int, size: int) -> None:
        self.count = count
        self.piece = "x" * size

    def descriptor(self) -> AdapterDescriptor:
        return self.DESCRIPTOR

    def receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        return build_receipt(request, adapter=self.DESCRIPTOR, text="flood", finish_reason="stop")

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.receipt(request)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        for _ in range(self.count):
            await deliver(sink, Delta(text=self.piece))
        receipt = self.receipt(request)
        await deliver(sink, Complete(receipt=receipt))
        return receipt


def test_a_slow_reader_leaves_the_backlog_in_the_log_not_in_the_server(
    shared_redis: RedisServer,
) -> None:
    count, size = 2_000, 4_096
    total = count * size
    app = create_app(catalog(), Flood(count, size), event_log=RedisEventLog(shared_redis.url))

    async def read(url: str, stall: bool) -> int:
        async with (
            httpx.AsyncClient(base_url=url, timeout=60) as http,
            http.stream("POST", STORY, json=INPUTS, headers=SSE) as response,
        ):
            run_id = response.headers["x-runport-run-id"]
            if stall:  # read nothing until the whole run is in the log
                watcher = RedisEventLog(shared_redis.url)
                while not (state := await watcher.state(run_id)) or not state.finished:
                    await asyncio.sleep(0.01)
                await watcher.close()
            received = 0
            async for chunk in response.aiter_bytes():
                received += len(chunk)
            return received

    peaks: dict[bool, int] = {}
    with serve_in_background(app) as url:
        asyncio.run(read(url, False))  # warm: imports, scripts, connections
        tracemalloc.start()
        try:
            for stall in (False, True):
                tracemalloc.reset_peak()
                assert asyncio.run(read(url, stall)) > total  # every delta arrived
                peaks[stall] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    grew = peaks[True] - peaks[False]
    print(f"\na stalled reader's run peaked {grew / total:+.2f}x the run's text above a prompt one")
    # A server that kept the stalled reader's backlog in its socket would hold one more copy
    # of the run; here the log holds it, and the server at most one read's worth of frames.
    assert grew < total / 2, peaks


def test_a_chat_whose_producer_is_killed_ends_as_a_chat_on_every_route(
    shared_redis: RedisServer,
) -> None:
    """The ending of a lost producer's run goes into the log for every reader, so it is in
    the run's protocol even when the reader that found the lease gone came through
    ``/v1/runs/{id}/events``: the chat route then replays the UI stream's own ending."""
    chat = "/v1/contracts/demo.story/chat"
    body = {
        "id": "chat-lost",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "logs"}]}],
        "trigger": "submit-message",
    }
    with (
        paced_openai(PIECES) as upstream,
        runport_serve(shared_redis.url, upstream.url, "--lease", "1") as one,
        runport_serve(shared_redis.url, upstream.url, "--lease", "1") as two,
        httpx.Client(timeout=30) as http,
    ):
        upstream.release(1)
        with http.stream("POST", one.url + chat, json=body) as response:
            run_id = response.headers["x-runport-run-id"]
            before = read_some(response, 1)
            with http.stream("GET", f"{two.url}/v1/runs/{run_id}/events") as reader:
                stream = frames(reader.iter_lines())
                assert next(stream) == before[0]
                one.process.send_signal(signal.SIGKILL)
                one.process.wait(timeout=30)
                rest = list(stream)
        again = parse(http.get(f"{two.url}{chat}/chat-lost/stream?finished=true").text)
    assert rest[-1].data == "[DONE]"
    chunks = [json.loads(frame.data) for frame in rest[:-1]]
    assert [chunk["type"] for chunk in chunks][-2:] == ["error", "finish"]
    assert chunks[-2]["errorText"].startswith(ErrorCode.RUN_PRODUCER_LOST)
    assert all(frame.event == "message" for frame in rest)  # no runport event names
    check_numbered([before[0], *rest], run_id)
    assert again == [before[0], *rest]


def test_redis_lost_mid_chat_ends_the_chat_stream_in_its_own_protocol(
    paced: PacedUpstream,
) -> None:
    """A chat reader whose log fails ends with the UI stream's error, finish and [DONE] (no
    ``id:``), which the AI SDK shows as the chat's error, not runport's own ``Failed``."""
    body = {
        "id": "chat-redis-lost",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "logs"}]}],
        "trigger": "submit-message",
    }
    with redis_server() as own:
        app = create_app(catalog(), paced.adapter, event_log=RedisEventLog(own.url, lease=1))
        with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
            paced.release(1)
            with http.stream("POST", "/v1/contracts/demo.story/chat", json=body) as response:
                stream = frames(response.iter_lines())
                first = next(stream)
                own.stop()
                rest = list(stream)
            assert paced.closed.wait(30)
    assert json.loads(first.data)["type"] == "start"
    assert [frame.id for frame in rest][-3:] == [None, None, None]
    assert rest[-1].data == "[DONE]"
    error, finish = (json.loads(frame.data) for frame in rest[-3:-1])
    assert error["type"] == "error"
    assert error["errorText"].startswith(ErrorCode.EVENT_LOG_UNAVAILABLE)
    assert finish == {"type": "finish", "finishReason": "error"}
    assert all(frame.event == "message" for frame in rest)


def test_a_reader_stalled_past_its_run_s_expiry_ends_with_run_not_found(
    shared_redis: RedisServer,
) -> None:
    paced = PacedUpstream(["x" * 30_000] * 200 + ["."] * 200)
    log = LoopWatch(RedisEventLog(shared_redis.url))
    app = create_app(catalog(), paced.adapter, event_log=log)
    client = redis.Redis.from_url(shared_redis.url)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        reader = SlowReader(url, "POST", STORY, INPUTS)
        run_id = reader.head()["x-runport-run-id"]
        paced.release_all()
        last = 402
        done = f"/v1/runs/{run_id}/events?after={last}"
        deadline = time.monotonic() + 30
        while http.get(done).status_code != 204:  # finished, its reader still far behind
            assert time.monotonic() < deadline, "the run never finished"
            time.sleep(0.01)
        client.delete(*run_keys(run_id))  # its retention passes
        answer = reader.drain()
    client.close()
    assert check_ended(answer, run_id, 0) == "not found"
    assert len(answer.got) - 2 < last
    assert log.held == []


def run_keys(run_id: str) -> list[str]:
    """Every key of a run (redis_log's layout): what its expiry removes."""
    return [f"runport:{{{run_id}}}:{suffix}" for suffix in "emlrs"]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sizes=SIZES, ops=OPS)
def test_every_reader_of_the_redis_log_ends_and_none_holds_the_loop(
    shared_redis: RedisServer, sizes: list[int], ops: list[tuple[Any, ...]]
) -> None:
    log = LoopWatch(RedisEventLog(shared_redis.url))
    upstreams = Upstreams()
    app = create_app(catalog(), upstreams.adapter, event_log=log)
    client = redis.Redis.from_url(shared_redis.url)
    try:
        with serve_in_background(app) as url:
            drive(url, upstreams, log, lambda run_id: client.delete(*run_keys(run_id)), sizes, ops)
    finally:
        client.close()
    assert log.reads > 0


def test_a_paused_chat_is_resumed_by_a_second_process_after_the_first_is_gone(
    shared_redis: RedisServer, tmp_path: Path
) -> None:
    """A person in the loop across processes (adr/0069): one ``runport serve`` pauses the
    chat at a call that needs approval and stops; another, with the same key, takes the
    answered message and runs the approved call once — the continuation is in the message,
    nothing of the chat was in the first process's memory. A replay of the answer to a third
    process is refused: the continuation was spent in the shared log."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "notes.txt").write_text("keep?")
    key = tmp_path / "key"
    key.write_bytes(b"the key the servers of one deployment share")
    args = (
        "--contracts",
        CONTRACTS,
        "--adapter",
        "openai",
        "--tools",
        "chat_tools:APPROVAL_TOOLS",
        "--resumable",
        "--event-log",
        shared_redis.url,
        "--reasoning-key-file",
        key,
    )
    upstream = DeletingOpenAI()
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "notes.txt"}]}
    body: dict[str, Any] = {"id": "chat-approve", "messages": [user]}
    with upstream.serve() as base_url:
        env = {
            "RUNPORT_OPENAI_BASE_URL": base_url,
            "RUNPORT_OPENAI_MODEL": "deleting",
            "RUNPORT_OPENAI_RESPONSE_FORMAT": "none",
            FILES_FOLDER: str(files),
        }
        with serve_chat(*args, env=env) as first:
            paused = httpx.post(f"{first}{CHAT}", json=body, timeout=30)
        assert paused.status_code == 200, paused.text
        message = paused_message(chunks(paused.text))
        answered_body = {**body, "messages": [user, answered(message, call_del=True)]}
        assert (files / "notes.txt").exists()
        with serve_chat(*args, env=env) as second:
            resumed = httpx.post(f"{second}{CHAT}", json=answered_body, timeout=30)
            assert resumed.status_code == 200, resumed.text
            sent = chunks(resumed.text)
        with serve_chat(*args, env=env) as third:  # a replay elsewhere: the log says spent
            replayed = httpx.post(f"{third}{CHAT}", json=answered_body, timeout=30)
    assert {
        "type": "tool-output-available",
        "toolCallId": "call-del",
        "output": "deleted notes.txt",
    } in sent
    text = "".join(chunk["delta"] for chunk in sent if chunk["type"] == "text-delta")
    assert json.loads(text) == {"coat": "deleted notes.txt"}
    assert not (files / "notes.txt").exists()
    assert (replayed.status_code, replayed.json()["error"]["code"]) == (
        400,
        "TQX_CONTINUATION_INVALID",
    )
    assert (files / "deleted.log").read_text() == "notes.txt\n"  # run once
