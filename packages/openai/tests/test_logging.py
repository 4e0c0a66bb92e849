"""What the adapter logs (docs/observability.md): the wire at DEBUG on ``runport.http``, once
per step of a call, and never the key, a body, or the model's text."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.conformance.providers import make_request
from runport.contracts import ErrorCode
from runport.openai import AsyncOpenAIChatAdapter, OpenAIChatAdapter, create_adapter
from runport.ports import PortError

from .openai_upstream import (
    API_KEY,
    LoopbackUpstream,
    Reply,
    Reset,
    completion,
    finish_chunk,
    sse,
    text_chunk,
    usage_chunk,
)


def wire(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, str]]:
    return [
        (record.name, record.levelno, record.getMessage())
        for record in caplog.records
        if record.name.startswith("runport.")
    ]


def test_a_streamed_call_logs_what_was_sent_then_one_summary(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    frames = [sse([text_chunk("Hel")], done=False), sse([text_chunk("lo"), finish_chunk()])]
    upstream.queue(Reply(frames))
    with caplog.at_level(logging.DEBUG, logger="runport"):
        adapter.execute_streaming(make_request(), lambda event: None)
    target = f"POST {upstream.base_url}/chat/completions"
    [(name, level, sent), summary] = wire(caplog)
    assert (name, level, sent) == ("runport.http", logging.DEBUG, f"{target}: sending (streamed)")
    assert summary[:2] == ("runport.http", logging.DEBUG)
    size = sum(map(len, frames))
    assert re.fullmatch(
        rf"{re.escape(target)}: status 200, read {size} bytes in [12] reads", summary[2]
    )


def test_an_unstreamed_error_status_and_a_refused_connection_are_logged(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.queue(Reply.json({"error": {"message": "slow down"}}, status=429))
    with caplog.at_level(logging.DEBUG, logger="runport"), pytest.raises(PortError):
        adapter.execute(make_request())
    assert [message for _, _, message in wire(caplog)][1].endswith(
        ": status 429, read 0 bytes in 0 reads"
    )
    caplog.clear()
    port = httpx.URL(upstream.base_url).port
    upstream.close()
    refused = OpenAIChatAdapter(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key=API_KEY)
    with caplog.at_level(logging.DEBUG, logger="runport"), pytest.raises(PortError):
        refused.execute(make_request())
    assert wire(caplog)[-1] == (
        "runport.http",
        logging.DEBUG,
        f"POST http://127.0.0.1:{port}/v1/chat/completions: not sent, "
        "TQX_RUNTIME_UNAVAILABLE (ConnectError)",
    )


def test_a_reset_after_finish_reason_but_before_done_keeps_nothing(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    """A finish reason is not the completion marker (servers put one on every chunk): the
    answer is not kept, and no warning says it was (the driver's warning for a transport
    failure after the marker is tested in runport-http's tests)."""
    upstream.queue(
        Reply([sse([text_chunk("hi"), finish_chunk(), usage_chunk()], done=False), Reset()])
    )
    with caplog.at_level(logging.WARNING, logger="runport"), pytest.raises(PortError) as raised:
        adapter.execute_streaming(make_request(), lambda event: None)
    assert raised.value.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert wire(caplog) == []


def test_create_adapter_says_where_it_goes_but_not_with_what(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with caplog.at_level(logging.INFO, logger="runport"):
        create_adapter(base_url="https://example.test/v1?api_key=zzz", model="m", api_key=API_KEY)
        # user-info beside a key is refused (issue 22): the URL's credentials come alone
        create_adapter(base_url="https://user:pw@example.test/v1?api_key=zzz", model="m")
    assert wire(caplog) == [
        (
            "runport.openai",
            logging.INFO,
            "openai adapter: https://example.test/v1?api_key=***, model m, with an API key",
        ),
        (
            "runport.openai",
            logging.INFO,
            "openai adapter: https://example.test/v1?api_key=***, model m, without an API key",
        ),
    ]


# Text a model or an upstream might send: anything printable, long enough not to occur by
# chance in a log line about a URL and some counts.
TEXT = st.text(
    alphabet=st.characters(categories=("L", "N", "P", "S", "Zs")), min_size=12, max_size=60
).filter(lambda text: text.strip() == text)

SHAPES = ["streamed", "unstreamed", "error", "error in stream"]


def reply(shape: str, text: str) -> Reply:
    if shape == "streamed":
        return Reply([sse([text_chunk(text), finish_chunk(), usage_chunk()])])
    if shape == "unstreamed":
        return Reply.json(completion(text))
    if shape == "error":
        return Reply.json({"error": {"message": text}}, status=500)
    return Reply([sse([text_chunk("ok"), {"error": {"message": text}}])])


def rendered(records: list[logging.LogRecord]) -> list[str]:
    """Every way a handler could show a record: the formatted message and each argument."""
    shown = []
    for record in records:
        shown.append(record.getMessage())
        shown.extend(map(str, record.args or ()))
        shown.extend(map(repr, record.args or ()))
    return shown


@settings(
    max_examples=settings.default.max_examples // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=TEXT, shape=st.sampled_from(SHAPES), kind=st.sampled_from(["sync", "async"]))
def test_no_record_holds_the_key_a_body_or_the_text(
    upstream: LoopbackUpstream, caplog: pytest.LogCaptureFixture, text: str, shape: str, kind: str
) -> None:
    upstream.queue(reply(shape, text))
    caplog.clear()
    stream = shape != "unstreamed"
    with caplog.at_level(logging.DEBUG):
        outcome: Any
        try:
            if kind == "sync":
                with OpenAIChatAdapter(
                    base_url=upstream.base_url, model="m", api_key=API_KEY
                ) as adapter:
                    request = make_request()
                    if stream:
                        outcome = adapter.execute_streaming(request, lambda event: None)
                    else:
                        outcome = adapter.execute(request)
            else:
                outcome = asyncio.run(call_async(upstream.base_url, stream))
        except PortError as error:
            outcome = error
    assert outcome is not None
    records = [record for record in caplog.records if record.name.startswith("runport")]
    assert len(records) >= 2  # the request sent, and its summary
    for shown in rendered(records):
        assert API_KEY not in shown
        assert text not in shown


async def call_async(base_url: str, stream: bool) -> Any:
    adapter = AsyncOpenAIChatAdapter(base_url=base_url, model="m", api_key=API_KEY)
    try:
        if stream:
            return await adapter.execute_streaming(make_request(), lambda event: None)
        return await adapter.execute(make_request())
    finally:
        await adapter.aclose()
