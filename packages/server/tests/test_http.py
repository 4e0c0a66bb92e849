"""The HTTP surface over real uvicorn on 127.0.0.1, driven with httpx."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import socket
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.application import aexecute_contract, async_adapter_factory
from runport.contracts import OperationEnvelope, StreamEvent
from runport.mock import AsyncEmitter, AsyncFunctionRuntime, AsyncScriptedRuntime
from runport.ports import PortError
from runport.server import MemoryEventLog, create_app, prepare, serve_in_background

from .conftest import (
    CONTRACTS,
    SCENARIO,
    PacedUpstream,
    Thinking,
    catalog,
    parse_sse,
    split_stream,
    still_serving,
)

SSE = {"Accept": "text/event-stream"}
JSON = {"Content-Type": "application/json"}
STORY = "/v1/contracts/demo.story/executions"


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    app = create_app(catalog(), async_adapter_factory("mock", scenario=SCENARIO))
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def in_process(inputs: dict[str, object], *, streamed: bool) -> OperationEnvelope:
    events: list[StreamEvent] = []

    async def main() -> OperationEnvelope:
        return await aexecute_contract(
            catalog()["demo.story"],
            AsyncScriptedRuntime.from_scenario(SCENARIO),
            inputs=inputs,
            on_event=events.append if streamed else None,
        )

    return asyncio.run(main())


def test_the_listing_names_every_contract_with_its_input_schema(client: httpx.Client) -> None:
    response = client.get("/v1/contracts")
    assert response.status_code == 200
    listing = response.json()
    assert listing == {"contracts": catalog().describe()}
    assert [entry["id"] for entry in listing["contracts"]] == ["demo.forecast", "demo.story"]
    story = listing["contracts"][1]
    assert story["version"] == "1.0.0"
    assert story["input_schema"]["required"] == ["topic"]
    assert story["input_schema"]["properties"]["mood"]["enum"] == ["calm", "eerie", "cheerful"]


def test_an_execution_returns_the_envelope_the_application_returns(client: httpx.Client) -> None:
    response = client.post(STORY, json={"inputs": {"topic": "ships"}})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    envelope = OperationEnvelope.model_validate_json(response.content)
    assert envelope.ok
    assert envelope == in_process({"topic": "ships"}, streamed=False)
    assert envelope.result is not None
    assert envelope.result.output == "The lighthouse keeper counted ships that never came."


def test_each_request_plays_the_scenario_from_its_first_turn(client: httpx.Client) -> None:
    first = client.post(STORY, json={"inputs": {"topic": "ships"}}).json()
    second = client.post(STORY, json={"inputs": {"topic": "ships"}}).json()
    assert first["ok"]
    assert first == second


def test_a_streamed_execution_is_one_sse_event_per_stream_event_then_the_envelope(
    client: httpx.Client,
) -> None:
    with client.stream("POST", STORY, json={"inputs": {"topic": "ships"}}, headers=SSE) as got:
        assert got.status_code == 200
        assert got.headers["content-type"].startswith("text/event-stream")
        assert got.headers["cache-control"] == "no-cache"
        text = got.read().decode()
    frames = parse_sse(text)
    events, envelope = split_stream(frames)
    expected = in_process({"topic": "ships"}, streamed=True)
    assert expected.stream_events is not None
    assert events == expected.stream_events
    assert [name for name, _ in frames] == ["Delta", "Delta", "Delta", "Complete", "envelope"]
    assert envelope.stream_events is None
    assert "stream_events" not in json.loads(frames[-1][1])
    assert envelope == expected.model_copy(update={"stream_events": None})


def test_tool_call_fragments_stream_as_tool_call_delta_events() -> None:
    async def ask_for_weather(request: object, emit: object) -> None:
        from runport.mock import AsyncEmitter

        assert isinstance(emit, AsyncEmitter)
        await emit.tool_call_fragment(0, '{"city": ', call_id="c1", name="get_weather")
        await emit.tool_call_fragment(0, '"Delft"}')
        await emit.finish("tool_calls")

    app = create_app(catalog(), lambda: AsyncFunctionRuntime(ask_for_weather))
    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        got = http.post(
            "/v1/contracts/demo.forecast/executions",
            json={"inputs": {"city": "Delft"}},
            headers=SSE,
        )
    frames = parse_sse(got.text)
    _events, envelope = split_stream(frames)
    assert [name for name, _ in frames] == [
        "ToolCallDelta",
        "ToolCallDelta",
        "Complete",
        "envelope",
    ]
    assert envelope.result is not None
    assert [call.arguments for call in envelope.result.tool_calls] == [{"city": "Delft"}]
    assert [d.code for d in envelope.diagnostics] == ["TQX_TOOL_CALLS_PENDING"]


def test_reasoning_streams_as_reasoning_delta_events_before_the_answer() -> None:
    thinking, answer = ["Ships… ", "none came."], ["The keeper ", "waited."]
    app = create_app(catalog(), lambda: Thinking(thinking, answer))
    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        got = http.post(STORY, json={"inputs": {"topic": "ships"}}, headers=SSE)
    assert "event: ReasoningDelta\ndata: " in got.text
    frames = parse_sse(got.text)
    _events, envelope = split_stream(frames)
    assert [name for name, _ in frames] == [
        "ReasoningDelta",
        "ReasoningDelta",
        "Delta",
        "Delta",
        "Complete",
        "envelope",
    ]
    assert [json.loads(data)["text"] for _, data in frames[:2]] == thinking
    assert envelope.ok
    assert envelope.result is not None
    assert envelope.result.text == "".join(answer)  # reasoning never enters the answer
    assert envelope.result.output == "".join(answer)
    assert [part.text for part in envelope.result.reasoning or []] == ["".join(thinking)]


@pytest.mark.parametrize("accept", [{}, SSE])
def test_an_unknown_contract_is_404(client: httpx.Client, accept: dict[str, str]) -> None:
    response = client.post("/v1/contracts/nope/executions", json={"inputs": {}}, headers=accept)
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "TQX_CONTRACT_NOT_FOUND"
    assert "'nope'" in error["message"]
    assert "demo.story" in error["message"]
    still_serving(client)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "not JSON"),
        (b"", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"inputs": {}, "stream": true}', "unknown field(s): stream"),
        (b'{"inputs": "ships"}', "'inputs' must be an object"),
        (b'{"inputs": {}, "context": []}', "'context' must be an object"),
    ],
)
def test_a_malformed_body_is_400(client: httpx.Client, body: bytes, says: str) -> None:
    response = client.post(STORY, content=body, headers=JSON)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "TQX_DATA_INVALID"
    assert says in error["message"]
    still_serving(client)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"inputs": {"topic": ' + b"[" * 2000 + b"]" * 2000 + b"}}", "nested more than 64"),
        (b'{"inputs": {"topic": ' + b"[" * 63 + b"]" * 63 + b"}}", "nested more than 64"),
        (b'{"inputs": {"topic": ' + b"[" * 2000 + b"}}", "nested more than 64"),
        (b'{"inputs": {"topic": ' + b"7" * 5000 + b"}}", "more than 4300 digits"),
        (b'{"inputs": {"topic": -' + b"7" * 5000 + b"}}", "more than 4300 digits"),
        (b'{"inputs": {"topic": 1e999}}', "too large for a float"),
        (b'{"inputs": {"topic": NaN}}', "not JSON"),
        (b'{"inputs": {"topic": "\\ud800"}}', "not JSON"),
    ],
)
def test_a_hostile_json_body_is_the_documented_400(
    client: httpx.Client, body: bytes, says: str, caplog: pytest.LogCaptureFixture
) -> None:
    response = client.post(STORY, content=body, headers=JSON)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "TQX_DATA_INVALID"
    assert says in error["message"]
    assert "Traceback" not in caplog.text
    still_serving(client)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.one_of(st.binary(max_size=64), st.text(max_size=64).map(str.encode)))
def test_no_body_makes_the_server_fail(client: httpx.Client, body: bytes) -> None:
    response = client.post(STORY, content=body, headers=JSON)
    assert response.status_code in {200, 400, 422}
    payload = response.json()
    if response.status_code == 400:
        assert payload["error"]["code"] == "TQX_DATA_INVALID"
    else:
        assert "ok" in payload


@pytest.mark.parametrize(
    ("inputs", "code"),
    [
        ({}, "TQX_VALUE_REQUIRED"),
        ({"topic": ""}, "TQX_VALUE_SCHEMA"),
        ({"topic": "ships", "mood": "angry"}, "TQX_VALUE_SCHEMA"),
        ({"topic": "ships", "colour": "red"}, "TQX_VALUE_UNKNOWN"),
    ],
)
@pytest.mark.parametrize("accept", [{}, SSE])
def test_missing_or_invalid_inputs_are_422_with_the_not_ok_envelope(
    client: httpx.Client, inputs: dict[str, object], code: str, accept: dict[str, str]
) -> None:
    response = client.post(STORY, json={"inputs": inputs}, headers=accept)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/json"
    envelope = OperationEnvelope.model_validate_json(response.content)
    assert not envelope.ok
    assert code in [d.code for d in envelope.diagnostics]
    assert envelope == in_process(inputs, streamed=False)
    still_serving(client)


async def _refused(request: object, emit: object) -> None:
    raise PortError("TQX_RUNTIME_UNAVAILABLE", "upstream said no")


@pytest.mark.parametrize("accept", [{}, SSE])
def test_a_runtime_failure_is_200_with_the_not_ok_envelope(accept: dict[str, str]) -> None:
    app = create_app(catalog(), lambda: AsyncFunctionRuntime(_refused))
    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        response = http.post(STORY, json={"inputs": {"topic": "ships"}}, headers=accept)
        assert response.status_code == 200
        if accept:
            frames = parse_sse(response.text)
            _events, envelope = split_stream(frames)
            assert [name for name, _ in frames] == ["Failed", "envelope"]
        else:
            envelope = OperationEnvelope.model_validate_json(response.content)
        assert not envelope.ok
        assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_UNAVAILABLE"]
        still_serving(http)


def test_a_factory_that_fails_is_503_and_the_server_stays_up() -> None:
    def broken() -> AsyncFunctionRuntime:
        raise OSError("no such socket")

    app = create_app(catalog(), broken)
    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        response = http.post(STORY, json={"inputs": {"topic": "ships"}})
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "TQX_RUNTIME_UNAVAILABLE"
        assert "no such socket" not in response.text
        still_serving(http)


def test_with_a_token_every_v1_route_needs_it_and_the_page_does_not() -> None:
    app = create_app(
        catalog(), async_adapter_factory("mock", scenario=SCENARIO), token="s3cret-token"
    )
    good = {"Authorization": "Bearer s3cret-token"}
    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        assert http.get("/").status_code == 200
        for headers in [
            {},
            {"Authorization": "Bearer s3cret-tokem"},
            {"Authorization": "Bearer s3cret"},
            {"Authorization": "Basic s3cret-token"},
            {"Authorization": "Bearer"},
        ]:
            for response in (
                http.get("/v1/contracts", headers=headers),
                http.post(STORY, json={"inputs": {"topic": "x"}}, headers=headers),
            ):
                assert response.status_code == 401, headers
                assert response.json()["error"]["code"] == "TQX_ACCESS_DENIED"
                assert response.headers["www-authenticate"].startswith("Bearer")
        assert http.get("/v1/contracts", headers=good).status_code == 200
        response = http.post(STORY, json={"inputs": {"topic": "x"}}, headers=good)
        assert response.status_code == 200
        assert response.json()["ok"]


@pytest.mark.parametrize("token", ["pässword", "tok en", "tok\ten", "\u00a0token", "tök"])
def test_a_token_no_client_could_send_is_refused_at_start(token: str) -> None:
    with pytest.raises(ValueError, match="printable ASCII"):
        create_app(catalog(), async_adapter_factory("mock", scenario=SCENARIO), token=token)


def test_a_token_of_any_printable_ascii_matches() -> None:
    token = "".join(chr(code) for code in range(0x21, 0x7F))
    app = create_app(catalog(), async_adapter_factory("mock", scenario=SCENARIO), token=token)
    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        granted = http.get("/v1/contracts", headers={"Authorization": f"Bearer {token}"})
        assert granted.status_code == 200


def test_an_oversize_body_is_413_whether_declared_or_chunked() -> None:
    app = create_app(
        catalog(), async_adapter_factory("mock", scenario=SCENARIO), max_body_bytes=1000
    )
    big = json.dumps({"inputs": {"topic": "x" * 2000}}).encode()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(big), 100):
            yield big[start : start + 100]

    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        for response in (
            http.post(STORY, content=big, headers=JSON),
            http.post(STORY, content=chunks(), headers=JSON),
        ):
            assert response.status_code == 413
            assert response.json()["error"]["code"] == "TQX_REQUEST_TOO_LARGE"
        fits = http.post(STORY, json={"inputs": {"topic": "x" * 900}})
        assert fits.status_code == 200
        still_serving(http)


def test_unknown_routes_and_methods_are_json_errors(client: httpx.Client) -> None:
    missing = client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "TQX_DATA_INVALID"
    wrong = client.get(STORY)
    assert wrong.status_code == 405
    assert wrong.json()["error"]["code"] == "TQX_DATA_INVALID"


def test_cors_is_off_unless_configured() -> None:
    origin = {"Origin": "http://elsewhere.test"}
    plain = create_app(catalog(), async_adapter_factory("mock", scenario=SCENARIO))
    open_to = create_app(
        catalog(),
        async_adapter_factory("mock", scenario=SCENARIO),
        cors_origins=["http://elsewhere.test"],
    )
    with serve_in_background(plain) as url:
        response = httpx.get(f"{url}/v1/contracts", headers=origin)
        assert "access-control-allow-origin" not in response.headers
    with serve_in_background(open_to) as url:
        response = httpx.get(f"{url}/v1/contracts", headers=origin)
        assert response.headers["access-control-allow-origin"] == "http://elsewhere.test"
        other = httpx.get(f"{url}/v1/contracts", headers={"Origin": "http://evil.test"})
        assert "access-control-allow-origin" not in other.headers


def _post_then_vanish(url: str, accept: dict[str, str], upstream: PacedUpstream) -> None:
    """Send an execution over a bare socket and close it once the run has started, without
    reading the response (a non-streamed run has not sent one yet)."""
    body = json.dumps({"inputs": {"topic": "x"}}).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in accept.items())
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            f"POST {STORY} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{head}\r\n".encode()
            + body
        )
        assert upstream.started.wait(30)
        received = b""
        while accept and b"event: Delta" not in received:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk


@pytest.mark.parametrize("accept", [{}, SSE])
def test_a_client_that_disconnects_mid_run_stops_it_and_the_upstream_closes(
    paced: PacedUpstream, accept: dict[str, str]
) -> None:
    app = create_app(catalog(), paced.adapter)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        paced.release(1)
        _post_then_vanish(url, accept, paced)
        # the socket is closed with the run still waiting upstream for its next piece
        assert paced.closed.wait(30), "the upstream was not closed after the client left"
        paced.release(100)
        assert http.post(STORY, json={"inputs": {"topic": "x"}}).json()["ok"]
        assert paced.calls == 2


def test_text_arrives_while_the_upstream_is_still_producing_it(paced: PacedUpstream) -> None:
    app = create_app(catalog(), paced.adapter)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        paced.release(1)
        with http.stream("POST", STORY, json={"inputs": {"topic": "x"}}, headers=SSE) as got:
            lines = got.iter_lines()
            run_id = got.headers["x-runport-run-id"]
            assert next(lines) == f"id: {run_id}:1"
            assert next(lines) == "event: Delta"
            assert json.loads(next(lines).removeprefix("data: "))["text"] == "Once "
            # the second piece is not released yet, so the first reached us on its own
            paced.release(1)
            assert next(lines) == ""
            assert next(lines) == f"id: {run_id}:2"
            assert next(lines) == "event: Delta"
            paced.release_all()
            rest = "\n".join(lines)
        assert "event: Complete" in rest
        assert "event: envelope" in rest


@pytest.mark.parametrize(
    ("path", "media_type", "marker"),
    [
        ("/", "text/html", "<title>runport playground</title>"),
        ("/playground.js", "text/javascript", "text/event-stream"),
        ("/playground.css", "text/css", ".tool-call"),
    ],
)
def test_the_playground_is_served_from_the_package_and_fetches_nothing_elsewhere(
    client: httpx.Client, path: str, media_type: str, marker: str
) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(media_type)
    assert marker in response.text
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "connect-src 'self'" in policy
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", response.text)
    assert "@import" not in response.text


class _Counting(AsyncFunctionRuntime):
    """One adapter for the whole server: counts its calls and whether it was closed."""

    def __init__(self) -> None:
        super().__init__(self._answer)
        self.calls = 0
        self.closed = False

    async def _answer(self, request: object, emit: AsyncEmitter) -> None:
        self.calls += 1
        await emit.text("The lighthouse keeper counted ships that never came.")
        await emit.finish("stop")

    async def aclose(self) -> None:
        self.closed = True


def test_an_adapter_given_to_the_app_is_shared_by_every_request_and_left_open() -> None:
    shared = _Counting()
    with (
        serve_in_background(create_app(catalog(), shared)) as url,
        httpx.Client(base_url=url) as http,
    ):
        for accept in ({}, SSE, {}, SSE):
            response = http.post(STORY, json={"inputs": {"topic": "ships"}}, headers=accept)
            assert response.status_code == 200
    assert shared.calls == 4
    assert not shared.closed


def test_a_factory_is_called_once_per_request_off_the_event_loop() -> None:
    built: list[_Counting] = []
    on_a_loop: list[bool] = []

    def factory() -> _Counting:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            on_a_loop.append(False)
        else:
            on_a_loop.append(True)
        built.append(_Counting())
        return built[-1]

    with (
        serve_in_background(create_app(catalog(), factory)) as url,
        httpx.Client(base_url=url) as http,
    ):
        for _ in range(3):
            assert http.post(STORY, json={"inputs": {"topic": "ships"}}).json()["ok"]
    assert on_a_loop == [False, False, False]
    assert [(adapter.calls, adapter.closed) for adapter in built] == [(1, True)] * 3


def test_served_with_a_scenario_each_request_plays_it_from_its_first_turn() -> None:
    app = prepare(CONTRACTS, adapter="mock", scenario=SCENARIO, warn=print)
    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        answers = [http.post(STORY, json={"inputs": {"topic": "ships"}}).json() for _ in range(3)]
    assert all(answer["ok"] for answer in answers)
    assert answers[0] == answers[1] == answers[2]


async def _coat(request: object, emit: AsyncEmitter) -> None:
    for piece in ('{"coat": ', '"a warm', ' one"}'):
        await emit.text(piece)


def test_partial_output_streams_snapshots_beside_the_deltas_and_the_envelope_is_unchanged() -> None:
    forecast = "/v1/contracts/demo.forecast/executions"
    app = create_app(catalog(), lambda: AsyncFunctionRuntime(_coat))
    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        asked = http.post(
            forecast + "?partial_output=true", json={"inputs": {"city": "Delft"}}, headers=SSE
        )
        plain = http.post(forecast, json={"inputs": {"city": "Delft"}}, headers=SSE)
        wrong = http.post(
            forecast + "?partial_output=yes", json={"inputs": {"city": "Delft"}}, headers=SSE
        )
    frames = parse_sse(asked.text)
    names = [name for name, _ in frames]
    assert "OutputSnapshot" in names
    for before, name in itertools.pairwise(names):
        if name == "OutputSnapshot":
            assert before == "Delta"
    snapshots = [json.loads(data) for name, data in frames if name == "OutputSnapshot"]
    assert snapshots[-1]["value"] == {"coat": "a warm one"}
    assert [f for f in frames if f[0] != "OutputSnapshot"] == parse_sse(plain.text)
    assert "OutputSnapshot" not in plain.text
    assert wrong.status_code == 400
    assert wrong.json()["error"]["code"] == "TQX_DATA_INVALID"


LONG_COAT = "a coat of " + "wool and tweed, " * 3_000  # about 48 KB


async def _long_coat(request: object, emit: AsyncEmitter) -> None:
    text = json.dumps({"coat": LONG_COAT, "sizes": list(range(300))})
    for start in range(0, len(text), 4):
        await emit.text(text[start : start + 4])


@pytest.mark.parametrize("resumable", [False, True], ids=["streamed", "resumable"])
def test_the_snapshots_of_a_long_answer_weigh_what_the_answer_does_times_a_constant(
    resumable: bool,
) -> None:
    """Each snapshot frame is the whole answer so far: sent after every Delta, a 50 KB answer
    would be 600 MB of frames. Thinned (SnapshotPace), they stay within a constant times the
    answer, and the last one is still the whole output; a resumable run's log holds the same."""
    forecast = "/v1/contracts/demo.forecast/executions"
    log = MemoryEventLog() if resumable else None
    app = create_app(catalog(), lambda: AsyncFunctionRuntime(_long_coat), event_log=log)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        asked = http.post(
            forecast + "?partial_output=true", json={"inputs": {"city": "Delft"}}, headers=SSE
        )
        plain = http.post(forecast, json={"inputs": {"city": "Delft"}}, headers=SSE)
    frames = parse_sse(asked.text)
    answer = "".join(json.loads(data)["text"] for name, data in frames if name == "Delta")
    snapshots = [data for name, data in frames if name == "OutputSnapshot"]
    deltas = sum(1 for name, _ in frames if name == "Delta")
    assert deltas > 12_000
    assert 20 < len(snapshots) < deltas // 20  # every one of the first 1,024 characters, then a few
    assert sum(len(data) for data in snapshots) < 40 * len(answer)
    assert json.loads(snapshots[-1])["value"] == json.loads(answer)
    completed = [pointer for data in snapshots for pointer in json.loads(data)["completed"]]
    assert completed.count("/sizes/299") == 1
    assert completed[-1] == ""
    assert [f for f in frames if f[0] != "OutputSnapshot"] == parse_sse(plain.text)
