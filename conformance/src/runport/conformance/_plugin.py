"""The pytest plugin (entry point ``pytest11``): a per-law summary after a conformance run.

Loaded by every pytest run wherever the package is installed, so it imports nothing from the
suite and does nothing unless a collected test belongs to a ``RuntimeAdapterConformance``
subclass (recognized by a class attribute, without importing the suite). Then it adds one
section to the terminal summary: for each adapter class, each check with its counts and the
cases that failed — the report ``runport conformance`` prints too.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from _pytest.terminal import TerminalReporter

_ITEMS = pytest.StashKey[dict[str, str]]()
_ORDER = ("failed", "error", "passed", "skipped", "xfailed", "xpassed")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note the suite's items among those that will run (after ``-k``/``-m`` deselection)."""
    suite_items: dict[str, str] = {}
    for item in session.items:
        cls = getattr(item, "cls", None)
        if cls is not None and getattr(cls, "__runport_conformance__", False) is True:
            protocol = getattr(cls, "protocol", None)
            suite_items[item.nodeid] = f"{cls.__name__} (protocol {protocol!r})"
    if suite_items:
        session.config.stash[_ITEMS] = suite_items


def _check_and_case(nodeid: str) -> tuple[str, str]:
    name = nodeid.rsplit("::", 1)[-1]
    check, _, case = name.partition("[")
    return check.removeprefix("test_"), case.rstrip("]")


def pytest_terminal_summary(
    terminalreporter: TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    suite_items = config.stash.get(_ITEMS, None)
    if not suite_items:
        return
    outcomes: dict[str, str] = {}
    for status in _ORDER:
        for report in terminalreporter.stats.get(status, []):
            nodeid = getattr(report, "nodeid", None)
            if nodeid in suite_items and nodeid not in outcomes:
                outcomes[nodeid] = status
    table: dict[str, dict[str, dict[str, list[str]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for nodeid, owner in suite_items.items():
        check, case = _check_and_case(nodeid)
        table[owner][check][outcomes.get(nodeid, "not run")].append(case or "-")
    terminalreporter.section("runport conformance")
    for owner, checks in table.items():
        terminalreporter.write_line(owner)
        for check, by_status in checks.items():
            counts = ", ".join(
                f"{len(by_status[status])} {status}"
                for status in (*_ORDER, "not run")
                if status in by_status
            )
            failing = by_status.get("failed", []) + by_status.get("error", [])
            tail = f" — FAILED: {', '.join(failing)}" if failing else ""
            terminalreporter.write_line(f"  {check:<32} {counts}{tail}")
