"""A pytest plugin ``runport conformance`` loads into the suite's run to count the checks
that were carried out, so a run in which every check was skipped is not reported as a pass.

pytest calls the hook by name; the module imports nothing of pytest's.
"""

from __future__ import annotations

from typing import Any

checked = 0
"""Checks carried out (passed or failed) since the last :func:`reset`."""


def reset() -> None:
    global checked
    checked = 0


def pytest_runtest_logreport(report: Any) -> None:
    global checked
    if report.when == "call" and report.outcome in ("passed", "failed"):
        checked += 1
