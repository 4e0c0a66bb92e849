"""The request a driver sends is the one ``client.build_request`` would make, byte for byte on
the wire, whatever the client carries: its own headers (changed between calls or not), cookies
(set by an earlier response), query parameters, a ``build_request`` of its own. The merged
head is made once per adapter; these tests say it never goes stale."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import FaultServer, fixed_reply
from runport.http import AsyncHTTPAdapter, HTTPAdapter

from .http_faults import API_KEY, LineCodec, make_request

ANSWER = fixed_reply("200 OK", {"Content-Type": "application/json"}, b'{"text": "hi"}')


def _what_httpx_sends(client: httpx.Client, server: FaultServer, text: str) -> None:
    """The codec's request as httpx itself builds it on ``client``."""
    wire = LineCodec().encode(make_request(text), stream=False)
    built = client.build_request(
        wire.method,
        server.base_url + "/lines",
        content=wire.body,
        headers={"Accept-Encoding": "identity", **wire.headers},
    )
    client.send(built).close()


def _exchange_both(client: httpx.Client, text: str = "hello") -> tuple[bytes, bytes]:
    """What the adapter's call and httpx's own request put on the wire."""
    server = FaultServer([ANSWER])
    try:
        adapter = HTTPAdapter(LineCodec(), base_url=server.base_url, http_client=client)
        assert adapter.execute(make_request(text)).text == "hi"
        _what_httpx_sends(client, server, text)
        return server.requests[0], server.requests[1]
    finally:
        server.close()


class _OwnBuild(httpx.Client):
    def build_request(self, method: str, url: httpx.URL | str, **kwargs: Any) -> httpx.Request:
        request = super().build_request(method, url, **kwargs)
        request.headers["X-Built-By"] = "subclass"
        return request


CLIENTS: dict[str, Callable[[], httpx.Client]] = {
    "default": httpx.Client,
    "own headers": lambda: httpx.Client(headers={"X-Team": "blue", "Accept": "text/plain"}),
    "cookies": lambda: httpx.Client(cookies={"session": "s1"}),
    "query parameters": lambda: httpx.Client(params={"api-version": "2024-10-21"}),
    "own build_request": _OwnBuild,
    "a Host header": lambda: httpx.Client(headers={"Host": "upstream.example"}),
    "a non-ASCII header": lambda: httpx.Client(headers={b"X-Name": "Zoë".encode("latin-1")}),
}


@pytest.mark.parametrize("kind", sorted(CLIENTS))
def test_the_adapter_sends_what_build_request_makes(kind: str) -> None:
    with CLIENTS[kind]() as client:
        ours, theirs = _exchange_both(client)
    assert ours == theirs
    assert API_KEY.encode() in ours  # the codec's own header is in the merged head


def test_a_second_call_sends_the_same_head() -> None:
    with httpx.Client(headers={"X-Team": "blue"}) as client:
        server = FaultServer([ANSWER])
        try:
            adapter = HTTPAdapter(LineCodec(), base_url=server.base_url, http_client=client)
            adapter.execute(make_request("one"))
            adapter.execute(make_request("two, a longer one"))
            _what_httpx_sends(client, server, "two, a longer one")
        finally:
            server.close()
    assert server.requests[1] == server.requests[2]  # the length follows the body


def test_client_headers_changed_between_calls_are_sent() -> None:
    with httpx.Client() as client:
        server = FaultServer([ANSWER])
        try:
            adapter = HTTPAdapter(LineCodec(), base_url=server.base_url, http_client=client)
            adapter.execute(make_request())
            client.headers["X-Team"] = "green"  # changed in place
            adapter.execute(make_request())
            client.headers = httpx.Headers({"X-Other": "1"})  # replaced
            adapter.execute(make_request())
            _what_httpx_sends(client, server, "hello")
        finally:
            server.close()
    first, changed, replaced, theirs = server.requests
    assert b"x-team" not in first.lower()
    assert b"X-Team: green\r\n" in changed
    assert b"x-team" not in replaced.lower()
    assert b"X-Other: 1\r\n" in replaced
    assert replaced == theirs


def test_a_cookie_an_answer_set_goes_with_the_next_call() -> None:
    setting = fixed_reply(
        "200 OK",
        {"Content-Type": "application/json", "Set-Cookie": "affinity=node-7; Path=/"},
        b'{"text": "hi"}',
    )
    with httpx.Client() as client:
        server = FaultServer([setting, ANSWER])
        try:
            adapter = HTTPAdapter(LineCodec(), base_url=server.base_url, http_client=client)
            adapter.execute(make_request())
            adapter.execute(make_request())
            _what_httpx_sends(client, server, "hello")
        finally:
            server.close()
    assert b"cookie" not in server.requests[0].lower()
    assert b"Cookie: affinity=node-7\r\n" in server.requests[1]
    assert server.requests[1] == server.requests[2]


def test_the_request_hooks_see_is_whole_and_its_timeouts_are_cut_to_the_deadline() -> None:
    seen: list[httpx.Request] = []
    with httpx.Client(
        timeout=httpx.Timeout(5.0, read=0.5), event_hooks={"request": [seen.append]}
    ) as client:
        server = FaultServer([ANSWER])
        try:
            far = HTTPAdapter(LineCodec(), base_url=server.base_url, http_client=client)
            near = HTTPAdapter(
                LineCodec(), base_url=server.base_url, http_client=client, deadline=2.0
            )
            far.execute(make_request())
            near.execute(make_request())
        finally:
            server.close()
    assert json.loads(seen[0].content) == {"prompt": "hello", "stream": False}
    assert seen[0].extensions["timeout"] == {"connect": 5.0, "read": 0.5, "write": 5.0, "pool": 5.0}
    cut = seen[1].extensions["timeout"]
    assert cut["read"] == 0.5
    assert 0 < cut["connect"] <= 2.0
    assert cut["connect"] == cut["write"] == cut["pool"]


@pytest.fixture
def async_server() -> Iterator[FaultServer]:
    server = FaultServer([ANSWER])
    try:
        yield server
    finally:
        server.close()


def test_the_async_adapter_sends_what_build_request_makes(async_server: FaultServer) -> None:
    async def main() -> None:
        async with httpx.AsyncClient(headers={"X-Team": "blue"}) as client:
            adapter = AsyncHTTPAdapter(
                LineCodec(), base_url=async_server.base_url, http_client=client
            )
            assert (await adapter.execute(make_request())).text == "hi"
            client.headers["X-Team"] = "green"
            await adapter.execute(make_request())
            wire = LineCodec().encode(make_request(), stream=False)
            built = client.build_request(
                wire.method,
                async_server.base_url + "/lines",
                content=wire.body,
                headers={"Accept-Encoding": "identity", **wire.headers},
            )
            await (await client.send(built)).aclose()

    asyncio.run(main())
    first, changed, theirs = async_server.requests
    assert b"X-Team: blue\r\n" in first
    assert changed == theirs
