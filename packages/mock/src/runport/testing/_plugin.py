"""The pytest plugin (entry point ``pytest11`` of runport-mock): pytest loads it in every
session wherever runport-mock is installed; nothing else imports it, so runport-mock needs
pytest only where pytest runs (ADR 0049).

- the fixtures ``scripted_model`` and ``function_model`` (``runport.testing``);
- the guard: for the whole session ``RUNPORT_ALLOW_MODEL_REQUESTS`` is ``0`` unless it was
  set before, so runport's HTTP adapters refuse, before connecting, every request to a host
  that is not loopback (``TQX_ACCESS_DENIED``); a test marked
  ``@pytest.mark.allow_model_requests`` runs with it ``1``. Being a variable, it holds in the
  processes a test starts too (the ``runport`` command, a server).
"""

from __future__ import annotations

import os

import pytest

from runport.testing._models import FunctionModels, ScriptedModels
from runport.testing._names import ALLOW_MODEL_REQUESTS, MARKER

_BEFORE = pytest.StashKey[str | None]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: let this test's runport adapters reach real providers "
        f"({ALLOW_MODEL_REQUESTS}=1 for the test)",
    )
    before = os.environ.get(ALLOW_MODEL_REQUESTS)
    config.stash[_BEFORE] = before
    if before is None:
        os.environ[ALLOW_MODEL_REQUESTS] = "0"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _BEFORE in config.stash and config.stash[_BEFORE] is None:
        os.environ.pop(ALLOW_MODEL_REQUESTS, None)


def pytest_report_header(config: pytest.Config) -> str:
    value = os.environ.get(ALLOW_MODEL_REQUESTS)
    shown = "refused except to loopback" if value == "0" else "allowed"
    return f"runport: model requests {shown} ({ALLOW_MODEL_REQUESTS}={value})"


@pytest.fixture(autouse=True)
def _runport_model_requests(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if request.node.get_closest_marker(MARKER) is not None:
        monkeypatch.setenv(ALLOW_MODEL_REQUESTS, "1")


@pytest.fixture
def scripted_model() -> ScriptedModels:
    """``scripted_model("Hello, ", ...)``: a scripted model for this test (``ScriptedModels``)."""
    return ScriptedModels()


@pytest.fixture
def function_model() -> FunctionModels:
    """``function_model(handler)``: a model written as a function (``FunctionModels``)."""
    return FunctionModels()
