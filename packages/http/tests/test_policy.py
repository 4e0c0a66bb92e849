"""``runport.http.reasoning_policy``: ``runtime_policy.reasoning`` read once for every codec."""

from __future__ import annotations

from typing import Any

import pytest

from runport.contracts import ErrorCode
from runport.http import reasoning_policy
from runport.ports import PortError


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({}, None),
        ({"reasoning": None}, None),
        ({"reasoning": False}, None),
        ({"reasoning": True}, {}),
        ({"reasoning": {"effort": "high"}}, {"effort": "high"}),
        ({"reasoning": {"budget_tokens": 2048}}, {"budget_tokens": 2048}),
    ],
)
def test_the_reasoning_asked_for_is_an_object_or_none(
    policy: dict[str, Any], expected: dict[str, Any] | None
) -> None:
    assert reasoning_policy(policy) == expected


@pytest.mark.parametrize("value", ["high", 1, ["effort"]])
def test_reasoning_that_is_no_object_is_a_coded_error(value: object) -> None:
    with pytest.raises(PortError) as raised:
        reasoning_policy({"reasoning": value})
    assert raised.value.code == ErrorCode.DATA_INVALID
    assert "runtime_policy.reasoning must be an object" in raised.value.message
