"""``runport.http.reasoning_policy``: ``runtime_policy.reasoning`` read once for every codec."""

from __future__ import annotations

from typing import Any

import pytest

from runport.contracts import ErrorCode
from runport.http import reasoning_policy, sampling_settings
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


def test_sampling_settings_take_the_providers_names_and_always_a_list_of_stops() -> None:
    fields = {"temperature": "temperature", "top_p": "topP", "max_tokens": "maxOutputTokens"}
    policy = {"top_p": 0.5, "temperature": 0.2, "stop": "END", "seed": 7}
    settings = sampling_settings(policy, fields, stop="stopSequences")
    assert settings == {"temperature": 0.2, "topP": 0.5, "stopSequences": ["END"]}
    assert list(settings) == ["temperature", "topP", "stopSequences"]
    listed = sampling_settings({"stop": ["a", "b"]}, fields, stop="stop_sequences")
    assert listed == {"stop_sequences": ["a", "b"]}
    assert sampling_settings({}, fields, stop="stop") == {}
