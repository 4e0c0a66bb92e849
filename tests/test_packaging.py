"""Every package is its own distribution: built alone, installable alone, usable alone.

The wheels are built once per module into a temporary folder; each install goes into a fresh
virtual environment. runport's own wheels come only from that folder (``--no-index``), so a
same-named project on an index can never stand in for them; their third-party dependencies
come from the index (or uv's cache).
"""

from __future__ import annotations

import email.parser
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from email.message import Message
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "packages" / "cli" / "tests" / "data" / "quick"
# Package name -> its folder: everything under packages/, plus conformance/ once it exists.
FOLDERS = {path.parent.name: path.parent for path in (ROOT / "packages").glob("*/pyproject.toml")}
if (ROOT / "conformance" / "pyproject.toml").is_file():
    FOLDERS["conformance"] = ROOT / "conformance"
# packages/runport is the distribution people install: metadata and dependencies, no code.
META = FOLDERS.pop("runport")
DISTRIBUTIONS = sorted(["runport", *(f"runport-{package}" for package in FOLDERS)])
URLS = ("Homepage", "Documentation", "Source", "Issues")
UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")

# the wheels are built once: on one pytest-xdist worker, the module fixture is made once
pytestmark = [
    pytest.mark.skipif(UV is None, reason="uv is not on PATH (pip install uv)"),
    pytest.mark.xdist_group("test_packaging"),
]


def uv(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    assert UV is not None
    result = subprocess.run(
        [UV, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, f"uv {' '.join(map(str, args))}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    uv("build", "--all-packages", "--out-dir", out, "--quiet")
    conformance = ROOT / "conformance"
    if (conformance / "pyproject.toml").is_file() and not list(
        out.glob("runport_conformance-*.whl")
    ):  # not (yet) a workspace member: build it on its own
        uv("build", conformance, "--out-dir", out, "--quiet")
    uv("build", META, "--out-dir", out, "--quiet")  # not a workspace member: it has no code
    return out


def wheel(dist: Path, distribution: str) -> Path:
    [found] = dist.glob(f"{distribution.replace('-', '_')}-*.whl")
    return found


def metadata(path: Path) -> Message:
    with zipfile.ZipFile(path) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode())


def sibling_requirements(dist: Path, distribution: str) -> set[str]:
    """``distribution`` and every runport distribution it needs, transitively."""
    found = {distribution}
    pending = [distribution]
    while pending:
        for line in metadata(wheel(dist, pending.pop())).get_all("Requires-Dist") or []:
            requirement = Requirement(line)
            name = canonicalize_name(requirement.name)
            if name.startswith("runport-") and requirement.marker is None and name not in found:
                found.add(name)
                pending.append(name)
    return found


@pytest.mark.parametrize("package", sorted(FOLDERS))
def test_each_package_builds_a_typed_documented_wheel_and_sdist(dist: Path, package: str) -> None:
    distribution = f"runport-{package}"
    built = wheel(dist, distribution)
    with zipfile.ZipFile(built) as archive:
        names = set(archive.namelist())
    assert f"runport/{package}/py.typed" in names
    assert f"runport/{package}/__init__.py" in names
    assert "runport/__init__.py" not in names  # PEP 420: the namespace stays open

    meta = metadata(built)
    assert meta["Name"] == distribution
    assert meta["Description-Content-Type"] == "text/markdown"
    readme = (FOLDERS[package] / "README.md").read_text(encoding="utf-8")
    assert readme.splitlines()[0] in str(meta.get_payload())
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert any(c.startswith("Programming Language :: Python :: 3.11") for c in classifiers)
    for line in meta.get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        if requirement.name.startswith("runport-"):
            operators = {spec.operator for spec in requirement.specifier}
            assert {">=", "<"} <= operators, f"{distribution}: {line} is not a bounded range"

    [sdist] = dist.glob(f"{distribution.replace('-', '_')}-*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"README.md", "pyproject.toml", f"src/runport/{package}/py.typed"} <= members


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_every_wheel_carries_the_metadata_an_index_shows(dist: Path, distribution: str) -> None:
    meta = metadata(wheel(dist, distribution))
    assert meta["Name"] == distribution
    assert len(meta["Summary"] or "") >= 20
    assert meta["Description-Content-Type"] == "text/markdown"
    assert str(meta.get_payload()).startswith(f"# {distribution}\n")
    assert meta["License-Expression"] == "MIT"
    assert meta["Requires-Python"] == ">=3.11"
    urls = dict(line.split(", ", 1) for line in meta.get_all("Project-URL") or [])
    assert set(urls) == set(URLS)
    assert all(url.startswith("https://github.com/runport/runport") for url in urls.values())
    classifiers = set(meta.get_all("Classifier") or [])
    assert {
        "Development Status :: 3 - Alpha",
        "Intended Audience :: Developers",
        "Programming Language :: Python :: 3.11",
        "Typing :: Typed",
    } <= classifiers


def fresh_venv(root: Path, dist: Path, distribution: str) -> tuple[Path, set[str]]:
    """A new environment holding ``distribution``, its runport siblings from ``dist`` and
    their third-party dependencies — nothing else of runport."""
    venv = root / f"venv-{distribution}"
    uv("venv", "--quiet", "--python", sys.executable, venv)
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    siblings = sibling_requirements(dist, distribution)
    # runport's wheels only from the build folder, then the rest of what they require.
    uv(
        *("pip", "install", "--quiet", "--python", python),
        *("--no-index", "--find-links", dist, "--no-deps", *sorted(siblings)),
    )
    uv("pip", "install", "--quiet", "--python", python, "--find-links", dist, distribution)
    return python, siblings


def installed_runport(python: Path) -> set[str]:
    script = (
        "import importlib.metadata as m; "
        "print('\\n'.join(sorted({d.metadata['Name'] for d in m.distributions()})))"
    )
    result = subprocess.run(
        [python, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return {canonicalize_name(n) for n in result.stdout.split() if n.lower().startswith("runport")}


SCENARIO_RUN = textwrap.dedent(
    """
    import importlib.util
    import sys

    from runport.contracts import ExecutionRequest
    from runport.core import compile_contract, load_contract
    from runport.mock import ScriptedRuntime

    contract = load_contract(sys.argv[1])
    runtime = ScriptedRuntime.from_scenario(sys.argv[2])
    request = ExecutionRequest(interaction=compile_contract(contract, inputs={"topic": "rivers"}))
    events = []
    receipt = runtime.execute_streaming(request, events.append)
    assert receipt.output == "Rivers run downhill.", receipt
    assert [event.kind for event in events] == ["Delta", "Delta", "Delta", "Complete"]
    for other in ("runport.application", "runport.cli", "runport.mcp", "runport.openai"):
        assert importlib.util.find_spec(other) is None, other
    print(receipt.output_fingerprint)
    """
)


def test_runport_mock_installs_and_plays_a_scenario_alone(dist: Path, tmp_path: Path) -> None:
    python, siblings = fresh_venv(tmp_path, dist, "runport-mock")
    assert siblings == {"runport-mock", "runport-core", "runport-contracts", "runport-ports"}
    assert installed_runport(python) == siblings

    result = subprocess.run(
        [python, "-c", SCENARIO_RUN, QUICK / "contract.yaml", QUICK / "scenario.yaml"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,  # not the repository, so nothing is imported from the source tree
    )
    assert result.returncode == 0, result.stderr

    from runport.contracts import ExecutionRequest
    from runport.core import compile_contract, load_contract
    from runport.mock import ScriptedRuntime

    request = ExecutionRequest(
        interaction=compile_contract(
            load_contract(QUICK / "contract.yaml"), inputs={"topic": "rivers"}
        )
    )
    here = ScriptedRuntime.from_scenario(QUICK / "scenario.yaml").execute(request)
    assert result.stdout.strip() == here.output_fingerprint


def test_runport_conformance_installs_and_runs_alone(dist: Path, tmp_path: Path) -> None:
    if not list(dist.glob("runport_conformance-*.whl")):
        pytest.skip("conformance/ has no buildable runport-conformance package yet")
    python, siblings = fresh_venv(tmp_path, dist, "runport-conformance")
    assert "runport-mock" not in siblings
    assert installed_runport(python) == siblings

    # Every public name resolves (the package loads its modules lazily) and the pytest
    # plugin it registers loads in a run that collects nothing.
    load = (
        "import runport.conformance as c, importlib.util as u; "
        "[getattr(c, n) for n in c.__all__]; "
        "import runport.conformance.loopback, runport.conformance.providers; "
        "import runport.conformance.json_texts; "
        "assert u.find_spec('runport.mock') is None"
    )
    subprocess.run([python, "-c", load], check=True, timeout=120, cwd=tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    collected = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", empty],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=empty,
    )
    assert collected.returncode == 5, collected.stdout + collected.stderr  # no tests, no error

    # An adapter author's own adapter, with only runport-conformance installed: the plugin
    # runs the black-box group on it.
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_echo_adapter.py").write_text(ECHO_SUITE, encoding="utf-8")
    ran = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", suite],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=suite,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert " passed" in ran.stdout
    assert "failed" not in ran.stdout


ECHO_SUITE = textwrap.dedent(
    """
    from runport.conformance import RuntimeAdapterConformance
    from runport.contracts import (
        AdapterDescriptor, CompiledInteraction, ExecutionRequest, Message,
    )
    from runport.core import build_receipt
    from runport.ports import RuntimeAdapter


    class Echo(RuntimeAdapter):
        def descriptor(self):
            return AdapterDescriptor(id="echo", version="1", capabilities=["text"])

        def execute(self, request):
            text = request.interaction.messages[-1].content
            return build_receipt(request, adapter=self.descriptor(), text=text,
                                 finish_reason="stop")


    class TestEcho(RuntimeAdapterConformance):
        protocol = None

        def make_adapter(self, upstream):
            return Echo()

        def sample_requests(self):
            interaction = CompiledInteraction(
                compiler="test", contract_id="echo", contract_version="1.0.0",
                messages=[Message(role="user", content="hello")],
                output_schema={"type": "string"},
            )
            return [ExecutionRequest(interaction=interaction)]
    """
)


def test_the_runport_wheel_holds_no_code_and_gives_a_working_command(
    dist: Path, tmp_path: Path
) -> None:
    built = wheel(dist, "runport")
    with zipfile.ZipFile(built) as archive:
        assert all(name.startswith("runport-0.1.0.dist-info/") for name in archive.namelist())
    python, siblings = fresh_venv(tmp_path, dist, "runport")
    expected = {
        "runport",
        *(
            f"runport-{p}"
            for p in ("cli", "application", "mock", "openai", "http", "core", "ports")
        ),
        "runport-contracts",
    }
    assert siblings == expected
    assert installed_runport(python) == expected  # extras ([mcp], [conformance]) stay out
    command = python.parent / ("runport.exe" if sys.platform == "win32" else "runport")

    def runport(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [command, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,  # not the repository, so nothing is imported from the source tree
        )

    versions = runport("--version")
    assert versions.returncode == 0, versions.stderr
    assert versions.stdout.splitlines() == [f"{name} 0.1.0" for name in sorted(expected)]
    ran = runport(
        "run", QUICK / "contract.yaml", "-i", "topic=rivers", "--scenario", QUICK / "scenario.yaml"
    )
    assert ran.returncode == 0, ran.stderr
    assert '"output": "Rivers run downhill."' in ran.stdout
    adapters = runport("adapters")
    assert [line.split()[0] for line in adapters.stdout.splitlines()] == [
        "azure-openai",
        "mock",
        "openai",
        "openai-responses",
    ]
    mcp = runport("mcp", "--contracts", tmp_path)
    assert mcp.returncode == 1
    assert mcp.stderr == (
        "runport: error: usage: runport mcp needs the runport-mcp package: "
        "pip install 'runport[mcp]'\n"
    )
