"""The pytest plugin (entry point ``pytest11``): the override guard, and a report per law.

Loaded by every pytest run wherever the package is installed, so it imports nothing from the
suite and does nothing unless a collected class is a conformance suite (recognized by a class
attribute, without importing the suite). Then:

- **one worker per suite class**: each class's tests carry an ``xdist_group`` marker, so
  ``pytest -n N --dist loadgroup`` runs them on one worker, where the class's own findings
  (an adapter that buffers, a read timeout it ignores) spare its other tests the wait;
- **the guard**, at collection: a suite class that replaced or removed a standard test without
  ``@pytest.mark.xfail(reason=…)`` is a collection error, so no ``-k`` can step around it;
- **the facts of each failure** (law, case, expected and observed events, the first
  difference) become the test's JUnit XML properties (``runport_*``);
- **the report**, in the terminal summary: per adapter class and check (one per law item,
  ``law_1_…`` to ``law_10_…``, then the rest), passed / failed / skipped, and under each
  failure its case and the two event sequences, the first difference marked ``>>``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest.terminal import TerminalReporter

_ITEMS = pytest.StashKey[dict[str, str]]()
_FACTS = pytest.StashKey[dict[str, dict[str, str]]]()
_ORDER = ("failed", "error", "passed", "skipped", "xfailed", "xpassed")


def _is_suite(obj: object) -> bool:
    return isinstance(obj, type) and getattr(obj, "__runport_conformance__", False) is True


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(
    collector: pytest.Collector, name: str, obj: object
) -> Generator[None, Any, Any]:
    """Refuse a suite class whose standard tests were weakened without saying why."""
    result = yield
    if _is_suite(obj) and result is not None:
        from runport.conformance._base import override_problems

        assert isinstance(obj, type)
        problems = override_problems(obj)
        if problems:
            raise collector.CollectError(
                f"{name}: standard tests overridden without @pytest.mark.xfail(reason=...): "
                + ", ".join(problems)
                + " — say why the adapter cannot keep the law; a weakened check must not pass "
                "silently"
            )
    return result


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist registers it too; registered here, the marker is known without xdist as well
    config.addinivalue_line(
        "markers", "xdist_group(name): run these tests on one pytest-xdist worker"
    )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep each suite class's tests on one pytest-xdist worker (``--dist loadgroup``): a class
    learns once that its adapter buffers or ignores the read timeout, and its other tests
    skip that wait."""
    for item in items:
        cls = getattr(item, "cls", None)
        if cls is not None and _is_suite(cls):
            item.add_marker(pytest.mark.xdist_group(f"{cls.__module__}.{cls.__qualname__}"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note the suite's items among those that will run (after ``-k``/``-m`` deselection)."""
    suite_items: dict[str, str] = {}
    for item in session.items:
        cls = getattr(item, "cls", None)
        if cls is not None and _is_suite(cls):
            protocol = getattr(cls, "protocol", None)
            flavour = "async, " if getattr(cls, "_runport_async", False) else ""
            suite_items[item.nodeid] = f"{cls.__name__} ({flavour}protocol {protocol!r})"
    if suite_items:
        session.config.stash[_ITEMS] = suite_items
        session.config.stash[_FACTS] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep a failure's facts for the report and as JUnit XML properties."""
    report = yield
    facts_by_node = item.config.stash.get(_FACTS, None)
    excinfo = call.excinfo
    if facts_by_node is not None and excinfo is not None:
        facts = getattr(excinfo.value, "runport_violation", None)
        if isinstance(facts, dict):
            facts_by_node[item.nodeid] = facts
            item.user_properties.extend((f"runport_{key}", value) for key, value in facts.items())
    return report


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
    facts_by_node = config.stash.get(_FACTS, {})
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
        table[owner][check][outcomes.get(nodeid, "not run")].append(nodeid)
    terminalreporter.section("runport conformance")
    for owner, checks in table.items():
        terminalreporter.write_line(owner)
        for check, by_status in sorted(checks.items(), key=lambda pair: _law_key(pair[0])):
            counts = ", ".join(
                f"{len(by_status[status])} {status}"
                for status in (*_ORDER, "not run")
                if status in by_status
            )
            terminalreporter.write_line(f"  {check:<34} {counts}")
            for nodeid in by_status.get("failed", []) + by_status.get("error", []):
                _, case = _check_and_case(nodeid)
                facts = facts_by_node.get(nodeid, {})
                title = f"{check}[{case}]" if case else check
                problem = facts.get("problem", "see the failure above")
                terminalreporter.write_line(f"    FAILED {title}: {problem}")
                for key in ("expected", "observed"):
                    if key in facts:
                        terminalreporter.write_line(f"      {key + ':':<10}{facts[key]}")


def _law_key(check: str) -> tuple[int, int, str]:
    """The law items first, in their order (``law_10`` after ``law_9``), then the rest."""
    parts = check.split("_")
    if len(parts) > 1 and parts[0] == "law" and parts[1].isdigit():
        return (0, int(parts[1]), check)
    return (1, 0, check)
