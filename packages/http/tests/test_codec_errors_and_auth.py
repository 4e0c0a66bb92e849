"""A codec's own reading of an error status (``Codec.error_code``) and an adapter's
``auth`` (an ``httpx.Auth`` that signs each request as it is sent), on both drivers, against a
loopback server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Generator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance.loopback import FaultServer, fixed_reply
from runport.contracts import ErrorCode
from runport.http import AsyncHTTPAdapter, HTTPAdapter, status_error
from runport.ports import PortError

from .http_faults import LineCodec, frames, make_request

RETRYABLE = (
    ErrorCode.RUNTIME_RATE_LIMITED,
    ErrorCode.RUNTIME_UNAVAILABLE,
    ErrorCode.RUNTIME_TIMEOUT,
)


class DependencyCodec(LineCodec):
    """A provider whose 424 (a model that failed behind it, as Bedrock answers) is worth
    another try, and whose ``{"error": {"kind": "quota"}}`` 429 is not."""

    def error_code(self, status: int, body: Any) -> ErrorCode | None:
        if status == 424:
            return ErrorCode.RUNTIME_UNAVAILABLE
        if (
            status == 429
            and isinstance(body, dict)
            and body.get("error", {}).get("kind") == "quota"
        ):
            return ErrorCode.RUNTIME_PERMANENT
        return None


def _error(
    codec: LineCodec, status: str, body: dict[str, Any], headers: dict[str, str]
) -> PortError:
    data = json.dumps(body).encode()
    reply = {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}
    server = FaultServer([fixed_reply(status, reply, data)])
    try:
        with (
            HTTPAdapter(codec, base_url=server.base_url) as adapter,
            pytest.raises(PortError) as raised,
        ):
            adapter.execute(make_request())
        return raised.value
    finally:
        server.close()


def test_a_codec_makes_a_424_retryable_with_its_hint() -> None:
    body = {"error": {"message": "the model failed to answer"}}
    plain = _error(LineCodec(), "424 Failed Dependency", body, {"Retry-After": "3"})
    assert plain.code == ErrorCode.RUNTIME_PERMANENT
    error = _error(DependencyCodec(), "424 Failed Dependency", body, {"Retry-After": "3"})
    assert error.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert error.retry_after_ms == 3000
    assert error.message == (
        "the upstream failed (HTTP 424 Failed Dependency): the model failed to answer"
    )


def test_a_codec_makes_a_429_permanent_and_keeps_the_rest_as_the_status_says() -> None:
    quota = _error(DependencyCodec(), "429 Too Many Requests", {"error": {"kind": "quota"}}, {})
    assert quota.code == ErrorCode.RUNTIME_PERMANENT
    assert quota.message == "the upstream refused the request (HTTP 429 Too Many Requests)"
    busy = _error(DependencyCodec(), "429 Too Many Requests", {"error": {"kind": "rpm"}}, {})
    assert busy.code == ErrorCode.RUNTIME_RATE_LIMITED


@settings(max_examples=100, deadline=None)
@given(
    status=st.integers(100, 599),
    code=st.none() | st.sampled_from(list(ErrorCode)[:9]),
    after=st.none() | st.integers(0, 10**6),
)
def test_status_error_takes_the_codecs_code_and_hints_only_a_retryable_one(
    status: int, code: ErrorCode | None, after: int | None
) -> None:
    headers = {} if after is None else {"retry-after-ms": str(after)}
    error = status_error(status, headers, None, code=code)
    if code is not None:
        assert error.code == code
    assert f"HTTP {status}" in error.message
    if error.retry_after_ms is not None:
        assert error.code in (ErrorCode.RUNTIME_RATE_LIMITED, ErrorCode.RUNTIME_UNAVAILABLE)
        assert error.retry_after_ms == after


# --- auth ------------------------------------------------------------------------------------


class Stamp(httpx.Auth):
    """Signs each request with a header; on a 401, once more with a fresh stamp."""

    def __init__(self) -> None:
        self.stamps = 0

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        self.stamps += 1
        request.headers["x-stamp"] = str(self.stamps)
        response = yield request
        if response.status_code == 401:
            self.stamps += 1
            request.headers["x-stamp"] = str(self.stamps)
            yield request


class Refuses(httpx.Auth):
    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        raise PortError(ErrorCode.RUNTIME_PERMANENT, "no credentials to sign with")
        yield request  # pragma: no cover - a generator that never yields


def _stamped(seen: list[str]) -> Any:
    def answer(connection: Any, request: bytes) -> bool:
        stamp = next(
            line.split(b":", 1)[1].strip().decode()
            for line in request.split(b"\r\n")
            if line.lower().startswith(b"x-stamp:")
        )
        seen.append(stamp)
        if stamp == "1":
            return fixed_reply("401 Unauthorized", {"Content-Length": "0"}, b"")(
                connection, request
            )
        body = b"".join(frames("signed"))
        head = {"Content-Type": "text/event-stream", "Content-Length": str(len(body))}
        return fixed_reply("200 OK", head, body)(connection, request)

    return answer


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_an_adapters_auth_signs_each_request_and_may_send_it_again(driver: str) -> None:
    seen: list[str] = []
    server = FaultServer([_stamped(seen), _stamped(seen)])
    auth = Stamp()
    try:
        if driver == "sync":
            with HTTPAdapter(LineCodec(), base_url=server.base_url, auth=auth) as adapter:
                receipt = adapter.execute_streaming(make_request(), lambda event: None)
        else:

            async def run() -> Any:
                async with AsyncHTTPAdapter(
                    LineCodec(), base_url=server.base_url, auth=auth
                ) as adapter:
                    return await adapter.execute(make_request())

            receipt = asyncio.run(run())
    finally:
        server.close()
    assert receipt.text == "signed"
    assert seen == ["1", "2"]


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_an_auth_that_raises_a_port_error_fails_the_call_unsent(driver: str) -> None:
    server = FaultServer([])
    try:
        if driver == "sync":
            adapter = HTTPAdapter(LineCodec(), base_url=server.base_url, auth=Refuses())
            with adapter, pytest.raises(PortError) as raised:
                adapter.execute_streaming(make_request(), lambda event: None)
        else:

            async def run() -> None:
                async with AsyncHTTPAdapter(
                    LineCodec(), base_url=server.base_url, auth=Refuses()
                ) as adapter:
                    await adapter.execute(make_request())

            with pytest.raises(PortError) as raised:
                asyncio.run(run())
        assert server.requests == []
    finally:
        server.close()
    assert raised.value.code == ErrorCode.RUNTIME_PERMANENT
    assert raised.value.message == "no credentials to sign with"


def test_auth_must_be_an_httpx_auth() -> None:
    with pytest.raises(TypeError, match=r"httpx\.Auth"):
        HTTPAdapter(LineCodec(), base_url="http://127.0.0.1:9", auth=("user", "pass"))  # type: ignore[arg-type]
