"""An unknown ``runtime_policy`` key is a load-time warning, never silence and never an error
(ADR 0051)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from runport.core import RUNTIME_POLICY_KEYS, RuntimePolicyWarning, parse_contract


def _contract(policy: dict[str, Any]) -> dict[str, Any]:
    return {
        "api_version": "runport/v1alpha1",
        "id": "policy.check",
        "version": "1.0.0",
        "messages": [{"role": "user", "content": "hi"}],
        "output_schema": {"type": "string"},
        "runtime_policy": policy,
    }


def test_an_unknown_key_is_a_warning_naming_it_and_the_adapters_that_read_keys() -> None:
    with pytest.warns(RuntimePolicyWarning) as heard:
        contract = parse_contract(_contract({"temprature": 0.2, "cache_key": "k"}), source="c.yaml")
    assert contract.runtime_policy == {"temprature": 0.2, "cache_key": "k"}  # nothing is lost
    [warning] = heard.list
    message = str(warning.message)
    assert message.startswith("c.yaml: runtime_policy key 'temprature'")
    assert "cache_key (openai, openai-responses)" in message
    assert "thinking (anthropic)" in message


def test_every_key_an_adapter_reads_loads_without_a_word() -> None:
    policy = dict.fromkeys(RUNTIME_POLICY_KEYS, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_contract(_contract(policy))


def test_each_unknown_key_warns_once() -> None:
    with pytest.warns(RuntimePolicyWarning) as heard:
        parse_contract(_contract({"a": 1, "b/c": 2}))
    assert sorted(str(w.message).split("'")[1] for w in heard.list) == ["a", "b/c"]
