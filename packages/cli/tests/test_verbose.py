"""``-v``/``--verbose`` (docs/observability.md): the packages' records on stderr, at WARNING
without it, INFO with ``-v``, DEBUG with ``-vv``; stdout is never touched."""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from runport.cli._main import main

Cli = Callable[..., subprocess.CompletedProcess[str]]
QUICK = Path(__file__).with_name("data") / "quick"
RUN = ("run", QUICK / "contract.yaml", "--input", QUICK / "input.json")
SCENARIO = ("--scenario", QUICK / "scenario.yaml")
DEBUG_LINES = [
    "runport: DEBUG runport.application: adapter 'mock' from runport.mock:create_adapter "
    "(runport-mock)",
    "runport: DEBUG runport.mock: scenario cli-echo: playing turn 1 of 1",
]


@pytest.mark.parametrize(
    ("flags", "lines"),
    [
        ((), []),
        (("-v",), []),
        (("-vv",), DEBUG_LINES),
        (
            ("--verbose", "--verbose"),
            DEBUG_LINES,
        ),
    ],
)
def test_verbosity_chooses_what_reaches_stderr(
    runport: Cli, flags: tuple[str, ...], lines: list[str]
) -> None:
    result = runport(*flags, *RUN, *SCENARIO)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == lines
    assert json.loads(result.stdout)["ok"] is True


def test_a_command_run_in_process_leaves_the_logging_tree_as_it_found_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logger = logging.getLogger("runport")
    before = (list(logger.handlers), logger.level)
    assert main(["-vv", *map(str, RUN), *map(str, SCENARIO)]) == 0
    assert "runport: DEBUG runport.mock: scenario cli-echo" in capsys.readouterr().err
    assert (list(logger.handlers), logger.level) == before
