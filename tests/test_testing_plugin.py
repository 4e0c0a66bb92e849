"""runport.testing, as a user meets it: pytest sessions of their own (subprocesses, the plugin
loaded from runport-mock's ``pytest11`` entry point) with the fixtures, ``assert_streamed`` and
the guard that keeps a test from reaching a real provider (issue 44 item 2, SPEC §34).

The guarded address is TEST-NET-3 (203.0.113.1, RFC 5737): nothing answers there even if the
guard failed, and the adapter's transport records every attempt, so "refused before any
connection" is what is asserted, not a timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("testing-plugin")

GUARDED = """
import asyncio

import httpx
import pytest

from runport.application import aexecute_contract, define_contract, execute_contract
from runport.openai import AsyncOpenAIChatAdapter, OpenAIChatAdapter

CONTRACT = define_contract("greet", user="Greet {{ inputs.name }}", inputs={"name": str})
attempts = []


@pytest.fixture(autouse=True)
def _fresh():
    attempts.clear()


async def ignore(event):
    pass


def record(request):
    attempts.append(str(request.url))
    return httpx.Response(503, json={"error": {"message": "recorded, not served"}})


def call(url):
    client = httpx.Client(transport=httpx.MockTransport(record))
    adapter = OpenAIChatAdapter(base_url=url, model="m", http_client=client)
    return execute_contract(CONTRACT, adapter, inputs={"name": "Ada"})


async def acall(url):
    client = httpx.AsyncClient(transport=httpx.MockTransport(record))
    adapter = AsyncOpenAIChatAdapter(base_url=url, model="m", http_client=client)
    return await aexecute_contract(CONTRACT, adapter, inputs={"name": "Ada"}, on_event=ignore)


def test_a_real_provider(capsys):
    for envelope in (call("http://203.0.113.1/v1"), asyncio.run(acall("https://203.0.113.1/v1"))):
        code = envelope.diagnostics[0].code
        print(code, envelope.diagnostics[0].message)
    assert attempts == []


def test_loopback_and_reserved_names_are_always_reached():
    for url in ("http://127.0.0.1:9/v1", "http://[::1]:9/v1", "http://localhost:9/v1",
                "http://upstream.test/v1"):
        assert call(url).diagnostics[0].code == "TQX_RUNTIME_UNAVAILABLE"
    assert len(attempts) == 4


@pytest.mark.allow_model_requests
def test_marked():
    assert call("http://203.0.113.1/v1").diagnostics[0].code == "TQX_RUNTIME_UNAVAILABLE"
    assert attempts == ["http://203.0.113.1/v1/chat/completions"]
"""


def session(
    tmp_path: Path, source: str, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_user.py").write_text(source, encoding="utf-8")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNPORT_", "PYTEST_"))}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "test_user.py",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-rA",
            "-s",
            *args,
        ],
        cwd=tmp_path,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_test_that_did_not_ask_cannot_reach_a_provider(tmp_path: Path) -> None:
    done = session(tmp_path, GUARDED)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    refusals = [line[line.index("TQX_") :] for line in lines if "TQX_" in line]
    assert len(refusals) == 2, done.stdout
    for line in refusals:
        assert line.startswith("TQX_ACCESS_DENIED a model request to http")
        assert "203.0.113.1" in line
        assert "RUNPORT_ALLOW_MODEL_REQUESTS=1" in line
        assert "@pytest.mark.allow_model_requests" in line
    assert "runport: model requests refused except to loopback" in done.stdout


def test_the_variable_allows_every_test(tmp_path: Path) -> None:
    source = GUARDED.replace("    assert attempts == []\n", "    assert len(attempts) == 2\n")
    done = session(tmp_path, source, RUNPORT_ALLOW_MODEL_REQUESTS="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "TQX_RUNTIME_UNAVAILABLE" in done.stdout
    assert "TQX_ACCESS_DENIED" not in done.stdout


def test_the_guard_holds_in_processes_a_test_starts(tmp_path: Path) -> None:
    source = """
import subprocess, sys

def test_cli():
    done = subprocess.run(
        [sys.executable, "-m", "runport.cli", "run", "contract.yaml", "-i", "name=Ada",
         "--adapter", "openai", "--stream"],
        env={**__import__("os").environ, "RUNPORT_OPENAI_BASE_URL": "http://203.0.113.1/v1",
             "RUNPORT_OPENAI_MODEL": "m"},
        capture_output=True, text=True, timeout=120,
    )
    print(done.stdout, done.stderr)
    assert done.returncode != 0
    assert "TQX_ACCESS_DENIED" in done.stdout + done.stderr
"""
    (tmp_path / "contract.yaml").write_text(
        "api_version: runport/v1alpha1\nid: greet\nversion: 1.0.0\n"
        "inputs: {name: {schema: {type: string}, required: true}}\n"
        "messages: [{role: user, content: 'Greet {{ inputs.name }}'}]\n"
        "output_schema: {type: string}\n",
        encoding="utf-8",
    )
    done = session(tmp_path, source)
    assert done.returncode == 0, done.stdout + done.stderr


FIXTURES = '''
import asyncio

import pytest

from runport.application import aexecute_contract, define_contract, run_stream
from runport.testing import assert_streamed, call

contract = define_contract("greet", user="Greet {{ inputs.name }}", inputs={"name": str})


def test_scripted_streams(scripted_model):
    events = []
    run_stream(contract, scripted_model(["Hello, ", "Ada"]), inputs={"name": "Ada"},
               on_event=events.append)
    assert_streamed(events, text="Hello, Ada", tool_calls=[])


def test_scripted_tools(scripted_model):
    def get_weather(city: str) -> dict:
        """The weather."""
        return {"celsius": 12}

    events = []
    run_stream(contract, scripted_model(call("get_weather", {"city": "Delft"}), "Warm"),
               inputs={"name": "Ada"}, tools=[get_weather], on_event=events.append)
    assert_streamed(events, text="Warm", tool_calls=[("get_weather", {"city": "Delft"})])
    assert_streamed(events, tool_calls=["get_weather"])
    with pytest.raises(AssertionError, match="tool calls"):
        assert_streamed(events, tool_calls=["get_time"])
    with pytest.raises(AssertionError, match="text: streamed 'Warm', expected 'Cold'"):
        assert_streamed(events, text="Cold")


def test_function_model_sync_and_async(function_model):
    @function_model
    def model(request, emit):
        emit.reasoning("Short.")
        emit.text("Hi")

    events = []
    run_stream(contract, model, inputs={"name": "Ada"}, on_event=events.append)
    assert_streamed(events, text="Hi", reasoning="Short.")

    async def amodel(request, emit):
        await emit.text("Hi")

    seen = []
    async def collect(event):
        seen.append(event)
    asyncio.run(aexecute_contract(contract, function_model(amodel), inputs={"name": "Ada"},
                                  on_event=collect))
    assert_streamed(seen, text="Hi")
    assert len(function_model.made) == 2


def test_failures_and_broken_streams(function_model):
    from runport.contracts import Complete, Delta, Failed
    from runport.ports import PortError

    def down(request, emit):
        emit.text("Hel")
        raise PortError("TQX_RUNTIME_UNAVAILABLE", "reset")

    events = []
    with pytest.raises(Exception):
        run_stream(contract, function_model(down), inputs={"name": "Ada"},
                   on_event=events.append)
    assert_streamed(events, text="Hel", failed="TQX_RUNTIME_UNAVAILABLE")
    with pytest.raises(AssertionError, match="the stream failed: TQX_RUNTIME_UNAVAILABLE"):
        assert_streamed(events)
    with pytest.raises(AssertionError, match="no terminal event"):
        assert_streamed([Delta(text="a")])
    complete = next(e for e in run_stream_events(function_model) if isinstance(e, Complete))
    with pytest.raises(AssertionError, match="is not what its turn streamed"):
        assert_streamed([Delta(text="x"), complete])
    with pytest.raises(AssertionError, match="progress after the last terminal"):
        assert_streamed([Delta(text="Hi"), complete, Delta(text="more")])


def run_stream_events(function_model):
    events = []
    run_stream(contract, function_model(lambda r, e: e.text("Hi")), inputs={"name": "Ada"},
               on_event=events.append)
    return events


def test_bad_scripts_are_refused(scripted_model):
    with pytest.raises(TypeError, match="at least one turn"):
        scripted_model()
    with pytest.raises(TypeError, match="turn 2: int is neither a text nor a call"):
        scripted_model("a", [1])
'''


def test_the_fixtures_and_assert_streamed(tmp_path: Path) -> None:
    done = session(tmp_path, FIXTURES)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed" in done.stdout


def test_importing_runport_testing_or_runport_mock_needs_no_pytest(tmp_path: Path) -> None:
    """The plugin module alone imports pytest (ADR 0049): a program that never runs pytest
    imports runport.mock and runport.testing's helpers without it."""
    probe = (
        "import sys; sys.modules['pytest'] = None\n"
        "import runport.mock, runport.testing\n"
        "assert runport.testing.script('Hi').turns\n"
        "try:\n    import runport.testing._plugin\n"
        "except ImportError:\n    print('plugin needs pytest')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "plugin needs pytest"
