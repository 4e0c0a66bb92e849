"""Requests built by hand, so the mock's tests never depend on contract loading."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from runport.contracts import CompiledInteraction, ExecutionRequest, Message

TEXT_SCHEMA: dict[str, Any] = {"type": "string"}
OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}

MakeRequest = Callable[..., ExecutionRequest]


def _make_request(
    schema: dict[str, Any] | None = None,
    *,
    fixture_output: Any = None,
    runtime_policy: dict[str, Any] | None = None,
) -> ExecutionRequest:
    interaction = CompiledInteraction(
        compiler="test/0",
        contract_id="mock-test",
        contract_version="1.0.0",
        messages=[Message(role="user", content="Say hello.")],
        output_schema=TEXT_SCHEMA if schema is None else schema,
        runtime_policy=runtime_policy or {},
    )
    return ExecutionRequest(interaction=interaction, fixture_output=fixture_output)


@pytest.fixture
def make_request() -> MakeRequest:
    """``make_request(schema=None, *, fixture_output=None, runtime_policy=None)``."""
    return _make_request


@pytest.fixture
def text_request() -> ExecutionRequest:
    return _make_request()


@pytest.fixture
def json_request() -> ExecutionRequest:
    return _make_request(OBJECT_SCHEMA)
