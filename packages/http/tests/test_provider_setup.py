"""A provider's setup written once (``ProviderAdapter``, ``ProviderKeywords``,
``ProviderEnvironment``): a provider declared in a few lines gets its keywords checked, its
entry points reading the environment, and both drivers, against a real loopback server."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from functools import partial
from typing import Any, Unpack

import httpx
import pytest

from runport.conformance.loopback import FaultServer, sse_reply
from runport.contracts import Delta
from runport.http import (
    AsyncHTTPAdapter,
    ClientT,
    HTTPAdapter,
    HTTPRequest,
    ProviderAdapter,
    ProviderEnvironment,
    ProviderKeywords,
    encode_json,
)

from .http_faults import API_KEY, LineCodec, echo, make_request

ENV_VARIABLES = ("LINES_API_KEY", "LINES_KEY", "RUNPORT_LINES_MODEL", "RUNPORT_LINES_BASE_URL")


class KeyedLineCodec(LineCodec):
    """The test codec, with the model and the key it was built with in each request."""

    def __init__(self, *, model: str, api_key: str | None, shout: bool = False) -> None:
        self.model, self.api_key, self.shout = model, api_key, shout
        self.secrets = (api_key,) if api_key else ()

    def encode(self, request: Any, *, stream: bool) -> HTTPRequest:
        prompt = request.interaction.messages[-1].content
        body = {"prompt": prompt.upper() if self.shout else prompt, "model": self.model}
        headers = {"x-key": self.api_key} if self.api_key else {}
        return HTTPRequest("POST", "lines", encode_json({**body, "stream": stream}), headers)


class LinesKeywords(ProviderAdapter[ClientT]):
    endpoint = "/lines"

    def __init__(self, *, shout: bool = False, **keywords: Unpack[ProviderKeywords[ClientT]]):
        super().__init__(partial(KeyedLineCodec, shout=shout), **keywords)


class LinesAdapter(LinesKeywords[httpx.Client], HTTPAdapter):
    pass


class AsyncLinesAdapter(LinesKeywords[httpx.AsyncClient], AsyncHTTPAdapter):
    pass


class DefaultedLinesAdapter(LinesAdapter):
    default_base_url = "http://127.0.0.1:9/v1"


LINES = ProviderEnvironment(
    "lines",
    "RUNPORT_LINES",
    api_key=("LINES_API_KEY", "LINES_KEY"),
    example="RUNPORT_LINES_MODEL=lines-1",
    options={"shout": "RUNPORT_LINES_SHOUT"},
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*ENV_VARIABLES, "RUNPORT_LINES_SHOUT"):
        monkeypatch.delenv(name, raising=False)


def _posted(server: FaultServer) -> tuple[dict[str, Any], str]:
    head, _, body = server.requests[-1].partition(b"\r\n\r\n")
    key = next(
        (
            line.split(b":", 1)[1].strip().decode()
            for line in head.split(b"\r\n")[1:]
            if line.lower().startswith(b"x-key:")
        ),
        "",
    )
    return json.loads(body), key


def test_an_entry_point_reads_the_environment_and_posts_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = FaultServer([echo])
    try:
        monkeypatch.setenv("RUNPORT_LINES_BASE_URL", server.base_url)
        monkeypatch.setenv("RUNPORT_LINES_MODEL", "lines-2")
        monkeypatch.setenv("LINES_KEY", API_KEY)  # the second variable, the first unset
        create = LINES.entry_point(LinesAdapter)
        with create() as adapter:
            events: list[Any] = []
            receipt = adapter.execute_streaming(make_request("hi"), events.append)
        assert receipt.text == "".join(f"hi/{n}" for n in range(5))
        assert _posted(server) == ({"prompt": "hi", "model": "lines-2", "stream": True}, API_KEY)
        assert repr(adapter) == f"LinesAdapter(url='{server.base_url}/lines', model='lines-2')"
        assert API_KEY not in repr(adapter)
    finally:
        server.close()


def test_arguments_win_over_the_environment_and_options_pass_only_when_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = FaultServer([sse_reply([b"data: ok\n\n", b"data: [END]\n\n"])])
    try:
        monkeypatch.setenv("RUNPORT_LINES_BASE_URL", "http://127.0.0.1:9/v1")
        monkeypatch.setenv("RUNPORT_LINES_MODEL", "from-env")
        monkeypatch.setenv("LINES_API_KEY", "sk-from-env")
        create = LINES.entry_point(LinesAdapter)
        with create(base_url=server.base_url, model="given", api_key=API_KEY) as adapter:
            adapter.execute_streaming(make_request("hi"), lambda event: None)
        assert _posted(server) == ({"prompt": "hi", "model": "given", "stream": True}, API_KEY)
        monkeypatch.setenv("RUNPORT_LINES_SHOUT", "yes")  # any set value is passed on
        with create(base_url=server.base_url) as adapter:
            adapter.execute_streaming(make_request("hi"), lambda event: None)
        assert _posted(server) == (
            {"prompt": "HI", "model": "from-env", "stream": True},
            "sk-from-env",
        )
    finally:
        server.close()


def test_the_async_entry_point_builds_the_async_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FaultServer([echo])
    try:
        create = LINES.entry_point(AsyncLinesAdapter)
        adapter = create(base_url=server.base_url, model="lines-1", api_key=API_KEY)
        assert isinstance(adapter, AsyncLinesAdapter)

        async def run() -> list[Any]:
            events: list[Any] = []
            await adapter.execute_streaming(make_request("yo"), events.append)
            await adapter.aclose()
            return events

        events = asyncio.run(run())
        assert [event.text for event in events if isinstance(event, Delta)] == [
            f"yo/{n}" for n in range(5)
        ]
    finally:
        server.close()


def test_every_missing_setting_is_named_at_once_and_never_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    create = LINES.entry_point(LinesAdapter)
    with pytest.raises(
        ValueError,
        match=(
            r"the lines adapter needs RUNPORT_LINES_BASE_URL and LINES_API_KEY \(or LINES_KEY\) "
            r"and RUNPORT_LINES_MODEL \(e\.g\. RUNPORT_LINES_MODEL=lines-1\)"
        ),
    ):
        create()
    monkeypatch.setenv("LINES_API_KEY", API_KEY)
    defaulted = LINES.entry_point(DefaultedLinesAdapter)
    with pytest.raises(ValueError, match="needs RUNPORT_LINES_MODEL \\(") as raised:
        defaulted()  # the base URL has a default on this class, the key is set
    assert API_KEY not in str(raised.value)
    with defaulted(model="m") as adapter:
        assert "127.0.0.1:9" in repr(adapter)


def test_a_key_that_is_not_required_may_be_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    keyless = replace(LINES, key_required=False).entry_point(LinesAdapter)
    with keyless(base_url="http://127.0.0.1:9/v1", model="m") as adapter:
        assert adapter._codec.secrets == ()


def test_the_entry_point_says_where_it_goes_but_not_with_what(
    caplog: pytest.LogCaptureFixture,
) -> None:
    create = LINES.entry_point(LinesAdapter)
    logger = LinesAdapter.__module__  # the package the class is in (here, this test module)
    with caplog.at_level(logging.INFO, logger=logger):
        create(base_url="http://127.0.0.1:9/v1?token=zzz", model="m", api_key=API_KEY).close()
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            logger,
            logging.INFO,
            "lines adapter: http://127.0.0.1:9/v1?token=***, model m, with an API key",
        )
    ]


def test_an_entry_point_looks_like_a_function_with_keyword_settings() -> None:
    create = LINES.entry_point(LinesAdapter)
    parameters = inspect.signature(create).parameters
    assert list(parameters) == ["base_url", "model", "api_key", "shout"]
    assert all(p.kind is p.KEYWORD_ONLY and p.default is None for p in parameters.values())
    assert create.__name__ == "create_lines"
    assert "RUNPORT_LINES_MODEL" in (create.__doc__ or "")
    with pytest.raises(TypeError, match="scenario"):
        create(scenario="x.yaml")
    with pytest.raises(TypeError):
        create("http://127.0.0.1:9/v1")


def test_the_keyword_base_checks_what_every_provider_shares() -> None:
    with pytest.raises(TypeError, match="LinesAdapter needs the keyword base_url"):
        LinesAdapter(model="m")
    with pytest.raises(ValueError, match="model must name the upstream model"):
        LinesAdapter(base_url="http://127.0.0.1:9/v1", model="")
    with pytest.raises(ValueError, match="api_key must be printable ASCII") as raised:
        LinesAdapter(base_url="http://127.0.0.1:9/v1", model="m", api_key="sk-bad\nkey")
    assert "sk-bad" not in str(raised.value)
    with pytest.raises(ValueError, match="credentials"):
        LinesAdapter(base_url="http://u:p@127.0.0.1:9/v1", model="m", api_key=API_KEY)
    with DefaultedLinesAdapter(model="m", max_response_bytes=10) as adapter:
        assert adapter._settings.max_response_bytes == 10
        assert (
            repr(adapter) == "DefaultedLinesAdapter(url='http://127.0.0.1:9/v1/lines', model='m')"
        )
