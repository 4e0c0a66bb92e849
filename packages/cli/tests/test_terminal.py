"""What a person sees from ``runport run --stream``: rich on a TTY, plain text when piped.

The pseudo-terminal test needs no clock: a test adapter (registered through a throwaway
``runport.adapters`` entry point) stops after its first fragment until the test writes a
line to its stdin, so "the fragment is on screen while the process is still running" is a
fact, not a race.
"""

from __future__ import annotations

import io
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
