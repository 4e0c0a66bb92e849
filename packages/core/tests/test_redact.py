"""``redact_secrets``: the one rule for credentials in text runport writes (issue 22)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.core import is_secret_parameter, redact_secrets


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("GET https://me:hunter2@llm.example/v1 failed", "GET https://[redacted]@llm.example/v1"),
        ("?api-key=k3y&api-version=2", "?api-key=[redacted]&api-version=2"),
        ("/v1?API_KEY=k3y&Token=t&access_token=a&X-Amz-Signature=s;sig=s#password=p",
         "/v1?API_KEY=[redacted]&Token=[redacted]&access_token=[redacted]&"
         "X-Amz-Signature=[redacted];sig=[redacted]#password=[redacted]"),
        ("-i takes KEY=VALUE, not 'topic'", "-i takes KEY=VALUE, not 'topic'"),
        ("Authorization: Basic dXNlcjpodW50ZXIy", "Authorization: Basic [redacted]"),
        ("Basic usage: see user@example.com", "Basic usage: see user@example.com"),
    ],
)  # fmt: skip
def test_the_one_redaction_rule(text: str, shown: str) -> None:
    assert redact_secrets(text).startswith(shown)
    assert redact_secrets(redact_secrets(text)) == redact_secrets(text)


@settings(deadline=None)
@given(st.text(max_size=80))
def test_redacting_twice_is_redacting_once(text: str) -> None:
    once = redact_secrets(text)
    assert redact_secrets(once) == once


@settings(deadline=None)
@given(st.text(alphabet=st.characters(exclude_characters="@?&;#"), max_size=80))
def test_text_quoting_no_url_credentials_or_query_is_left_alone(text: str) -> None:
    if "bearer" not in text.lower() and "basic" not in text.lower():
        assert redact_secrets(text) == text


@pytest.mark.parametrize(
    ("name", "secret"),
    [("api-key", True), ("API_KEY", True), ("access_token", True), ("X-Amz-Signature", True),
     ("password", True), ("client_secret", True), ("api-version", False), ("model", False)],
)  # fmt: skip
def test_which_parameters_carry_credentials(name: str, secret: bool) -> None:
    assert is_secret_parameter(name) is secret
