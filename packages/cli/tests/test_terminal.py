"""What a person sees from ``runport run --stream``: rich on a TTY, plain text when piped.

The pseudo-terminal test needs no clock: a test adapter (registered through a throwaway
``runport.adapters`` entry point) stops after its first fragment until the test writes a
line to its stdin, so "the fragment is on screen while the process is still running" is a
fact, not a race.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runport.application import execute_contract
from runport.cli._output import JsonLines, PlainStream
from runport.cli._sinks import stream_sink
from runport.cli._terminal import WAITING, RichStream, short
from runport.contracts import ExecutionReceipt, OperationEnvelope, StreamEvent
from runport.core import load_contract
from runport.mock import ScriptedRuntime

QUICK = Path(__file__).with_name("data") / "quick"
RUNS = QUICK.parent / "runs"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")
SAFETY_NET_SECONDS = 60
"""Only so a broken build fails instead of hanging; no assertion depends on time."""

GATED_ADAPTER = textwrap.dedent(
    '''
    """A scripted runtime that waits for a line on stdin after its first fragment."""
    import sys

    from runport.contracts import Delta
    from runport.mock import ScriptedRuntime


    class Gated(ScriptedRuntime):
        def execute_streaming(self, request, sink):
            state = {"held": False}

            def hold_after_first_fragment(event):
                sink(event)
                if isinstance(event, Delta) and not state["held"]:
                    state["held"] = True
                    sys.stdin.readline()

            return super().execute_streaming(request, hold_after_first_fragment)


    def create_adapter(*, scenario=None):
        return Gated(ScriptedRuntime.from_scenario(scenario).scenario)
    '''
)


def expected_receipt() -> ExecutionReceipt:
    envelope = execute_contract(
        load_contract(QUICK / "contract.yaml"),
        ScriptedRuntime.from_scenario(QUICK / "scenario.yaml"),
        inputs={"topic": "rivers"},
    )
    assert envelope.result is not None
    return envelope.result


class Screen:
    """The parent side of a pseudo-terminal: everything the child drew, raw and plain."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.raw = ""
        self.closed = False

    @property
    def plain(self) -> str:
        return ANSI.sub("", self.raw)

    def read_until(self, text: str) -> None:
        while text not in self.plain:
            self._read_some()
            assert not self.closed, f"{text!r} never appeared: {self.plain!r}"

    def read_to_end(self) -> None:
        while not self.closed:
            self._read_some()

    def _read_some(self) -> None:
        ready, _, _ = select.select([self.fd], [], [], SAFETY_NET_SECONDS)
        assert ready, f"the child wrote nothing for {SAFETY_NET_SECONDS}s: {self.plain!r}"
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:  # EIO: every copy of the terminal's child side is closed
            chunk = b""
        if not chunk:
            self.closed = True
        self.raw += chunk.decode("utf-8", errors="replace")


class OnATty:
    """``runport`` with stdout on a pseudo-terminal (40×100, colour on), stderr piped."""

    def __init__(self, argv: list[str], env: dict[str, str], *, cwd: Path | None = None) -> None:
        parent, child = pty.openpty()
        fcntl_winsize(child, rows=40, columns=100)
        env = {**env, "TERM": "xterm-256color"}
        env.pop("NO_COLOR", None)
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=child, stderr=subprocess.PIPE, env=env, cwd=cwd
        )
        os.close(child)
        self.screen = Screen(parent)

    def finish(self) -> tuple[int, str]:
        """Read the screen to the end; the exit status and stderr."""
        assert self.process.stdin is not None
        if not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.screen.read_to_end()
        finally:
            os.close(self.screen.fd)
            status = self.process.wait()
        assert self.process.stderr is not None
        with self.process.stderr:
            return status, self.process.stderr.read().decode()


def test_a_tty_sees_the_spinner_then_fragments_while_running_then_the_summary(
    with_plugins: Callable[..., Any],
) -> None:
    runport = with_plugins(GATED_ADAPTER, {"gated": "test_plugins:create_adapter"})
    tty = OnATty(
        runport.argv(
            "run",
            QUICK / "contract.yaml",
            "--input",
            QUICK / "input.json",
            "--adapter",
            "gated",
            "--scenario",
            QUICK / "scenario.yaml",
            "--stream",
        ),
        runport.env(),
    )
    screen = tty.screen
    tty.screen.read_until("Rivers ")
    # The adapter is holding after its first fragment: the process cannot have ended.
    assert tty.process.poll() is None
    held = screen.plain
    assert held.index(WAITING) < held.index("Rivers ")
    assert "downhill." not in held
    assert "receipt" not in held

    assert tty.process.stdin is not None
    tty.process.stdin.write(b"go\n")
    tty.process.stdin.close()
    status, stderr = tty.finish()
    assert status == 0, stderr

    assert "\x1b[" in screen.raw  # rendered by rich, not the plain writer
    final = screen.plain
    receipt = expected_receipt()
    summary = final[final.rindex("receipt") :]
    assert final.rindex("Rivers run downhill.") < final.rindex("receipt")
    for shown in (
        "adapter",
        "runport-mock 0.1.0",
        short(receipt.request_fingerprint),
        short(receipt.output_fingerprint),
        "✓ valid",
        "4 in · 3 out",
        "stop",
    ):
        assert shown in summary, shown
    assert receipt.request_fingerprint not in final  # shortened, not the full 64 hex digits


def fcntl_winsize(fd: int, *, rows: int, columns: int) -> None:
    import fcntl
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


@pytest.mark.parametrize("scenario", ["scenario.yaml", "tools.yaml"])
def test_piped_stream_has_no_control_codes_even_when_colour_is_forced(scenario: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "runport.cli",
            "run",
            str(QUICK / "contract.yaml"),
            "--input",
            str(QUICK / "input.json"),
            "--scenario",
            str(QUICK / scenario),
            "--stream",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "FORCE_COLOR": "1",
            "TERM": "xterm-256color",
            "PYTHONIOENCODING": "utf-8",
        },
        check=False,
    )
    assert "\x1b" not in result.stdout
    assert "\r" not in result.stdout
    assert result.stdout.strip()


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_sink_follows_where_stdout_goes() -> None:
    with stream_sink(json_lines=True, out=FakeTty()) as sink:
        assert isinstance(sink, JsonLines)
    with stream_sink(json_lines=False, out=io.StringIO()) as sink:
        assert isinstance(sink, PlainStream)
    with stream_sink(json_lines=False, out=FakeTty()) as sink:
        assert isinstance(sink, RichStream)


def rendered(scenario: str) -> tuple[str, OperationEnvelope]:
    out = FakeTty()
    events: list[StreamEvent] = []
    with stream_sink(json_lines=False, out=out) as sink:

        def both(event: StreamEvent) -> None:
            events.append(event)
            sink(event)

        envelope = execute_contract(
            load_contract(QUICK / "contract.yaml"),
            ScriptedRuntime.from_scenario(QUICK / scenario),
            inputs={"topic": "rivers"},
            on_event=both,
        )
        sink.finish(envelope)
    return ANSI.sub("", out.getvalue()), envelope


def test_tool_call_fragments_are_shown_under_their_call() -> None:
    text, envelope = rendered("tools.yaml")
    final = text[text.rindex("tool call 0") :]
    lines = [line.rstrip() for line in final.splitlines()]
    assert lines[:4] == [
        "tool call 0: search (c-a)",
        '    {"q": "a"}',
        "tool call 1: lookup (c-b)",
        '    {"q": "b"}',
    ]
    assert "schema   not checked" in final
    assert envelope.ok


def test_a_failure_is_shown_in_place_and_no_summary_follows() -> None:
    text, envelope = rendered("failing.yaml")
    assert "Riv" in text
    assert "✗ failed" in text
    assert "upstream reset" not in text  # the one error line on stderr says it
    assert "receipt" not in text
    assert not envelope.ok


def test_the_live_display_is_stopped_when_the_run_raises() -> None:
    out = FakeTty()

    def interrupted_run() -> None:
        with stream_sink(json_lines=False, out=out) as sink:
            assert isinstance(sink, RichStream)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted_run()
    assert out.getvalue().endswith("\x1b[?25h")  # the cursor is shown again


def test_a_run_with_tools_streamed_to_a_tty_uses_the_rich_view_per_turn(runport: Any) -> None:
    tools = ("--tools", "trip_tools:TOOLS", "--stream")
    inline = ("-i", 'cities=["Delft", "Ede"]', "--scenario", "scenario.yaml")
    tty = OnATty(runport.argv("run", "contract.yaml", *inline, *tools), runport.env(), cwd=RUNS)
    status, stderr = tty.finish()
    assert status == 0, stderr
    screen = tty.screen
    assert "\x1b[" in screen.raw  # rendered by rich, not the plain writer
    final = screen.plain
    calls = final.rindex("tool call 1: get_weather (call_ede)")
    first_receipt = final.index("receipt", calls)
    answer = final.index("warmest of the two", first_receipt)
    second_receipt = final.index("receipt", answer)  # one summary per turn, in order
    assert "tool_calls" in final[first_receipt:answer]
    assert "stop" in final[second_receipt:]
    assert final.index('"turns": 2', second_receipt)  # then the run result


# ---- reasoning (docs/cli.md): its own dimmed region on a TTY, never on a piped stdout ----------

THINKING = ("Hmm, rivers. ", "They flow downhill.\n")
ANSWER = ("Rivers ", "run downhill.")

THINKING_ADAPTER = textwrap.dedent(
    f'''
    """A runtime that thinks (two ReasoningDelta), then answers (two Delta)."""
    from runport.contracts import (
        AdapterDescriptor, Complete, Delta, ReasoningDelta, ReasoningPart, Usage,
    )
    from runport.core import build_receipt
    from runport.ports import RuntimeAdapter

    THINKING = {THINKING!r}
    ANSWER = {ANSWER!r}


    class Thinking(RuntimeAdapter):
        def descriptor(self):
            return AdapterDescriptor(
                id="thinking", version="0.1.0", capabilities=["streaming", "text"]
            )

        def execute(self, request):
            return build_receipt(
                request,
                adapter=self.descriptor(),
                text="".join(ANSWER),
                finish_reason="stop",
                usage=Usage(input_tokens=4, output_tokens=9, reasoning_tokens=5),
                reasoning=[ReasoningPart(
                    text="".join(THINKING), provider_metadata={{"mock": {{"signature": "s1"}}}}
                )],
            )

        def execute_streaming(self, request, sink):
            for piece in THINKING:
                sink(ReasoningDelta(text=piece))
            for piece in ANSWER:
                sink(Delta(text=piece))
            receipt = self.execute(request)
            sink(Complete(receipt=receipt))
            return receipt


    def create_adapter():
        return Thinking()
    '''
)


def thinking_run(with_plugins: Callable[..., Any], *options: str) -> Any:
    runport = with_plugins(THINKING_ADAPTER, {"thinking": "test_plugins:create_adapter"})
    argv = ("run", QUICK / "contract.yaml", "-i", "topic=rivers", "--adapter", "thinking")
    return runport, (*argv, *options)


def test_a_tty_shows_reasoning_dimmed_in_its_own_region_above_the_answer(
    with_plugins: Callable[..., Any],
) -> None:
    runport, argv = thinking_run(with_plugins, "--stream")
    tty = OnATty(runport.argv(*argv), runport.env())
    status, stderr = tty.finish()
    assert status == 0, stderr
    final = tty.screen.plain
    thought = final.rindex("Hmm, rivers. They flow downhill.")
    answer = final.rindex("Rivers run downhill.")
    assert thought < answer < final.rindex("receipt")
    # Reasoning is not on the answer's line: a region of its own.
    assert "downhill.Rivers" not in final
    # Drawn dimmed (SGR 2) wherever it is drawn; the answer is not.
    styled = re.findall(r"\x1b\[([0-9;]*)m([^\x1b]*)", tty.screen.raw)
    thinking = [codes for codes, text in styled if "Hmm, rivers." in text]
    assert thinking
    assert all("2" in codes.split(";") for codes in thinking)
    answering = [codes for codes, text in styled if "Rivers run downhill." in text]
    assert all("2" not in codes.split(";") for codes in answering)
    assert "Hmm" not in stderr  # only --reasoning writes it there


def test_piped_stream_writes_only_the_answer_and_the_receipt_never_the_reasoning(
    with_plugins: Callable[..., Any],
) -> None:
    runport, argv = thinking_run(with_plugins, "--stream")
    result = runport(*argv)
    assert result.returncode == 0, result.stderr
    answer, _, receipt_json = result.stdout.partition("\n")
    assert answer == "Rivers run downhill."
    receipt = json.loads(receipt_json)
    assert receipt["text"] == "Rivers run downhill."
    assert "reasoning" not in receipt
    for thought in ("Hmm", "flow downhill", "s1"):
        assert thought not in result.stdout
        assert thought not in result.stderr


def test_reasoning_option_writes_reasoning_to_stderr_and_stdout_keeps_the_answer(
    with_plugins: Callable[..., Any],
) -> None:
    runport, argv = thinking_run(with_plugins, "--stream", "--reasoning")
    result = runport(*argv)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "".join(THINKING)
    assert result.stdout.startswith("Rivers run downhill.\n")
    assert "Hmm" not in result.stdout


def test_reasoning_option_without_stream_writes_the_receipts_reasoning_to_stderr(
    with_plugins: Callable[..., Any],
) -> None:
    runport, argv = thinking_run(with_plugins, "--reasoning")
    result = runport(*argv)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "".join(THINKING)
    envelope = json.loads(result.stdout)  # the whole envelope, as without --reasoning
    assert envelope["result"]["reasoning"][0]["text"] == "".join(THINKING)


def test_json_lines_carry_reasoning_deltas_like_every_other_event(
    with_plugins: Callable[..., Any],
) -> None:
    runport, argv = thinking_run(with_plugins, "--json")
    result = runport(*argv)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [event["kind"] for event in events] == [
        "ReasoningDelta",
        "ReasoningDelta",
        "Delta",
        "Delta",
        "Complete",
    ]
    assert [event["text"] for event in events[:2]] == list(THINKING)
    assert events[-1]["receipt"]["reasoning"][0]["text"] == "".join(THINKING)
    assert events[-1]["receipt"]["usage"]["reasoning_tokens"] == 5


STRUCTURED = {
    "api_version": "runport/v1alpha1",
    "id": "structured",
    "version": "1.0.0",
    "messages": [{"role": "user", "content": [{"kind": "text", "value": "Plan."}]}],
    "output_schema": {
        "type": "object",
        "properties": {"title": {"type": "string"}, "steps": {"type": "array"}},
    },
}
ANSWER = ['{"title": "Tr', 'ip", "steps": ["pack', '", "go"]', ', "note": "\\u001b[31m"}']


def test_a_structured_answer_fills_in_as_a_tree_not_as_its_json() -> None:
    from runport.core import parse_contract, parse_scenario

    scenario = parse_scenario(
        {
            "api_version": "runport.mock/v1",
            "id": "s",
            "turns": [
                {
                    "events": [{"kind": "delta", "text": piece} for piece in ANSWER]
                    + [{"kind": "finish", "finish_reason": "stop"}]
                }
            ],
        }
    )
    out = FakeTty()
    with stream_sink(json_lines=False, out=out) as sink:
        assert isinstance(sink, RichStream)
        sink.structured = True
        envelope = execute_contract(
            parse_contract(STRUCTURED),
            ScriptedRuntime(scenario),
            on_event=sink,
            partial_output=sink.partial_output,
        )
        sink.finish(envelope)
    assert envelope.ok
    text = ANSI.sub("", out.getvalue())
    final = text[text.rindex("answer") :]
    assert 'title: "Trip"' in final
    assert "steps" in final
    assert '0: "pack"' in final
    assert '1: "go"' in final
    assert '"title"' not in text  # the JSON text is never drawn: the tree replaces it
    assert "\x1b[31m" not in out.getvalue()  # an escape in the answer is not obeyed
    assert "receipt" in final


def test_a_partial_tree_is_drawn_from_hand_made_snapshots_and_results_under_their_call() -> None:
    from rich.console import Console

    from runport.cli._terminal import answer_tree, result_line
    from runport.contracts import OutputSnapshot, ToolCallDelta, ToolResult

    console = Console(file=io.StringIO(), width=80, force_terminal=False)
    view = RichStream(console)
    view(
        ToolCallDelta(index=0, call_id="c-1", name="weather", arguments_fragment='{"city": "Oslo"}')
    )
    view(ToolResult(call_id="c-1", name="weather", output={"temp": 3}))
    view(OutputSnapshot(value={"a": {"b": [1, "x"]}}, completed=["/a/b/0"]))
    console.print(view._render())
    drawn = console.file.getvalue()  # type: ignore[attr-defined]
    lines = [line.rstrip() for line in drawn.splitlines()]
    assert "tool call 0: weather (c-1)" in lines
    assert lines[lines.index("tool call 0: weather (c-1)") + 2] == '    → {"temp": 3}'
    assert "0: 1" in drawn
    assert '1: "x"' in drawn
    many = Console(file=io.StringIO(), width=80)
    many.print(answer_tree(list(range(500))))
    assert many.file.getvalue().count("\n") < 250  # type: ignore[attr-defined]
    failed = Console(file=io.StringIO(), width=80)
    failed.print(result_line(ToolResult(call_id="c", name="n", error="refused")))
    assert "✗ refused" in failed.file.getvalue()  # type: ignore[attr-defined]
