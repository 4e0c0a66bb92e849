"""examples/starlette_stream under uvicorn on 127.0.0.1, read with httpx: the events of the
turn as server-sent events, then the envelope; a client leaving mid-stream cancels the run,
and the adapter closes its upstream."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "starlette_stream"
STORY = "Once upon a time, a fox counted stars until it slept."


@contextmanager
def served(env: Mapping[str, str]) -> Iterator[tuple[str, list[str]]]:
    """The example app under uvicorn, on a socket bound here (so no port can be taken in
    between); yields its base URL and a list that holds its stderr once it stopped."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    argv = [sys.executable, "-m", "uvicorn", "--app-dir", str(EXAMPLE), "--fd", str(sock.fileno())]
    process = subprocess.Popen(
        [*argv, "--log-level", "warning", "app:app"],
        pass_fds=[sock.fileno()],
        env={**os.environ, **env},
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr: list[str] = []
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", stderr
    finally:
        process.terminate()
        stderr.append(process.communicate(timeout=30)[1])
        sock.close()


def frames(response: httpx.Response) -> Iterator[tuple[str, Any]]:
    """``(event, decoded data)`` for each server-sent event, as it arrives."""
    held = ""
    for text in response.iter_text():
        held += text
        *complete, held = held.split("\n\n")
        for frame in complete:
            fields = dict(line.split(": ", 1) for line in frame.splitlines())
            yield fields["event"], json.loads(fields["data"])


def test_the_turn_streams_as_server_sent_events_then_the_envelope() -> None:
    with (
        served({"RUNPORT_EXAMPLE_ADAPTER": "mock"}) as (url, _),
        httpx.Client(base_url=url, timeout=60) as client,
        client.stream("GET", "/story", params={"topic": "a fox"}) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        seen = list(frames(response))
    kinds = [kind for kind, _ in seen]
    assert kinds == ["Delta"] * 11 + ["Complete", "envelope"]
    assert "".join(data["text"] for kind, data in seen if kind == "Delta") == STORY
    receipt = seen[-2][1]["receipt"]
    envelope = seen[-1][1]
    assert envelope["ok"] is True
    assert envelope["result"]["output"] == STORY == receipt["output"]
    assert envelope["result"]["output_fingerprint"] == receipt["output_fingerprint"]
    assert [event["kind"] for event in envelope["stream_events"]] == kinds[:-1]


def test_a_whole_run_streams_its_events_then_the_result_as_json() -> None:
    """The run's result ends the stream as its events do (``model_dump_json``), and reads
    back equal: a stream that yields it no longer breaks mid-response (issue 44)."""
    from runport.application import RunResult

    with (
        served({"RUNPORT_EXAMPLE_ADAPTER": "mock"}) as (url, _),
        httpx.Client(base_url=url, timeout=60) as client,
        client.stream("GET", "/run", params={"topic": "a fox"}) as response,
    ):
        assert response.status_code == 200
        text = response.read().decode("utf-8")
    seen = list(frames_of(text))
    kinds = [kind for kind, _ in seen]
    assert kinds == ["Delta"] * 11 + ["Complete", "result"]
    result = RunResult.model_validate_json(json.dumps(seen[-1][1]))
    assert result.output == STORY
    assert result.receipts[0].model_dump(mode="json") == seen[-2][1]["receipt"]
    assert json.loads(result.model_dump_json()) == seen[-1][1]


def frames_of(text: str) -> Iterator[tuple[str, Any]]:
    for frame in text.split("\n\n"):
        if frame:
            fields = dict(line.split(": ", 1) for line in frame.splitlines())
            yield fields["event"], json.loads(fields["data"])


def test_bad_input_ends_in_an_envelope_that_says_why() -> None:
    with (
        served({"RUNPORT_EXAMPLE_ADAPTER": "mock"}) as (url, _),
        httpx.Client(base_url=url, timeout=60) as client,
        client.stream("GET", "/story") as response,
    ):
        seen = list(frames(response))
    assert [kind for kind, _ in seen] == ["envelope"]
    assert seen[0][1]["ok"] is False
    assert seen[0][1]["diagnostics"][0]["code"] == "TQX_VALUE_SCHEMA"


def test_leaving_mid_stream_cancels_the_run_and_closes_the_upstream() -> None:
    pytest.importorskip("runport.openai")
    conformance = pytest.importorskip("runport.conformance")
    # Two deltas, then silence: only a caller stop ends the call before the upstream gives up
    # (30 s; the adapter itself would wait ten minutes).
    stall = next(case for case in conformance.CASES if case.name == "stall_after_deltas")
    upstream = conformance.ScriptedUpstream([stall], pacing="off")
    env = {
        "RUNPORT_EXAMPLE_ADAPTER": "openai",
        "RUNPORT_OPENAI_BASE_URL": upstream.base_url,
        "RUNPORT_OPENAI_MODEL": "tiny",
        "OPENAI_API_KEY": "sk-loopback",
    }
    try:
        with served(env) as (url, stderr):
            with (
                httpx.Client(base_url=url, timeout=60) as client,
                client.stream("GET", "/story", params={"topic": "a fox"}) as response,
            ):
                texts = []
                for kind, data in frames(response):
                    assert kind == "Delta"
                    texts.append(data["text"])
                    if len(texts) == 2:
                        break  # leaving the block closes the connection mid-stream
            assert texts == ["Slow", " start"]
            record = upstream.requests[0].settle(timeout=60)
            assert record.client_closed is True
        assert "the run was cancelled" in stderr[0]
    finally:
        upstream.close()
