"""A request-body value of the wrong JSON kind is the documented coded 400 in the protocol's
error shape, on both frontend routes, over real uvicorn on 127.0.0.1 — never a 500, never a
plain-text answer (docs/frontends.md, "Refused requests"; the typed request models of
adr/0041)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.application import async_adapter_factory
from runport.server import create_app, serve_in_background

from .chat_tools import TOOLS
from .conftest import catalog
from .frontend_runs import CHAT_SCENARIO

CHAT = "/v1/contracts/demo.forecast/chat"
AGUI = "/v1/contracts/demo.forecast/agui"


def chat_body() -> dict[str, Any]:
    """A chat the route runs: an earlier turn with a step, text and an answered tool call."""
    return {
        "id": "chat-kinds",
        "trigger": "submit-message",
        "messageId": "answer-1",
        "inputs": {},
        "messages": [
            {"id": "u0", "role": "user", "parts": [{"type": "text", "text": "Delft"}]},
            {
                "id": "a0",
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {"type": "text", "text": "Looking it up"},
                    {
                        "type": "tool-get_weather",
                        "toolCallId": "c0",
                        "state": "output-available",
                        "input": {"city": "Delft"},
                        "output": {"celsius": 11},
                    },
                ],
            },
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Leiden"}]},
        ],
    }


def agui_body() -> dict[str, Any]:
    """A RunAgentInput the route runs: an earlier turn with a tool call and its result."""
    return {
        "threadId": "thread-kinds",
        "runId": "run-kinds",
        "tools": [],
        "context": [],
        "forwardedProps": {"inputs": {}},
        "messages": [
            {"id": "u0", "role": "user", "content": "Delft"},
            {
                "id": "a0",
                "role": "assistant",
                "content": "Looking it up",
                "toolCalls": [
                    {
                        "id": "c0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Delft"}'},
                    }
                ],
            },
            {"id": "t0", "role": "tool", "toolCallId": "c0", "content": "11 degrees"},
            {"id": "u1", "role": "user", "content": [{"type": "text", "text": "Leiden"}]},
        ],
    }


# Values any JSON may fill (a tool call's input and output, a call's type), an AG-UI content
# that is a string or a list of parts, and values whose absence (null) is as good as a value:
# a value of another kind there is no mistake.
FREE = {
    (CHAT, ("messages", 1, "parts", 2, "input")),
    (CHAT, ("messages", 1, "parts", 2, "output")),
    (AGUI, ("messages", 1, "toolCalls", 0, "type")),
    (AGUI, ("messages", 0, "content")),
    (AGUI, ("messages", 2, "content")),
    (AGUI, ("messages", 3, "content")),
}
NULLABLE = {
    (CHAT, ("messageId",)),
    (CHAT, ("messages", 0, "id")),
    (CHAT, ("messages", 1, "id")),
    (CHAT, ("messages", 2, "id")),
    (AGUI, ("tools",)),
    (AGUI, ("context",)),
    (AGUI, ("forwardedProps",)),
    (AGUI, ("messages", 0, "id")),
    (AGUI, ("messages", 1, "id")),
    (AGUI, ("messages", 1, "content")),
    (AGUI, ("messages", 1, "toolCalls")),
    (AGUI, ("messages", 2, "id")),
    (AGUI, ("messages", 3, "id")),
}


def paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value, the value's own root excluded."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, inner in items:
        yield (*at, key)
        yield from paths(inner, (*at, key))


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def replaced(body: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    holder: Any = changed
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return changed


def at(body: dict[str, Any], path: tuple[Any, ...]) -> Any:
    value: Any = body
    for step in path:
        value = value[step]
    return value


JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(0, 3), max_size=2),
)
PLACES = [(CHAT, path) for path in paths(chat_body())] + [
    (AGUI, path) for path in paths(agui_body())
]
BODIES = {CHAT: chat_body, AGUI: agui_body}


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    app = create_app(catalog(), async_adapter_factory("mock", scenario=CHAT_SCENARIO), tools=TOOLS)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def assert_coded_400(route: str, response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    refused = response.json()
    assert refused["error"]["code"] == "TQX_DATA_INVALID"
    assert refused["error"]["message"]
    if route == CHAT:
        assert refused["type"] == "error"
        assert refused["errorText"] == f"TQX_DATA_INVALID: {refused['error']['message']}"
    else:
        assert refused["type"] == "RUN_ERROR"
        assert refused["code"] == "TQX_DATA_INVALID"


def test_the_valid_bodies_run(http: httpx.Client) -> None:
    for route, body in BODIES.items():
        response = http.post(route, json=body())
        assert response.status_code == 200, response.text


# the four wrong kinds the hostile tests of this round sent
WRONG_KINDS: list[tuple[str, str, tuple[Any, ...], Any]] = [
    ("a chat's trigger as a list", CHAT, ("trigger",), []),
    ("a tool part's state as a list", CHAT, ("messages", 1, "parts", 2, "state"), []),
    ("an AG-UI message's role as an object", AGUI, ("messages", 0, "role"), {}),
    ("an AG-UI part's type as a list", AGUI, ("messages", 3, "content", 0, "type"), []),
]


@pytest.mark.parametrize(
    ("case", "route", "path", "value"), WRONG_KINDS, ids=[case[0] for case in WRONG_KINDS]
)
def test_a_value_of_the_wrong_kind_is_a_coded_400(
    http: httpx.Client, case: str, route: str, path: tuple[Any, ...], value: Any
) -> None:
    response = http.post(route, json=replaced(BODIES[route](), path, value))
    assert_coded_400(route, response)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(place=st.sampled_from(PLACES), value=JSON_VALUES)
def test_any_value_of_another_kind_anywhere_is_a_coded_400_never_a_500(
    http: httpx.Client, place: tuple[str, tuple[Any, ...]], value: Any
) -> None:
    route, path = place
    body = BODIES[route]()
    free = any(route == at_route and path[: len(at_path)] == at_path for at_route, at_path in FREE)
    if kind(value) == kind(at(body, path)) or free:
        return  # the same kind is another value, not a wrong kind
    if value is None and place in NULLABLE:
        return
    response = http.post(
        route,
        content=json.dumps(replaced(body, path, value)).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert_coded_400(route, response)
