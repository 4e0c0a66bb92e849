"""The limits every adapter shares: the smaller of the adapter's and the request's setting."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runport.contracts import CompiledInteraction, ErrorCode, ExecutionRequest, Message
from runport.ports import (
    DEFAULT_DEADLINE_S,
    DEFAULT_MAX_RESPONSE_BYTES,
    PortError,
    check_byte_count,
    check_seconds,
    deadline_for,
    distribution_version,
    max_response_bytes_for,
)


def _request(**policy: object) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test",
            contract_id="limits",
            contract_version="1.0.0",
            messages=[Message(role="user", content="hi")],
            output_schema={"type": "string"},
            required_capabilities=[],
            target_capabilities=[],
            runtime_policy=dict(policy),
            extensions={},
        ),
        fixture_output=None,
    )


def test_defaults_apply_when_neither_side_sets_a_limit() -> None:
    assert max_response_bytes_for(_request(), None) == DEFAULT_MAX_RESPONSE_BYTES
    assert deadline_for(_request(), None) == DEFAULT_DEADLINE_S


@given(own=st.none() | st.integers(0, 2**40), policy=st.none() | st.integers(0, 2**40))
def test_the_smaller_byte_bound_applies(own: int | None, policy: int | None) -> None:
    request = _request() if policy is None else _request(max_response_bytes=policy)
    expected = min(
        DEFAULT_MAX_RESPONSE_BYTES if policy is None else policy,
        own if own is not None else 2**63,
    )
    assert max_response_bytes_for(request, own) == expected


@given(
    own=st.none() | st.floats(0.001, 1e6),
    policy=st.none() | st.floats(0.001, 1e6) | st.integers(1, 10**6),
)
def test_the_smaller_deadline_applies(own: float | None, policy: float | None) -> None:
    request = _request() if policy is None else _request(deadline_s=policy)
    expected = min(
        DEFAULT_DEADLINE_S if policy is None else float(policy),
        own if own is not None else float("inf"),
    )
    assert deadline_for(request, own) == expected


@pytest.mark.parametrize("bad", [-1, 1.5, "10", True, None, [1]])
def test_a_request_byte_bound_that_is_not_a_count_is_data_invalid(bad: object) -> None:
    with pytest.raises(PortError) as caught:
        max_response_bytes_for(_request(max_response_bytes=bad), 10)
    assert caught.value.code == ErrorCode.DATA_INVALID


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "5", True, None])
def test_a_request_deadline_that_is_not_positive_seconds_is_data_invalid(bad: object) -> None:
    with pytest.raises(PortError) as caught:
        deadline_for(_request(deadline_s=bad), None)
    assert caught.value.code == ErrorCode.DATA_INVALID


def test_adapter_settings_are_checked_at_construction() -> None:
    assert check_byte_count(None) is None
    assert check_byte_count(0) == 0
    with pytest.raises(ValueError, match="max_response_bytes"):
        check_byte_count(-1)
    with pytest.raises(ValueError, match="deadline"):
        check_seconds(0)
    with pytest.raises(ValueError, match="timeout"):
        check_seconds(float("inf"), "timeout")
    assert check_seconds(2) == 2.0


def test_distribution_version_reads_metadata_and_tolerates_a_source_tree() -> None:
    assert distribution_version("runport-ports").count(".") >= 1
    assert distribution_version("runport-no-such-distribution") == "0.0.0"
