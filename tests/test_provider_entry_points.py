"""Every provider's entry points are made by one ``runport.http.ProviderEnvironment``: the same
keyword settings, the same reading of the environment, the same log line on the provider's
own logger (never the key) — adr/0048-a-providers-setup-written-once.md."""

from __future__ import annotations

import inspect
import logging
from importlib.metadata import entry_points

import pytest

KEY = "sk-entry-point-SECRET-41c9"

PROVIDERS = [
    (
        "openai",
        "runport.openai",
        [
            "base_url",
            "model",
            "api_key",
            "response_format_mode",
            "send_reasoning_as",
            "include_usage",
        ],
    ),
    (
        "openai-responses",
        "runport.openai",
        ["base_url", "model", "api_key", "response_format_mode"],
    ),
    (
        "azure-openai",
        "runport.openai",
        [
            "base_url",
            "model",
            "api_key",
            "deployment",
            "api_version",
            "ad_token",
            "include_usage",
            "response_format_mode",
        ],
    ),
    ("anthropic", "runport.anthropic", ["base_url", "model", "api_key"]),
    ("gemini", "runport.gemini", ["base_url", "model", "api_key"]),
    ("bedrock", "runport.bedrock", ["base_url", "model", "api_key", "region"]),
    ("bedrock-anthropic", "runport.bedrock", ["base_url", "model", "api_key", "region"]),
    ("ollama", "runport.ollama", ["base_url", "model", "api_key", "num_ctx", "keep_alive"]),
    ("cohere", "runport.cohere", ["base_url", "model", "api_key"]),
]


@pytest.mark.parametrize(("name", "package", "settings"), PROVIDERS)
@pytest.mark.parametrize("group", ["runport.adapters", "runport.async_adapters"])
def test_each_entry_point_takes_its_settings_and_logs_where_it_goes(
    caplog: pytest.LogCaptureFixture, name: str, package: str, settings: list[str], group: str
) -> None:
    (point,) = [p for p in entry_points(group=group) if p.name == name]
    create = point.load()
    parameters = inspect.signature(create).parameters
    assert list(parameters) == settings
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters.values())
    with caplog.at_level(logging.INFO, logger=package):
        adapter = create(base_url="http://127.0.0.1:9/v1?key=zzz", model="m-1", api_key=KEY)
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        (package, f"{name} adapter: http://127.0.0.1:9/v1?key=***, model m-1, with an API key")
    ]
    assert KEY not in repr(adapter)
