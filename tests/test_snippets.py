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
- ``<!-- snippet: azure-server (reason) -->`` the same with the suite's emulation of an Azure
  OpenAI resource (``azure-openai-chat``: a deployment's path, an ``api-version``, an
  ``api-key`` or a bearer token required), and ``AZURE_OPENAI_ENDPOINT``,
  ``RUNPORT_AZURE_OPENAI_MODEL`` and ``AZURE_OPENAI_API_KEY`` set;
- ``<!-- snippet: continues (reason) -->`` the block goes on from the page's previous block of
  the same language (a page that builds a contract once and then uses it): it runs after that
  block's code, in one script, as a reader pasting them one after the other would run it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN_LANGUAGES = frozenset({"python", "sh", "bash", "console"})
MARKERS = frozenset({"azure-server", "continues", "not-run", "openai-server"})
TIMEOUT_S = 300

_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_MARKER = re.compile(r"^<!--\s*snippet:\s*(?P<kind>[\w-]+)\s*(?P<reason>.*?)\s*-->$")


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int
    language: str
    code: str
    marker: str | None
    reason: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)
    return [ROOT / "README.md", *docs]


def extract(path: Path) -> list[Snippet]:
    """The runnable fenced blocks of one Markdown file, with the marker comment before each."""
    lines = path.read_text(encoding="utf-8").splitlines()
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
            snippets.append(Snippet(path, index + 1, language, code, marker, reason))
        index = end + 1
    return snippets


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
    env = _environment(tmp_path)
    with _server(snippet.marker) as server_env:
        env.update(server_env)
        result = _run(_command(snippet, tmp_path), tmp_path, env)
    assert result.returncode == 0, (
        f"{snippet.name} ({snippet.language}) exited {result.returncode}\n"
        f"--- code\n{snippet.code}--- stdout\n{result.stdout[-4000:]}\n"
        f"--- stderr\n{result.stderr[-4000:]}"
    )


def run_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """A python block run as ``test_snippet_runs`` runs it: for the docs tests that compare
    what a snippet prints with the block the page shows after it."""
    return _run(_script(code, tmp_path), tmp_path, _environment(tmp_path))


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


def _script(code: str, tmp_path: Path) -> list[str]:
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    return [sys.executable, str(script)]


def _command(snippet: Snippet, tmp_path: Path) -> list[str]:
    if snippet.language == "python":
        return _script(snippet.code, tmp_path)
    code = snippet.code
    if snippet.language == "console":
        code = "".join(
            line[2:] + "\n" for line in snippet.code.splitlines() if line.startswith("$ ")
        )
        assert code, f"{snippet.name}: a console block needs at least one '$ ' line"
    return ["bash", "-c", "set -euo pipefail\n" + code]


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("RUNPORT_", "OPENAI_", "AZURE_OPENAI_", "PYTEST_"))
    }
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["HOME"] = str(tmp_path)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NO_COLOR"] = "1"
    return env


@contextmanager
def _server(marker: str | None) -> Iterator[dict[str, str]]:
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
