"""Every code snippet in README.md and docs/ runs as written.

Each ```python, ```sh, ```bash and ```console block is run from a fresh temporary directory:
python blocks with this interpreter, shell blocks with bash (``set -euo pipefail``) with this
interpreter's ``bin`` first on PATH, so ``runport`` is the workspace's. A console block runs
its ``$ `` lines. A snippet therefore writes the files it needs itself, or builds its contract
and scenario from inline data.

An HTML comment right before a block changes how it runs; it must name a known marker and
give a reason, or the snippet fails:

- ``<!-- snippet: not-run (reason) -->`` the block is not run here (for example the README's
  quick start, which ``.ci/run`` runs itself from a clean copy);
- ``<!-- snippet: openai-server (reason) -->`` a loopback OpenAI-compatible server is started
  for the block (the conformance suite's scripted upstream, answering with plain text), and
  ``RUNPORT_OPENAI_BASE_URL`` / ``RUNPORT_OPENAI_MODEL`` point at it, as a reader would set them;
- ``<!-- snippet: vertex-server (reason) -->`` a loopback Vertex AI and its token endpoint
  (runport.conformance.vertex) are started, answering Gemini's stream, and the variables a
  reader would set point at them: ``GOOGLE_APPLICATION_CREDENTIALS`` (a service account's key
  file, whose signed grants the emulation verifies), ``RUNPORT_VERTEX_PROJECT`` and
  ``RUNPORT_VERTEX_GEMINI_BASE_URL``;
- ``<!-- snippet: azure-server (reason) -->`` the same with the suite's emulation of an Azure
  OpenAI resource (``azure-openai-chat``: a deployment's path, an ``api-version``, an
  ``api-key`` or a bearer token required), and ``AZURE_OPENAI_ENDPOINT``,
  ``RUNPORT_AZURE_OPENAI_MODEL`` and ``AZURE_OPENAI_API_KEY`` set;
- ``<!-- snippet: continues (reason) -->`` the block goes on from the page's previous block of
  the same language (a page that builds a contract once and then uses it): it runs after that
  block's code, in one script, as a reader pasting them one after the other would run it.

Every page with a block that runs says, under its title, the one install line its blocks need
(``Install for this page: `pip install …```). Here the blocks run in the workspace's venv;
the own-project tier (tests/test_own_project.py) runs them again, each page's in a venv that
line alone built from the wheelhouse.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN_LANGUAGES = frozenset({"python", "sh", "bash", "console"})
MARKERS = frozenset({"azure-server", "continues", "not-run", "openai-server", "vertex-server"})
TIMEOUT_S = 300

_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_MARKER = re.compile(r"^<!--\s*snippet:\s*(?P<kind>[\w-]+)\s*(?P<reason>.*?)\s*-->$")
_INSTALL = re.compile(r"^Install for this page: `pip install (?P<line>[^`]+)`")


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int
    language: str
    code: str
    marker: str | None
    reason: str
    install: tuple[str, ...] = ()
    """What the page's install line gives ``pip install`` (shell words), or nothing."""

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)
    return [ROOT / "README.md", *docs]


def extract(path: Path) -> list[Snippet]:
    """The runnable fenced blocks of one Markdown file, with the marker comment before each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    install = install_line(lines)
    snippets: list[Snippet] = []
    index = 0
    while index < len(lines):
        opened = _FENCE.match(lines[index])
        if opened is None:
            index += 1
            continue
        fence, language = opened["fence"], opened["info"].strip().split(" ")[0]
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if language in RUN_LANGUAGES:
            marker, reason = _marker_before(lines, index)
            code = "\n".join(lines[index + 1 : end]) + "\n"
            if marker == "continues":
                previous = [s for s in snippets if s.language == language]
                assert previous, (
                    f"{path}:{index + 1}: 'continues' needs an earlier {language} block"
                )
                code = previous[-1].code + code
            snippets.append(Snippet(path, index + 1, language, code, marker, reason, install))
        index = end + 1
    return snippets


def install_line(lines: list[str]) -> tuple[str, ...]:
    """The words after ``pip install`` in the page's one install line (nothing without one)."""
    found = [match["line"] for line in lines if (match := _INSTALL.match(line))]
    assert len(found) <= 1, f"a page says its install line once, not {len(found)} times"
    return tuple(shlex.split(found[0])) if found else ()


def _marker_before(lines: list[str], fence_index: int) -> tuple[str | None, str]:
    before = fence_index - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    if before < 0:
        return None, ""
    found = _MARKER.match(lines[before].strip())
    if found is None:
        if lines[before].strip().startswith("<!--") and "snippet" in lines[before]:
            return "malformed", lines[before].strip()
        return None, ""
    return found["kind"], found["reason"].strip("() ")


SNIPPETS = [snippet for path in documents() for snippet in extract(path)]


def test_every_page_that_runs_a_block_says_its_install_line_and_the_extras_exist() -> None:
    runport = (ROOT / "packages" / "runport" / "pyproject.toml").read_text(encoding="utf-8")
    extras = set(re.findall(r"^(\w+) = \[", runport.partition("optional-dependencies]")[2], re.M))
    pages = {s.path: s.install for s in SNIPPETS if s.marker != "not-run"}
    missing = sorted(str(path.relative_to(ROOT)) for path, line in pages.items() if not line)
    assert not missing, f"these pages run blocks but say no install line: {missing}"
    for path, line in pages.items():
        assert line[0].partition("[")[0] == "runport", f"{path}: {line}"
        asked = set(line[0].partition("[")[2].rstrip("]").split(",")) - {""}
        assert asked <= extras, f"{path}: no such runport extra {sorted(asked - extras)}"


def test_the_readme_and_every_docs_page_are_scanned() -> None:
    names = {snippet.path.name for snippet in SNIPPETS}
    assert "README.md" in names
    assert len(documents()) > 1, "docs/ has no pages"


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[snippet.name for snippet in SNIPPETS])
def test_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    assert snippet.marker is None or snippet.marker in MARKERS, (
        f"{snippet.name}: unknown snippet marker {snippet.marker!r}; known: {sorted(MARKERS)}"
    )
    if snippet.marker is not None:
        assert snippet.reason, f"{snippet.name}: a snippet marker must state its reason"
    if snippet.marker == "not-run":
        pytest.skip(f"not run here: {snippet.reason}")
    result = run_snippet(snippet, tmp_path, Path(sys.executable))
    assert result.returncode == 0, (
        f"{snippet.name} ({snippet.language}) exited {result.returncode}\n"
        f"--- code\n{snippet.code}--- stdout\n{result.stdout[-4000:]}\n"
        f"--- stderr\n{result.stderr[-4000:]}"
    )


def run_snippet(snippet: Snippet, tmp_path: Path, python: Path) -> subprocess.CompletedProcess[str]:
    """One block, run as a reader would with ``python`` (and its ``bin`` first on PATH)."""
    env = _environment(tmp_path, python)
    server = _vertex_server if snippet.marker == "vertex-server" else _served
    with server(snippet.marker, tmp_path) as server_env:
        env.update(server_env)
        return _run(_command(snippet, tmp_path, python), tmp_path, env)


def run_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """A python block run as ``test_snippet_runs`` runs it: for the docs tests that compare
    what a snippet prints with the block the page shows after it."""
    python = Path(sys.executable)
    return _run(_script(code, tmp_path, python), tmp_path, _environment(tmp_path, python))


def _run(
    command: list[str], tmp_path: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _script(code: str, tmp_path: Path, python: Path) -> list[str]:
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    return [str(python), str(script)]


def _command(snippet: Snippet, tmp_path: Path, python: Path) -> list[str]:
    if snippet.language == "python":
        return _script(snippet.code, tmp_path, python)
    code = snippet.code
    if snippet.language == "console":
        code = "".join(
            line[2:] + "\n" for line in snippet.code.splitlines() if line.startswith("$ ")
        )
        assert code, f"{snippet.name}: a console block needs at least one '$ ' line"
    return ["bash", "-c", "set -euo pipefail\n" + code]


def _environment(tmp_path: Path, python: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("RUNPORT_", "OPENAI_", "AZURE_OPENAI_", "PYTEST_"))
    }
    env["PATH"] = os.pathsep.join([str(python.parent), env.get("PATH", "")])
    env["HOME"] = str(tmp_path)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NO_COLOR"] = "1"
    return env


@contextmanager
def _served(marker: str | None, tmp_path: Path) -> Iterator[dict[str, str]]:
    if marker not in ("openai-server", "azure-server"):
        yield {}
        return
    conformance = pytest.importorskip("runport.conformance")
    plain_text = next(case for case in conformance.CASES if case.name == "plain_text")
    protocol = "azure-openai-chat" if marker == "azure-server" else "openai-chat"
    upstream = conformance.ScriptedUpstream([plain_text] * 8, pacing="off", protocol=protocol)
    try:
        if marker == "azure-server":
            yield {
                "AZURE_OPENAI_ENDPOINT": upstream.base_url,
                "RUNPORT_AZURE_OPENAI_MODEL": "gpt-4o-mini-prod",
                "AZURE_OPENAI_API_KEY": upstream.api_key,
            }
        else:
            yield {"RUNPORT_OPENAI_BASE_URL": upstream.base_url, "RUNPORT_OPENAI_MODEL": "tiny"}
        assert all(request.refusal is None for request in upstream.requests)
    finally:
        upstream.close()


def test_markers_are_read_from_the_comment_right_before_a_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n<!-- snippet: not-run (CI runs it) -->\n\n```sh\ntrue\n```\n\n"
        "```python\nprint(1)\n```\n\n<!-- snippet: sometimes -->\n```console\n$ true\n```\n\n"
        "<!-- snippet -->\n```bash\ntrue\n```\n\n```yaml\na: 1\n```\n",
        encoding="utf-8",
    )
    found = [(s.language, s.marker, s.reason, s.line) for s in extract(page)]
    assert found == [
        ("sh", "not-run", "CI runs it", 5),
        ("python", None, "", 9),
        ("console", "sometimes", "", 14),
        ("bash", "malformed", "<!-- snippet -->", 19),
    ]
    assert "sometimes" not in MARKERS


_GEMINI_SSE = (
    b'data: {"candidates": [{"content": {"parts": [{"text": "Hello, Ada"}], "role": "model"}, '
    b'"finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 4, '
    b'"candidatesTokenCount": 3, "totalTokenCount": 7}}\r\n\r\n'
)


@contextmanager
def _vertex_server(marker: str | None, tmp_path: Path) -> Iterator[dict[str, str]]:
    vertex = pytest.importorskip("runport.conformance.vertex")
    with vertex.VertexEmulation([("text/event-stream", _GEMINI_SSE)]) as emulation:
        adc = tmp_path / "service-account.json"
        adc.write_text(json.dumps(emulation.service_account_info()), encoding="utf-8")
        yield {
            "GOOGLE_APPLICATION_CREDENTIALS": str(adc),
            "RUNPORT_VERTEX_PROJECT": "my-project-1",
            "RUNPORT_VERTEX_GEMINI_BASE_URL": emulation.base_url,
        }
