"""What wrapping widely used clients as adapters taught the suite: each finding, pinned by a
test of the check it changed (docs/conformance.md)."""

from __future__ import annotations

from runport.conformance._checks import leaks, reported_chain
from runport.conformance._observe import Outcome
from runport.contracts import ErrorCode, Failed
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


def test_law_10_reads_an_exception_as_python_reports_it_raise_from_none_hides_the_context() -> (
    None
):
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
