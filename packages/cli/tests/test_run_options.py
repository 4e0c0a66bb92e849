"""What a person tries first: --version, inputs inline or none, options that do not fit
together, a failure read once, and text from outside that cannot drive the terminal."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest

QUICK = Path(__file__).with_name("data") / "quick"
Cli = Callable[..., subprocess.CompletedProcess[str]]

NO_INPUTS = """\
api_version: runport/v1alpha1
id: cli.fixed
version: 1.0.0
capabilities: [text]
messages:
  - role: user
    content:
      - { kind: text, value: "Say something." }
output_schema: { type: string }
"""

COUNTED = """\
api_version: runport/v1alpha1
id: cli.counted
version: 1.0.0
inputs:
  topic: { schema: { type: string }, required: true }
  count: { schema: { type: integer, minimum: 1 } }
capabilities: [text]
messages:
  - role: user
    content:
      - { kind: text, value: "Tell me about " }
      - kind: interpolate
        expression: { kind: ref, path: inputs.topic }
output_schema: { type: string }
"""

HOSTILE = """\
api_version: runport.mock/v1
id: hostile
turns:
  - events:
      - {kind: delta, text: "calm \\x1b]0;owned\\x07text \\x9b31m"}
      - {kind: fail, code: TQX_RUNTIME_UNAVAILABLE, message: "bad key \\x1b[31mred\\r"}
"""


PLUGIN = """\
from runport.mock import ScriptedRuntime


class Raising(ScriptedRuntime):
    def execute(self, request):
        raise RuntimeError("not a PortError \\x1b[31m")


def raising(*, scenario=None):
    return Raising(ScriptedRuntime.from_scenario(scenario).scenario)


def unconfigured(*, base_url=None):
    raise LookupError("no endpoint configured")


def forwarding(**options):  # passes its options on, to a factory that takes no scenario
    return unconfigured(**options)
"""
PLUGIN_ENTRY_POINTS = {
    "raising": "test_plugins:raising",
    "unconfigured": "test_plugins:unconfigured",
    "forwarding": "test_plugins:forwarding",
}


def envelope_of(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert isinstance(document, dict)
    return document


def test_version_lists_every_installed_runport_distribution(runport: Cli) -> None:
    result = runport("--version")
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ") for line in result.stdout.splitlines())
    for name in ("runport-cli", "runport-core", "runport-application", "runport-mock"):
        assert lines[name] == version(name)
    assert all(name.startswith("runport") for name in lines)
    assert list(lines) == sorted(lines)


def test_a_contract_without_inputs_needs_no_input_file(tmp_path: Path, runport: Cli) -> None:
    contract = tmp_path / "fixed.yaml"
    contract.write_text(NO_INPUTS, encoding="utf-8")
    envelope = envelope_of(runport("run", contract, "--scenario", QUICK / "scenario.yaml"))
    assert envelope["ok"] is True


def test_inline_inputs_are_json_when_they_parse_and_win_over_the_file(
    tmp_path: Path, runport: Cli
) -> None:
    contract = tmp_path / "counted.yaml"
    contract.write_text(COUNTED, encoding="utf-8")
    inputs = tmp_path / "in.json"
    inputs.write_text('{"topic": "rivers", "count": 2}', encoding="utf-8")
    scenario = ("--scenario", QUICK / "scenario.yaml")

    def fingerprint(*args: str | Path) -> object:
        envelope = envelope_of(runport("run", contract, *scenario, *args))
        return envelope["fingerprints"]

    from_file = fingerprint("--input", inputs)
    assert fingerprint("-i", "topic=rivers", "-i", "count=2") == from_file
    assert fingerprint("--input", inputs, "-i", "topic=lakes") == fingerprint(
        "-i", "topic=lakes", "--input-value", "count=2"
    )
    assert fingerprint("--input", inputs, "-i", "topic=lakes") != from_file

    refused = runport("run", contract, *scenario, "-i", "topic=rivers", "-i", "count=many")
    assert refused.returncode == 2
    assert "TQX_VALUE_SCHEMA" in refused.stderr  # "many" is not JSON: it stays a string
    numeric_topic = runport("run", contract, *scenario, "-i", "topic=42")
    assert "TQX_VALUE_SCHEMA" in numeric_topic.stderr  # 42 parses: it is a number
    assert envelope_of(runport("run", contract, *scenario, "-i", 'topic="42"'))["ok"] is True


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["--adapter", "unconfigured", "--scenario", QUICK / "scenario.yaml"], "--adapter mock"),
        (["--adapter", "forwarding", "--scenario", QUICK / "scenario.yaml"], "--adapter mock"),
        (
            ["--scenario", QUICK / "scenario.yaml", "--tools", "json:loads", "--input"],
            "run without them",
        ),
    ],
)
def test_options_that_do_not_fit_together_are_a_usage_error_with_a_hint(
    tmp_path: Path, args: list[str | Path], hint: str, with_plugins: Callable[..., Cli]
) -> None:
    # an adapter whose factory takes no scenario (the shape of runport-openai's)
    runport = with_plugins(PLUGIN, PLUGIN_ENTRY_POINTS)
    if args[-1] == "--input":
        request = tmp_path / "request.json"
        request.write_text(
            '{"inputs": {"topic": "rivers"}, "fixture_output": "x"}', encoding="utf-8"
        )
        args = [*args, request]
    result = runport("run", QUICK / "contract.yaml", "-i", "topic=rivers", *args)
    assert result.returncode == 1
    assert result.stderr.startswith("runport: error: usage: ")
    assert hint in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert "unexpected keyword" not in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("mode", [[], ["--stream"], ["--json"]])
def test_a_failure_is_printed_once_and_cannot_drive_the_terminal(
    tmp_path: Path, mode: list[str], runport: Cli
) -> None:
    scenario = tmp_path / "hostile.yaml"
    scenario.write_text(HOSTILE, encoding="utf-8")
    result = runport("run", QUICK / "contract.yaml", "-i", "topic=x", "--scenario", scenario, *mode)
    assert result.returncode == 2
    for text in (result.stdout, result.stderr):
        assert not any(0x80 <= ord(c) < 0xA0 or (ord(c) < 0x20 and c not in "\n\t") for c in text)
    assert result.stderr == (
        "runport: error: TQX_RUNTIME_UNAVAILABLE: bad key \\u001b[31mred\\u000d\n"
    )
    if mode == ["--stream"]:
        assert "bad key" not in result.stdout  # read once, not a second time on stdout
        assert result.stdout.startswith("calm \\u001b]0;owned\\u0007text \\u009b31m")
    if mode == ["--json"]:  # the data itself: still JSON, and still the very same text
        events = [json.loads(line) for line in result.stdout.splitlines()]
        assert events[0]["text"] == "calm \x1b]0;owned\x07text \x9b31m"
        assert events[-1]["message"] == "bad key \x1b[31mred\r"


@pytest.mark.parametrize(
    ("adapter", "status", "line"),
    [
        (
            # execute_contract turns an adapter's stray exception into a coded failure, naming
            # only its type: what the exception says may come from an upstream
            "raising",
            2,
            "runport: error: TQX_RUNTIME_INVALID_RESPONSE: the adapter (not a PortError) raised "
            "RuntimeError\n",
        ),
        (
            "unconfigured",
            1,
            "runport: error: TQX_DATA_INVALID: cannot start adapter 'unconfigured': "
            "LookupError: no endpoint configured\n",
        ),
    ],
)
def test_even_an_unexpected_exception_is_one_line_never_a_traceback(
    with_plugins: Callable[..., Cli], adapter: str, status: int, line: str
) -> None:
    runport = with_plugins(PLUGIN, PLUGIN_ENTRY_POINTS)
    scenario = ("--scenario", QUICK / "scenario.yaml") if adapter == "raising" else ()
    result = runport(
        "run", QUICK / "contract.yaml", "-i", "topic=x", "--adapter", adapter, *scenario
    )
    assert result.returncode == status
    assert result.stderr == line


def test_an_inline_value_nested_past_the_bound_is_a_coded_error(runport: Cli) -> None:
    done = runport("run", QUICK / "contract.yaml", "-i", "topic=" + "[" * 100_000,
                   "--scenario", QUICK / "scenario.yaml")  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("runport: error: TQX_"), done.stderr
    assert "internal" not in done.stderr
