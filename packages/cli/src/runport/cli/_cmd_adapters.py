"""``runport adapters``: what ``--adapter`` can name here, found the way ``run`` finds them.

Each adapter is started with no options (or with ``--scenario`` when its factory takes one)
only to read its descriptor; one that cannot start is listed with the reason instead, so a
broken or half-configured plugin never hides the others or ends in a traceback.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

from runport.application import adapter_entry_points
from runport.ports import RuntimeAdapter

HELP = "list the installed adapters"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", type=Path, help="start the mock with this scenario")
    parser.add_argument("--json", action="store_true", help="write the list as JSON")


def main(args: argparse.Namespace) -> int:
    return list_adapters(scenario=args.scenario, as_json=args.json)


@dataclass
class AdapterRow:
    name: str
    distribution: str
    id: str | None = None
    version: str | None = None
    capabilities: tuple[str, ...] = ()
    note: str | None = None

    def as_json(self) -> dict[str, Any]:
        descriptor = (
            None
            if self.id is None
            else {"id": self.id, "version": self.version, "capabilities": list(self.capabilities)}
        )
        return {
            "name": self.name,
            "distribution": self.distribution,
            "descriptor": descriptor,
            "note": self.note,
        }


def _distribution(entry: EntryPoint) -> str:
    dist = entry.dist
    return "unknown" if dist is None else f"{dist.name} {dist.version}"


def takes(factory: Any, option: str) -> bool:
    """Whether an adapter factory names the keyword ``option`` among its parameters.

    A ``**options`` factory does not count: it usually passes its options on to a constructor
    that takes no such keyword, so it is given only what it names (issue 22).
    """
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.name == option and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters
    )


def describe(name: str, entry: EntryPoint, scenario: Path | None) -> AdapterRow:
    row = AdapterRow(name=name, distribution=_distribution(entry))
    try:
        factory = entry.load()
    except Exception as error:  # a plugin that does not import is reported, not raised
        row.note = f"cannot be loaded: {type(error).__name__}: {error}"
        return row
    needs_scenario = takes(factory, "scenario")
    options = {"scenario": str(scenario)} if scenario is not None and needs_scenario else {}
    try:
        adapter = factory(**options)
        if not isinstance(adapter, RuntimeAdapter):
            raise TypeError(f"the factory returned {type(adapter).__name__}")
        descriptor = adapter.descriptor()
    except Exception as error:  # needs options it was not given, or is misconfigured
        row.note = (
            "needs --scenario"
            if needs_scenario and scenario is None
            else f"cannot start without options: {error}"
        )
        return row
    row.id, row.version = descriptor.id, descriptor.version
    row.capabilities = tuple(descriptor.capabilities)
    return row


def list_adapters(*, scenario: Path | None, as_json: bool) -> int:
    rows = [describe(name, ep, scenario) for name, ep in sorted(adapter_entry_points().items())]
    if as_json:
        sys.stdout.write(json.dumps([row.as_json() for row in rows], indent=2) + "\n")
        return 0
    if not rows:
        sys.stdout.write("no adapters installed (entry-point group runport.adapters)\n")
        return 0
    name_width = max(len(row.name) for row in rows)
    dist_width = max(len(row.distribution) for row in rows)
    for row in rows:
        if row.id is None:
            detail = f"not started: {row.note}"
        else:
            detail = f"{row.id} {row.version} [{', '.join(row.capabilities)}]"
        sys.stdout.write(f"{row.name:<{name_width}}  {row.distribution:<{dist_width}}  {detail}\n")
    return 0
