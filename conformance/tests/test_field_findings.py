"""What wrapping widely used clients as adapters taught the suite: each finding, pinned by a
test of the check it changed (docs/conformance.md)."""

from __future__ import annotations

import json

import httpx

from runport.conformance import ScriptedUpstream
from runport.conformance._cases import CASES_BY_NAME
from runport.conformance._checks import leaks, reported_chain
from runport.conformance._observe import Outcome
from runport.conformance._planted import DETAIL_FIELD, plant
from runport.contracts import ErrorCode, Failed
from runport.http import provider_text
from runport.ports import PortError

SECRET = "sk-runport-conformance-0123456789abcdef01234567"


class SDKError(Exception):
    """An SDK's exception: its text holds what the provider sent, key and all."""


def _mapped(*, suppress: bool) -> PortError:
    """The adapter guide's mapping: catch the SDK's exception, raise a ``PortError``."""
    try:
        try:
            raise SDKError(f"Error code: 500 - {{'key': '{SECRET}'}}")
        except SDKError:
            mapped = PortError(ErrorCode.RUNTIME_UNAVAILABLE, "HTTP 500 Internal Server Error")
            if suppress:
                raise mapped from None
            raise mapped  # noqa: B904 - the context is what this test is about
    except PortError as error:
        return error


def _failed(error: PortError) -> Outcome:
    return Outcome(events=[Failed(code=error.code, message=error.message)], error=error)


def test_law_10_reads_an_exception_as_python_reports_it_raise_from_none_hides_the_context() -> None:
    hidden = _mapped(suppress=True)
    assert reported_chain(hidden) == [hidden]
    assert leaks(_failed(hidden), [SECRET]) == []


def test_law_10_names_the_exception_that_leaked_when_the_context_is_shown() -> None:
    shown = _mapped(suppress=False)
    assert [type(error) for error in reported_chain(shown)] == [PortError, SDKError]
    assert leaks(_failed(shown), [SECRET]) == [
        "the API key appears in its cause/context #1 (SDKError)"
    ]


def test_an_explicit_cause_is_reported_even_under_from_none_semantics() -> None:
    cause = SDKError(SECRET)
    error = PortError(ErrorCode.RUNTIME_UNAVAILABLE, "HTTP 500 Internal Server Error")
    error.__cause__ = cause  # raise … from cause sets both of these
    error.__suppress_context__ = True
    assert reported_chain(error) == [error, cause]


# -- law 10 tests the law, not a key redactor ---------------------------------------------------


def test_the_provider_message_marker_survives_a_key_redactor_so_showing_the_message_passes() -> (
    None
):
    upstream = ScriptedUpstream([CASES_BY_NAME["rate_limited"]])
    try:
        message = f"{upstream.body_marker} scripted rate_limit_error"
        assert provider_text(message, (upstream.api_key,)) == message
        assert upstream.body_marker not in upstream.secrets
    finally:
        upstream.close()


def test_every_error_answer_carries_the_canary_beside_the_provider_message() -> None:
    upstream = ScriptedUpstream(
        [CASES_BY_NAME["rate_limited"], CASES_BY_NAME["error_frame"]], pacing="off"
    )
    try:
        with httpx.Client(base_url=upstream.base_url) as client:
            answers = [
                client.post("/chat/completions", json={"model": "m", "messages": [], **extra})
                for extra in ({}, {"stream": True})
            ]
    finally:
        upstream.close()
    throttled = answers[0].json()["error"]
    assert upstream.body_marker in throttled["message"]
    assert throttled[DETAIL_FIELD] == upstream.body_canary
    assert upstream.body_canary in upstream.secrets
    frame = answers[1].text.split("data: ")[-1]
    error = json.loads(frame)["error"]
    assert upstream.body_marker in error["message"]
    assert error[DETAIL_FIELD] == upstream.body_canary


def test_a_frame_without_the_marker_is_left_as_it_was() -> None:
    assert plant(b'data: {"error": {"message": "x"}}\n\n', "m-1", "c-1") == (
        b'data: {"error": {"message": "x"}}\n\n'
    )
    assert plant(b"data: {not json m-1\n\n", "m-1", "c-1") == b"data: {not json m-1\n\n"
