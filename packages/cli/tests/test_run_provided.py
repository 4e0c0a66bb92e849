"""``runport run`` shows what the provider did itself: the sources an answer cites, listed
under it as text, and ``--save-files DIR`` writing the files the model generated under names
runport chose, never outside ``DIR`` (adr/0055-what-the-provider-did-itself.md)."""

from __future__ import annotations

import base64
import hashlib
import io
import subprocess
from collections.abc import Callable
from pathlib import Path

from runport.contracts import (
    Citation,
    CitationSource,
    CompiledInteraction,
    ExecutionRequest,
    Message,
)

Cli = Callable[..., subprocess.CompletedProcess[str]]
DATA = Path(__file__).with_name("data")
QUICK = DATA / "quick"
PROVIDED = DATA / "provided" / "scenario.yaml"
PNG = base64.b64decode("iVBORw0KGgoAAAAAAAAAAA==")
SAVED_AS = f"1-1-{hashlib.sha256(PNG).hexdigest()[:12]}.png"


def make_request() -> ExecutionRequest:
    interaction = CompiledInteraction(
        compiler="tests/0",
        contract_id="tests.sources",
        contract_version="1.0.0",
        messages=[Message(role="user", content="Rivers?")],
        output_schema={"type": "string"},
    )
    return ExecutionRequest(interaction=interaction)


def run(runport: Cli, *extra: str | Path) -> subprocess.CompletedProcess[str]:
    return runport(
        "run", QUICK / "contract.yaml", "--input", QUICK / "input.json",
        "--scenario", PROVIDED, *extra,
    )  # fmt: skip


def test_sources_are_listed_under_the_answer_and_files_saved(runport: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "made" / "here"
    done = run(runport, "--stream", "--save-files", folder)
    assert done.returncode == 0, done.stderr
    answer, _, rest = done.stdout.partition("\n")
    assert answer == "Rivers run downhill."
    assert rest.startswith(
        "sources:\n"
        "  [1] Rivers <script>alert(1)</script> — https://example.org/rivers\n"
        '  [2] document 0 (notes.pdf): "water flows down"\n'
    )  # the title as the model wrote it, as text; the URL a link to follow, never fetched
    assert [path.name for path in folder.iterdir()] == [SAVED_AS]  # the preview is not kept
    assert (folder / SAVED_AS).read_bytes() == PNG
    assert f"runport: saved {folder / SAVED_AS}" in done.stderr


def test_a_folder_that_is_a_file_is_refused_before_the_run(runport: Cli, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("mine", encoding="utf-8")
    done = run(runport, "--save-files", taken)
    assert done.returncode == 1
    assert "TQX_DATA_INVALID" in done.stderr
    assert "not a folder" in done.stderr
    assert done.stdout == ""  # nothing ran
    assert taken.read_text(encoding="utf-8") == "mine"


def test_a_link_standing_at_a_files_name_is_not_followed(runport: Cli, tmp_path: Path) -> None:
    folder, outside = tmp_path / "files", tmp_path / "outside.txt"
    folder.mkdir()
    outside.write_text("untouched", encoding="utf-8")
    (folder / SAVED_AS).symlink_to(outside)
    done = run(runport, "--save-files", folder)
    assert done.returncode == 1
    assert "TQX_DATA_INVALID" in done.stderr
    assert outside.read_text(encoding="utf-8") == "untouched"


def test_the_terminal_view_prints_sources_as_text_not_markup() -> None:
    from rich.console import Console

    from runport.cli._terminal import print_sources
    from runport.core import load_scenario
    from runport.mock import ScriptedRuntime

    scenario = load_scenario(PROVIDED)
    receipt = ScriptedRuntime(scenario).execute(make_request())
    loud = CitationSource(type="url", url="https://example.org/rivers",
                          title="[bold red]loud[/bold red] \x1b[2J")  # fmt: skip
    receipt = receipt.model_copy(update={"citations": [Citation(source=loud)]})
    console = Console(file=io.StringIO(), width=200, force_terminal=True)
    print_sources(console, receipt)
    drawn = console.file.getvalue()  # type: ignore[attr-defined]
    assert "[bold red]loud[/bold red]" in drawn  # rich markup in a title is shown, not applied
    assert "\x1b[2J" not in drawn  # a control sequence is escaped, not sent to the terminal
    assert "https://example.org/rivers" in drawn


TOOL_RUN = """\
api_version: runport.mock/v1
id: trip-weather-searched
turns:
  - events:
      - {kind: file_delta, media_type: image/png, data: iVBORw0KGgoAAAAAAAAAAA==}
      - kind: tool_call_delta
        index: 0
        call_id: c1
        name: get_weather
        arguments_fragment: '{"city": "Ede"}'
      - {kind: finish, finish_reason: tool_calls}
  - events:
      - {kind: delta, text: '{"go_to": "Ede", "celsius": 14, "why": "warm"}'}
      - {kind: citation, source: {type: url, url: "https://example.org/ede", title: Ede}}
      - {kind: file_delta, media_type: image/jpeg, data: /9j/4AAAAAAAAAAA}
      - {kind: finish, finish_reason: stop}
"""


def test_a_run_with_tools_saves_every_turns_files_and_lists_sources(
    runport: Cli, tmp_path: Path
) -> None:
    runs = DATA / "runs"
    for name in ("contract.yaml", "input.json", "trip_tools.py"):
        (tmp_path / name).write_bytes((runs / name).read_bytes())
    (tmp_path / "scenario.yaml").write_text(TOOL_RUN, encoding="utf-8")
    done = runport(
        "run", "contract.yaml", "--input", "input.json", "--scenario", "scenario.yaml",
        "--tools", "trip_tools:TOOLS", "--stream", "--save-files", "out", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "sources:\n  [1] Ede — https://example.org/ede\n" in done.stdout
    saved = sorted(path.name for path in (tmp_path / "out").iterdir())
    assert [name.split("-")[:2] for name in saved] == [["1", "1"], ["2", "1"]]
    assert [Path(name).suffix for name in saved] == [".png", ".jpg"]
