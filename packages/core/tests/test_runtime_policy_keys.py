"""An unknown ``runtime_policy`` key is a load-time warning, never silence and never an error;
a message's cache breakpoint is compiled, and fingerprinted only when present (ADR 0051)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from runport.contracts import fingerprint
from runport.core import (
    RUNTIME_POLICY_KEYS,
    ContractError,
    RuntimePolicyWarning,
    compile_contract,
    parse_contract,
)


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


def test_a_messages_cache_breakpoint_reaches_the_compiled_message_and_its_fingerprint() -> None:
    plain = compile_contract(parse_contract(_contract({})), inputs={})
    marked_data = _contract({})
    marked_data["messages"] = [{"role": "user", "content": "hi", "cache": True, "cache_ttl": "5m"}]
    marked = compile_contract(parse_contract(marked_data), inputs={})
    [message] = marked.messages
    assert (message.cache, message.cache_ttl) == (True, "5m")
    assert plain.messages[0].cache is None
    assert fingerprint(marked) != fingerprint(plain)
    unmarked_data = _contract({})
    unmarked_data["messages"] = [{"role": "user", "content": "hi", "cache": False}]
    assert fingerprint(compile_contract(parse_contract(unmarked_data), inputs={})) == fingerprint(
        plain
    )
    ttl_alone = _contract({})
    ttl_alone["messages"] = [{"role": "user", "content": "hi", "cache_ttl": "5m"}]
    with pytest.raises(ContractError, match="cache_ttl needs cache"):
        parse_contract(ttl_alone)
