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
  ``law_1_…`` to ``law_10_…``, then the rest), passed / failed / skipped, under each
  failure its case and the two event sequences, the first difference marked ``>>``, and
  the checks that were not carried out at all, each with its reason;
- **no false greens**: a run in which a suite class carried out no law item (every law test
  skipped, as for ``protocol = None`` without samples) fails, whatever else passed.

The report is built from the test reports alone, so it is the same on a pytest-xdist
controller as in a plain run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest.terminal import TerminalReporter

_ITEMS = pytest.StashKey[dict[str, str]]()
UNCHECKED = pytest.StashKey[list[str]]()
"""The suite classes of the run that carried out no law item (set when the session ends)."""
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


LAW_TESTS = ("test_law_", "test_black_box_")
"""The standard tests that check a law item (one per item; the black box's on samples)."""


def _label(cls: type) -> str:
    protocol = getattr(cls, "protocol", None)
    name = getattr(protocol, "name", protocol)
    flavour = "async, " if getattr(cls, "_runport_async", False) else ""
    return f"{cls.__name__} ({flavour}protocol {name!r})"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note the suite's items among those that will run (after ``-k``/``-m`` deselection)."""
    suite_items: dict[str, str] = {}
    for item in session.items:
        cls = getattr(item, "cls", None)
        if cls is not None and _is_suite(cls):
            suite_items[item.nodeid] = _label(cls)
    if suite_items:
        session.config.stash[_ITEMS] = suite_items


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Name the suite class on its tests' reports (they reach a pytest-xdist controller with
    the report), and keep a failure's facts as JUnit XML properties."""
    report = yield
    cls = getattr(item, "cls", None)
    if cls is None or not _is_suite(cls):
        return report
    report.runport_suite = _label(cls)  # type: ignore[attr-defined]
    excinfo = call.excinfo
    if excinfo is not None:
        facts = getattr(excinfo.value, "runport_violation", None)
        if isinstance(facts, dict):
            item.user_properties.extend((f"runport_{key}", value) for key, value in facts.items())
            report.runport_facts = dict(facts)  # type: ignore[attr-defined]
    return report


def _check_and_case(nodeid: str) -> tuple[str, str]:
    name = nodeid.rsplit("::", 1)[-1]
    # under ``--dist loadgroup`` pytest-xdist ends a grouped test's id with ``@<group>``
    # (after its parameters, if any): the group is no part of the check's name
    at = name.rfind("@")
    if at > name.rfind("]"):
        name = name[:at]
    check, _, case = name.partition("[")
    return check.removeprefix("test_"), case.rstrip("]")


def _skip_reason(report: Any) -> str:
    longrepr = getattr(report, "longrepr", None)
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "")


class _Run:
    """What the session's reports say about each suite class (built on a pytest-xdist
    controller as well as in a plain run)."""

    def __init__(self, terminalreporter: Any, config: pytest.Config) -> None:
        self.status: dict[str, str] = {}
        items: dict[str, str] = config.stash.get(_ITEMS, {})
        self.owner: dict[str, str] = dict(items)
        self.facts: dict[str, dict[str, str]] = {}
        self.reasons: dict[str, str] = {}
        for status in _ORDER:
            for report in terminalreporter.stats.get(status, []):
                nodeid = getattr(report, "nodeid", None)
                owner = getattr(report, "runport_suite", None)
                if nodeid is None or owner is None:
                    continue
                self.owner.setdefault(nodeid, owner)
                if nodeid not in self.status:
                    self.status[nodeid] = status
                if status in ("failed", "error"):
                    self.facts.setdefault(nodeid, dict(getattr(report, "runport_facts", {})))
                if status == "skipped":
                    self.reasons.setdefault(nodeid, _skip_reason(report))

    def table(self) -> dict[str, dict[str, dict[str, list[str]]]]:
        table: dict[str, dict[str, dict[str, list[str]]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(list))
        )
        for nodeid, owner in self.owner.items():
            check, _ = _check_and_case(nodeid)
            table[owner][check][self.status.get(nodeid, "not run")].append(nodeid)
        return table

    def unchecked(self) -> list[str]:
        """The suite classes in which no law item was carried out (passed or failed)."""
        checked = {
            owner
            for nodeid, owner in self.owner.items()
            if self.status.get(nodeid) in ("passed", "failed")
            and nodeid.rsplit("::", 1)[-1].startswith(LAW_TESTS)
        }
        return sorted(set(self.owner.values()) - checked)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A run in which a suite class carried out no law item fails: a wall of skips is not a
    pass (``runport conformance`` and the terminal summary say which class and why)."""
    if hasattr(session.config, "workerinput"):  # a pytest-xdist worker: the controller judges
        return
    if session.config.option.collectonly:  # nothing was meant to run: nothing to judge
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    unchecked = _Run(reporter, session.config).unchecked()
    session.config.stash[UNCHECKED] = unchecked
    if unchecked and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    run = _Run(terminalreporter, config)
    if not run.owner or config.option.collectonly:
        return
    table = run.table()
    unchecked = config.stash.get(UNCHECKED, run.unchecked())
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
                facts = run.facts.get(nodeid, {})
                title = f"{check}[{case}]" if case else check
                problem = facts.get("problem", "see the failure above")
                terminalreporter.write_line(f"    FAILED {title}: {problem}")
                for key in ("expected", "observed"):
                    if key in facts:
                        terminalreporter.write_line(f"      {key + ':':<10}{facts[key]}")
        missing = _not_checked(run, checks)
        if missing:
            terminalreporter.write_line("  not checked:")
            for check, reason in missing:
                terminalreporter.write_line(f"    {check}: {reason}")
        if owner in unchecked:
            terminalreporter.write_line(
                f"  NOTHING CHECKED: no law item was carried out in {owner.split(' ')[0]} "
                "(every law test was skipped or deselected), so this run fails",
                red=True,
            )


def _not_checked(run: _Run, checks: dict[str, dict[str, list[str]]]) -> list[tuple[str, str]]:
    """The checks of one class that were skipped in every case, with the first reason — but
    the black box's, on a class whose protocol's scripted cases check the same laws."""
    missing = []
    for check, by_status in sorted(checks.items(), key=lambda pair: _law_key(pair[0])):
        if set(by_status) != {"skipped"}:
            continue
        reason = run.reasons.get(by_status["skipped"][0], "")
        if "the scripted cases run these checks" not in reason:
            missing.append((check, reason))
    return missing


def _law_key(check: str) -> tuple[int, int, str]:
    """The law items first, in their order (``law_10`` after ``law_9``), then the rest."""
    parts = check.split("_")
    if len(parts) > 1 and parts[0] == "law" and parts[1].isdigit():
        return (0, int(parts[1]), check)
    return (1, 0, check)
