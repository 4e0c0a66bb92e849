"""The request guard: DNS rebinding (``Host``) and cross-site requests (``Origin``,
``Content-Type``) are refused on every route, before anything runs."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Iterator

import httpx
import pytest

from runport.contracts import ExecutionRequest
from runport.mock import AsyncEmitter, AsyncFunctionRuntime
from runport.server import create_app, serve_in_background

from .conftest import catalog, still_serving

STORY = "/v1/contracts/demo.story/executions"
BODY = json.dumps({"inputs": {"topic": "ships"}}).encode()
JSON = {"Content-Type": "application/json"}
ROUTES = [
    ("GET", "/"),
    ("GET", "/playground.js"),
    ("GET", "/playground.css"),
    ("GET", "/v1/contracts"),
    ("POST", STORY),
    ("GET", "/v1/nothing-here"),
    ("OPTIONS", "/v1/contracts"),
]


class Counted:
    """An upstream that answers at once and counts the calls that reached it."""

    def __init__(self) -> None:
        self.calls = 0

    async def handler(self, request: ExecutionRequest, emit: AsyncEmitter) -> None:
        self.calls += 1
        await emit.text("The lighthouse keeper counted ships that never came.")
        await emit.finish("stop")

    def adapter(self) -> AsyncFunctionRuntime:
        return AsyncFunctionRuntime(self.handler)


@pytest.fixture(scope="module")
def counted() -> Counted:
    return Counted()


@pytest.fixture(scope="module")
def served(counted: Counted) -> Iterator[tuple[str, httpx.Client]]:
    app = create_app(
        catalog(),
        counted.adapter,
        cors_origins=["https://tool.example"],
        allowed_hosts=["runport.internal", "svc.internal:9000"],
    )
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield url, http


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize(
    "host",
    [
        "rebind.attacker.example:{port}",
        "rebind.attacker.example",
        "127.0.0.1.attacker.example:{port}",
        "localhost.attacker.example",
        "svc.internal:9001",
        "0.0.0.0:{port}",
        "",
        "user@127.0.0.1:{port}",
    ],
)
def test_a_host_the_server_does_not_answer_for_is_refused_on_every_route(
    served: tuple[str, httpx.Client], counted: Counted, method: str, path: str, host: str
) -> None:
    url, http = served
    before = counted.calls
    response = http.request(
        method, path, content=BODY, headers={**JSON, "Host": host.format(port=_port(url))}
    )
    assert response.status_code == 421
    error = response.json()["error"]
    assert error["code"] == "TQX_ACCESS_DENIED"
    assert "--allowed-host" in error["message"]
    assert "content-security-policy" not in response.headers
    assert counted.calls == before
    still_serving(http)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}",
        "localhost:{port}",
        "LOCALHOST:{port}",
        "[::1]:{port}",
        "localhost",
        "runport.internal",
        "runport.internal:{port}",
        "svc.internal:9000",
    ],
)
def test_loopback_names_and_allowed_hosts_are_served(
    served: tuple[str, httpx.Client], host: str
) -> None:
    url, http = served
    headers = {"Host": host.format(port=_port(url))}
    assert http.get("/", headers=headers).status_code == 200
    assert http.get("/v1/contracts", headers=headers).status_code == 200
    response = http.post(STORY, content=BODY, headers={**JSON, **headers})
    assert response.status_code == 200
    assert response.json()["ok"]


def test_the_address_a_connection_arrived_at_is_an_allowed_host() -> None:
    """A server bound to every address answers to the one the client named as an IP
    literal (that is not a rebinding: the page's origin is the server itself)."""
    app = create_app(catalog(), Counted().adapter)

    async def main() -> tuple[int, int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://192.0.2.7:8000") as c:
            own = await c.get("/v1/contracts")
            other = await c.get("/v1/contracts", headers={"Host": "192.0.2.8:8000"})
        return own.status_code, other.status_code

    assert asyncio.run(main()) == (200, 421)


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "https://tool.example:8443",
        "http://tool.example",
        "null",
        "http://127.0.0.1:1",
        "http://localhost:{port}.evil.example",
        "not an origin",
    ],
)
@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
def test_a_post_from_a_foreign_origin_is_refused_before_it_runs(
    served: tuple[str, httpx.Client], counted: Counted, origin: str, content_type: str
) -> None:
    url, http = served
    before = counted.calls
    response = http.post(
        STORY,
        content=BODY,
        headers={"Origin": origin.format(port=_port(url)), "Content-Type": content_type},
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "TQX_ACCESS_DENIED"
    assert counted.calls == before
    still_serving(http)


@pytest.mark.parametrize(
    "origin",
    ["http://127.0.0.1:{port}", "http://localhost:{port}", "https://tool.example", None],
)
def test_the_servers_own_origin_a_cors_origin_and_no_origin_may_post(
    served: tuple[str, httpx.Client], counted: Counted, origin: str | None
) -> None:
    url, http = served
    host = "localhost" if origin and "localhost" in origin else "127.0.0.1"
    headers = {**JSON, "Host": f"{host}:{_port(url)}"}
    if origin is not None:
        headers["Origin"] = origin.format(port=_port(url))
    before = counted.calls
    response = http.post(STORY, content=BODY, headers=headers)
    assert response.status_code == 200
    assert response.json()["ok"]
    assert counted.calls == before + 1


def test_the_own_origin_is_the_host_the_request_named(
    served: tuple[str, httpx.Client],
) -> None:
    """``http://localhost:PORT`` is not the origin of a request made to ``127.0.0.1:PORT``."""
    url, http = served
    port = _port(url)
    response = http.post(
        STORY,
        content=BODY,
        headers={**JSON, "Host": f"127.0.0.1:{port}", "Origin": f"http://localhost:{port}"},
    )
    assert response.status_code == 403


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "text/plain; charset=utf-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonp",
    ],
)
def test_a_body_that_is_not_sent_as_json_is_415_before_it_runs(
    served: tuple[str, httpx.Client], counted: Counted, content_type: str | None
) -> None:
    _url, http = served
    before = counted.calls
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = http.post(STORY, content=BODY, headers=headers)
    assert response.status_code == 415
    error = response.json()["error"]
    assert error["code"] == "TQX_DATA_INVALID"
    assert "application/json" in error["message"]
    assert counted.calls == before
    still_serving(http)


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "GZIP, identity"])
def test_a_compressed_body_is_415_before_it_runs(
    served: tuple[str, httpx.Client], counted: Counted, coding: str
) -> None:
    _url, http = served
    before = counted.calls
    headers = {**JSON, "Content-Encoding": coding}
    response = http.post(STORY, content=gzip.compress(BODY), headers=headers)
    assert response.status_code == 415
    error = response.json()["error"]
    assert error["code"] == "TQX_DATA_INVALID"
    assert error["message"] == (
        f"the body must be sent uncompressed, not with Content-Encoding {coding.lower()!r}"
    )
    assert counted.calls == before
    still_serving(http)


def test_a_body_sent_with_the_identity_coding_is_read(served: tuple[str, httpx.Client]) -> None:
    _url, http = served
    response = http.post(STORY, content=BODY, headers={**JSON, "Content-Encoding": "identity"})
    assert response.status_code == 200


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "Application/JSON"])
def test_json_with_parameters_or_in_capitals_is_json(
    served: tuple[str, httpx.Client], content_type: str
) -> None:
    _url, http = served
    response = http.post(STORY, content=BODY, headers={"Content-Type": content_type})
    assert response.status_code == 200


def test_a_cross_site_form_post_with_a_foreign_host_is_refused_by_the_host_first(
    served: tuple[str, httpx.Client], counted: Counted
) -> None:
    """What a rebound page sends: its own name as Host and Origin, a text/plain body."""
    url, http = served
    name = f"rebind.attacker.example:{_port(url)}"
    before = counted.calls
    response = http.post(
        STORY,
        content=BODY,
        headers={"Host": name, "Origin": f"http://{name}", "Content-Type": "text/plain"},
    )
    assert response.status_code == 421
    assert counted.calls == before


def test_a_cors_preflight_from_an_allowed_origin_is_answered(
    served: tuple[str, httpx.Client],
) -> None:
    _url, http = served
    response = http.options(
        STORY,
        headers={
            "Origin": "https://tool.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://tool.example"


@pytest.mark.parametrize(
    "entry", ["http://runport.internal", "runport.internal/path", "", "host:port", "[::1"]
)
def test_an_allowed_host_that_is_not_a_host_is_refused_at_start(entry: str) -> None:
    with pytest.raises(ValueError, match="allowed host"):
        create_app(catalog(), Counted().adapter, allowed_hosts=[entry])


def test_an_allowed_host_of_star_answers_for_any_name() -> None:
    app = create_app(catalog(), Counted().adapter, allowed_hosts=["*"])
    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        response = http.get("/v1/contracts", headers={"Host": "anything.example"})
        assert response.status_code == 200


@pytest.mark.parametrize(
    ("entry", "host"),
    [("::1", "[::1]:8000"), ("[fd00::1]", "[fd00:0::1]"), ("FD00::1", "[fd00::1]:80")],
)
def test_an_ipv6_allowed_host_is_matched_however_it_is_written(entry: str, host: str) -> None:
    app = create_app(catalog(), Counted().adapter, allowed_hosts=[entry])

    async def main() -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://192.0.2.7") as c:
            return (await c.get("/v1/contracts", headers={"Host": host})).status_code

    assert asyncio.run(main()) == 200
