"""The newcomer's path, end to end (issue 44 items 1, 5; docs/install.md): the wheelhouse built by
the one command docs/install.md gives, installed with the install line it gives into a fresh
venv of Debian's Python outside the repository; then, in that project, a user's script streams
a contract through the mock and through a loopback OpenAI-compatible server, serves a run over
FastAPI (the user's own dependency) with its result as JSON at the end, and a user's pytest file
uses the plugin; and every docs page's blocks run in a venv built by that page's install line."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from . import test_snippets

ROOT = Path(__file__).resolve().parent.parent
INSTALL_MD = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
SYSTEM_PYTHON = Path("/usr/bin/python3")
WHEELHOUSE = (
    ".venv/bin/uv build --all-packages --wheel -o wheelhouse"
    " && .venv/bin/uv build --wheel -o wheelhouse packages/runport"
)
INSTALL = ".venv/bin/pip install --find-links WHEELHOUSE 'runport[server,anthropic,testing]'"

USERS_OWN = "fastapi>=0.115"
"""What the user's project depends on besides runport (from PyPI, as any project would)."""

pytestmark = pytest.mark.xdist_group("own-project")

ENABLED = os.environ.get("RUNPORT_OWN_PROJECT_TESTS") == "1"
SKIP_REASON = (
    "the fresh project outside the repository runs in its own tox env: `tox run -e own-project` "
    "(Debian's Python at /usr/bin/python3, a built wheelhouse, a venv per install line; "
    ".ci/run runs it after the README's test command)"
)

SCRIPT = r"""
import asyncio, json, os, socket, sys, threading

import httpx, uvicorn
from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from runport.application import astream_run, define_contract, execute_contract
from runport.mock import AsyncScriptedRuntime, ScriptedRuntime
from runport.openai import OpenAIChatAdapter
from runport.testing import assert_streamed, script

contract = define_contract("greet", user="Greet {{ inputs.name }}", inputs={"name": str})

# 1. through the mock
seen = []
envelope = execute_contract(contract, ScriptedRuntime(script(["Hello, ", "Ada"])),
                            inputs={"name": "Ada"}, on_event=seen.append)
assert_streamed(seen, text="Hello, Ada")
print("mock", envelope.result.output)

# 2. through a loopback OpenAI-compatible server
seen = []
adapter = OpenAIChatAdapter(base_url=os.environ["OPENAI_BASE"], model="tiny")
envelope = execute_contract(contract, adapter, inputs={"name": "Ada"}, on_event=seen.append)
assert_streamed(seen, text=envelope.result.output)
print("openai", len(seen), envelope.ok)

# 3. a run streamed by FastAPI, its result last
app = FastAPI()

async def frames():
    async with astream_run(contract, AsyncScriptedRuntime(script("Hi, Ada")),
                           inputs={"name": "Ada"}) as events:
        async for event in events:
            yield event.model_dump_json() + "\n"
    yield events.result.model_dump_json() + "\n"

@app.get("/run")
async def endpoint():
    return StreamingResponse(frames(), media_type="application/x-ndjson")

sock = socket.socket()
sock.bind(("127.0.0.1", 0))
server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
thread.start()
while not server.started:
    thread.join(0.05)
lines = httpx.get(f"http://127.0.0.1:{sock.getsockname()[1]}/run").text.splitlines()
server.should_exit = True
thread.join()
print("fastapi", [json.loads(line).get("kind", "result") for line in lines],
      json.loads(lines[-1])["output"])
"""

USER_TEST = """
from runport.application import define_contract, run_stream
from runport.testing import assert_streamed


def test_greets(scripted_model):
    contract = define_contract("greet", user="Greet {{ inputs.name }}", inputs={"name": str})
    events = []
    run_stream(contract, scripted_model(["Hello, ", "Ada"]), inputs={"name": "Ada"},
               on_event=events.append)
    assert_streamed(events, text="Hello, Ada")
"""

GUARD_TEST = """
from runport.application import define_contract, execute_contract
from runport.openai import OpenAIChatAdapter


def test_no_provider_is_reached():
    contract = define_contract("greet", user="Greet {{ inputs.name }}", inputs={"name": str})
    adapter = OpenAIChatAdapter(base_url="http://203.0.113.1/v1", model="m")
    envelope = execute_contract(contract, adapter, inputs={"name": "Ada"})
    assert envelope.diagnostics[0].code == "TQX_ACCESS_DENIED"
"""


def test_the_commands_are_the_ones_docs_install_md_gives() -> None:
    assert WHEELHOUSE in INSTALL_MD
    assert INSTALL.replace("WHEELHOUSE", "/path/to/runport/wheelhouse") in INSTALL_MD


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every distribution's wheel, built once by the command docs/install.md gives."""
    uv = str(Path(sys.executable).parent / "uv")
    built = tmp_path_factory.mktemp("wheelhouse")
    for part in WHEELHOUSE.split(" && "):
        argv = [uv if word == ".venv/bin/uv" else word for word in shlex.split(part)]
        argv = [str(built) if word == "wheelhouse" else word for word in argv]
        subprocess.run([*argv, "-q"], cwd=ROOT, check=True, timeout=300)
    folders = [*(ROOT / "packages").iterdir(), ROOT / "conformance"]
    distributions = [folder for folder in folders if (folder / "pyproject.toml").is_file()]
    assert len(list(built.glob("runport*.whl"))) == len(distributions)
    return built


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNPORT_", "PYTEST_"))}
    env.pop("VIRTUAL_ENV", None)
    return env


def make_project(project: Path, wheelhouse: Path, words: list[str]) -> Path:
    """A venv of Debian's Python in ``project``, ``pip install``-ed with ``words`` from the
    wheelhouse (as docs/install.md says); its python."""
    assert SYSTEM_PYTHON.is_file(), "no Debian Python at /usr/bin/python3"
    project.mkdir(parents=True, exist_ok=True)
    env = _clean_env()
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", ".venv"], cwd=project, check=True, env=env)
    pip = [".venv/bin/pip", "install", "-q", "--find-links", str(wheelhouse), *words]
    done = subprocess.run(pip, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return project / ".venv" / "bin" / "python"


@pytest.mark.skipif(not ENABLED, reason=SKIP_REASON)
def test_a_fresh_project_installs_from_the_wheelhouse_and_uses_runport(
    tmp_path: Path, wheelhouse: Path
) -> None:
    project = tmp_path / "myproject"  # outside the repository
    install = shlex.split(INSTALL.replace("WHEELHOUSE", str(wheelhouse)))
    assert install[:3] == [".venv/bin/pip", "install", "--find-links"]
    python = make_project(project, wheelhouse, [*install[4:], USERS_OWN])
    env = _clean_env()

    conformance = pytest.importorskip("runport.conformance")
    plain = next(case for case in conformance.CASES if case.name == "plain_text")
    upstream = conformance.ScriptedUpstream([plain] * 2, pacing="off")
    try:
        (project / "app.py").write_text(SCRIPT, encoding="utf-8")
        ran = subprocess.run(
            [python, "app.py"],
            cwd=project,
            env={**env, "OPENAI_BASE": upstream.base_url},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        upstream.close()
    assert ran.returncode == 0, ran.stderr[-4000:]
    said = ran.stdout.splitlines()
    assert said[0] == "mock Hello, Ada"
    assert said[1].startswith("openai ")
    assert said[1].endswith(" True")
    assert said[2] == "fastapi ['Delta', 'Complete', 'result'] Hi, Ada"
    where = subprocess.run(
        [python, "-c", "import runport.mock; print(runport.mock.__file__)"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(ROOT) not in where.stdout  # installed from the wheels, not the checkout

    (project / "test_mine.py").write_text(USER_TEST + GUARD_TEST, encoding="utf-8")
    assert len(USER_TEST.strip().splitlines()) <= 10
    tested = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert tested.returncode == 0, tested.stdout[-4000:]
    assert "2 passed" in tested.stdout


SNIPPETS = [s for s in test_snippets.SNIPPETS if s.marker != "not-run"]
_PROJECTS: dict[tuple[str, ...], Path] = {}


@pytest.mark.skipif(not ENABLED, reason=SKIP_REASON)
@pytest.mark.parametrize("snippet", SNIPPETS, ids=[snippet.name for snippet in SNIPPETS])
def test_each_snippet_runs_where_its_page_s_install_line_alone_installed_runport(
    snippet: test_snippets.Snippet,
    tmp_path: Path,
    wheelhouse: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The page's own install line, and nothing else, builds the venv its blocks run in (one
    venv per distinct line, built once): a block that needs more than its page says fails."""
    python = _PROJECTS.get(snippet.install)
    if python is None:
        folder = tmp_path_factory.mktemp("project")
        python = _PROJECTS[snippet.install] = make_project(folder, wheelhouse, [*snippet.install])
    result = test_snippets.run_snippet(snippet, tmp_path, python)
    assert result.returncode == 0, (
        f"{snippet.name} ({snippet.language}), installed with "
        f"`pip install {shlex.join(snippet.install)}`, exited {result.returncode}\n"
        f"--- code\n{snippet.code}--- stdout\n{result.stdout[-4000:]}\n"
        f"--- stderr\n{result.stderr[-4000:]}"
    )
