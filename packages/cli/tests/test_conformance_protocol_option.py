"""``runport conformance --protocol MODULE:ATTR`` takes an author's ``WireProtocol`` (an
instance, or a class made with no arguments) and says plainly what is not one (ADR 0052)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

NOT_A_PROTOCOL = """
from runport.conformance import WireProtocol

not_one = "openai-chat"


class Mine(WireProtocol):
    name = "mine"

    def recognise(self, request):
        return True

    def stream(self, case, context):
        raise NotImplementedError

    def body(self, case, context):
        raise NotImplementedError

    def error_frame(self, case, context):
        raise NotImplementedError
"""


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "my_protocols.py").write_text(NOT_A_PROTOCOL, encoding="utf-8")
    (tmp_path / "my_factories.py").write_text("def good(upstream):\n    return None\n")
    code = "import sys; from runport.cli._main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, "conformance", "my_factories:good", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_cli_takes_a_wire_protocol_as_module_attr_and_says_what_is_not_one(
    tmp_path: Path,
) -> None:
    refused = _cli(tmp_path, "--protocol", "my_protocols:not_one")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "is a str, not a WireProtocol" in refused.stderr
    missing = _cli(tmp_path, "--protocol", "my_protocols:nothing_here")
    assert missing.returncode == 1
    assert "cannot load it" in missing.stderr


def test_the_command_names_every_protocol_the_suite_has_and_none_more() -> None:
    """The command keeps its own list (it imports the suite only when it runs): that list
    is the suite's built-in protocols, in order, and ``none``."""
    from runport.cli._cmd_conformance import PROTOCOLS as NAMED
    from runport.conformance import PROTOCOLS

    assert (*PROTOCOLS, "none") == NAMED
