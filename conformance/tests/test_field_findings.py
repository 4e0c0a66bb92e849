"""What wrapping widely used clients as adapters taught the suite: each finding, pinned by a
test of the check it changed (docs/conformance.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from runport.conformance import (
    ScenarioUpstream,
    ScriptedUpstream,
    StreamViolation,
    check_stream,
)
from runport.conformance._cases import CASES_BY_NAME, Case
from runport.conformance._checks import (
    leaks,
    opaque_values,
    reasoning_problems,
    reported_chain,
)
from runport.conformance._observe import Outcome
from runport.conformance._planted import DETAIL_FIELD, plant
from runport.conformance._protocols import resolve
from runport.contracts import ErrorCode, Failed, StreamEvent, ToolCallDelta
from runport.http import provider_text
from runport.mock import ScriptedRuntime
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


# -- a receipt's reasoning: what the protocol needs back, nothing more --------------------------


def _expected_reasoning(protocol: str, name: str) -> tuple[Case, list[dict[str, Any]]]:
    case = resolve(protocol).played(CASES_BY_NAME[name])
    return case, case.expected_receipt()["reasoning"]


def test_an_openai_chat_receipt_needs_no_provider_metadata_on_its_reasoning() -> None:
    case, expected = _expected_reasoning("openai-chat", "several_reasoning_blocks")
    assert expected
    assert all("provider_metadata" in part for part in expected)
    bare = [{"text": part["text"]} for part in expected]
    assert reasoning_problems(bare, expected, opaque_values(case)) == []
    other = [{"text": "not it"}, *bare[1:]]
    assert reasoning_problems(other, expected, opaque_values(case))


def test_a_signature_the_upstream_sent_must_be_kept_however_the_adapter_keys_it() -> None:
    case, expected = _expected_reasoning("anthropic-messages", "reasoning_then_tool_call")
    signatures = opaque_values(case)
    assert signatures
    rekeyed = [
        {"text": part["text"], "provider_metadata": {"mine": {"sig": list(_values(part))}}}
        for part in expected
    ]
    assert reasoning_problems(rekeyed, expected, signatures) == []
    lost = [{"text": part["text"]} for part in expected]
    (problem,) = reasoning_problems(lost, expected, signatures)
    assert "provider_metadata lacks" in problem
    assert signatures[0] in problem


def _values(part: dict[str, Any]) -> list[str]:
    metadata = part.get("provider_metadata") or {}
    return [value for inner in metadata.values() for value in inner.values()]


# -- a tool call's index is its position in the turn, for every protocol ------------------------


@pytest.mark.parametrize("shift", [1, 2])
def test_check_stream_refuses_a_call_numbered_other_than_by_its_position_in_the_turn(
    shift: int,
) -> None:
    case = CASES_BY_NAME["one_tool_call"]
    events: list[StreamEvent] = []
    receipt = ScriptedRuntime(ScenarioUpstream([case]).scenario).execute_streaming(
        case.request(), events.append
    )
    check_stream(events, receipt)
    renumbered = [
        event.model_copy(update={"index": event.index + shift})
        if isinstance(event, ToolCallDelta)
        else event
        for event in events
    ]
    with pytest.raises(StreamViolation) as caught:
        check_stream(renumbered, receipt)
    assert caught.value.law == 3
    first = next(at for at, event in enumerate(events) if isinstance(event, ToolCallDelta))
    assert caught.value.index == first
    assert "is not the call's position in the turn" in caught.value.problem


# -- authors ------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]

AUTHOR = """
from runport.conformance import RuntimeAdapterConformance
from runport.mock import ScriptedRuntime


class TestMine(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream):
        return ScriptedRuntime(upstream.scenario)
"""


def test_a_failing_port_error_is_shown_with_its_message() -> None:
    error = PortError(ErrorCode.RUNTIME_UNAVAILABLE, "HTTP 503 Service Unavailable")
    assert Outcome(error=error).ending() == (
        "raised PortError(TQX_RUNTIME_UNAVAILABLE): 'HTTP 503 Service Unavailable'"
    )


def test_collecting_only_is_not_a_run_that_checked_nothing(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(AUTHOR, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "test_mine.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_law_1_grammar" in done.stdout
    assert "NOTHING CHECKED" not in done.stdout


def test_the_adapter_guide_lists_what_authors_reuse_and_warns_about_sdk_retries() -> None:
    guide = (ROOT / "docs" / "adapter-guide.md").read_text(encoding="utf-8")
    table = guide.split("## What to reuse", 1)[1].split("\n## ", 1)[0]
    for name in ("core.TurnBuilder", "core.parse_json_text", "core.is_text_schema"):
        assert f"`runport.{name}" in table, name
    assert "max_retries=0" in guide
