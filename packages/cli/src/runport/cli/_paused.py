"""A run that paused for a person, from the shell: ``runport run … --tools`` prints what waits
(stderr) and the paused run result with its continuation (stdout), and exits ``PAUSED``; a
later ``runport run … --continuation FILE --approve ID --deny ID[:REASON] --tool-result
ID=VALUE --tool-error ID=MESSAGE`` resumes it, in any process holding the key
``RUNPORT_CONTINUATION_KEY`` names."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, TextIO

from runport.application import ClientToolError, ContinuationSeal, RunResult
from runport.cli._errors import CliError
from runport.contracts import ClientToolCall, ToolApprovalRequest

PAUSED = 3
KEY_VARIABLE = "RUNPORT_CONTINUATION_KEY"
KEY_HINT = (
    f"set {KEY_VARIABLE} to a secret of at least 32 bytes (for example the output of "
    "`python -c 'import secrets; print(secrets.token_hex(32))'`) in the runs that pause and "
    "resume"
)


def add_resume_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--continuation",
        type=Path,
        metavar="FILE",
        help="resume the paused run FILE holds (what a paused run printed, or its bare "
        f"continuation); needs --tools or --mcp again, and ${KEY_VARIABLE}",
    )
    parser.add_argument(
        "--approve",
        action="append",
        default=[],
        metavar="CALL_ID",
        help="with --continuation: run this pending call (repeatable)",
    )
    parser.add_argument(
        "--deny",
        action="append",
        default=[],
        metavar="CALL_ID[:REASON]",
        help="with --continuation: do not run this pending call; the model reads the reason "
        "(repeatable)",
    )
    parser.add_argument(
        "--tool-result",
        action="append",
        default=[],
        metavar="CALL_ID=VALUE",
        help="with --continuation: a client tool call's result (VALUE parsed as JSON when it "
        "parses, else a string; repeatable)",
    )
    parser.add_argument(
        "--tool-error",
        action="append",
        default=[],
        metavar="CALL_ID=MESSAGE",
        help="with --continuation: a client tool call that failed; the model reads MESSAGE "
        "(repeatable)",
    )


class FileLedger:
    """A ``ContinuationLedger`` in a folder, one file per resumed continuation (made with
    ``O_EXCL``, so of two processes resuming one continuation only the first goes on); files
    past their expiry are removed as new ones are spent."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def spend(self, continuation_id: str, expires: float) -> bool:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._prune()
            name = hashlib.sha256(continuation_id.encode()).hexdigest()
            handle = os.open(self.folder / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return False
        except OSError as error:
            raise CliError(
                "usage", f"cannot record the resumed continuation in {self.folder}: {error}"
            ) from None
        with os.fdopen(handle, "w", encoding="ascii") as record:
            record.write(repr(expires))
        return True

    def _prune(self) -> None:
        now = time.time()
        for record in self.folder.iterdir():
            try:
                if float(record.read_text(encoding="ascii")) <= now:
                    record.unlink()
            except (OSError, ValueError):
                continue  # being written by another process, or not ours: left alone


def ledger_folder() -> Path:
    """``$XDG_STATE_HOME/runport/resumed-continuations`` (``~/.local/state`` by default)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "runport" / "resumed-continuations"


def seal() -> ContinuationSeal | None:
    """The seal ``RUNPORT_CONTINUATION_KEY`` makes, remembering resumed continuations on disk
    so that no two runs of this machine resume one; ``None`` when no key is set."""
    value = os.environ.get(KEY_VARIABLE)
    if not value:
        return None
    try:
        return ContinuationSeal(value.encode(), ledger=FileLedger(ledger_folder()))
    except ValueError as error:
        raise CliError("usage", f"${KEY_VARIABLE}: {error}") from None


class Resume:
    """What ``--continuation``, ``--approve``, ``--deny``, ``--tool-result`` and
    ``--tool-error`` ask for."""

    def __init__(self, args: argparse.Namespace) -> None:
        answers = [*args.approve, *args.deny, *args.tool_result, *args.tool_error]
        self.continuation: str | None = None
        self.approvals: dict[str, bool | str] = {}
        self.tool_results: dict[str, Any] = {}
        if args.continuation is None:
            if answers:
                raise CliError(
                    "usage",
                    "--approve, --deny, --tool-result and --tool-error answer a paused run: "
                    "give its "
                    "--continuation FILE too",
                )
            return
        self.continuation = _read_continuation(args.continuation)
        for call_id in args.approve:
            self._decide(call_id, True)
        for denial in args.deny:
            call_id, _, reason = denial.partition(":")
            self._decide(call_id, reason or False)
        for given in args.tool_result:
            call_id, text = self._client_answer("--tool-result", "CALL_ID=VALUE", given)
            try:
                self.tool_results[call_id] = json.loads(text)
            except ValueError:
                self.tool_results[call_id] = text
        for given in args.tool_error:
            call_id, text = self._client_answer("--tool-error", "CALL_ID=MESSAGE", given)
            self.tool_results[call_id] = ClientToolError(text)

    def _client_answer(self, flag: str, shape: str, given: str) -> tuple[str, str]:
        call_id, equals, text = given.partition("=")
        if not equals or not call_id:
            raise CliError("usage", f"{flag} takes {shape}, not {given!r}")
        if call_id in self.tool_results or call_id in self.approvals:
            raise CliError("usage", f"call {call_id!r} is answered twice")
        return call_id, text

    def _decide(self, call_id: str, decision: bool | str) -> None:
        if not call_id:
            raise CliError("usage", "--approve and --deny take a CALL_ID")
        if call_id in self.approvals:
            raise CliError("usage", f"call {call_id!r} is answered twice")
        self.approvals[call_id] = decision

    def keywords(self, sealing: ContinuationSeal | None) -> dict[str, Any]:
        """The run's keywords: the seal always when there is a key, the resume when asked."""
        if self.continuation is not None and sealing is None:
            raise CliError("usage", f"--continuation needs the key the run paused with: {KEY_HINT}")
        found: dict[str, Any] = {} if sealing is None else {"continuation_seal": sealing}
        if self.continuation is not None:
            found["continuation"] = self.continuation
            if self.approvals:
                found["approvals"] = self.approvals
            if self.tool_results:
                found["tool_results"] = self.tool_results
        return found


def _read_continuation(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise CliError("usage", f"cannot read --continuation {path}: {error}") from None
    if text.startswith("{"):
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        found = document.get("continuation") if isinstance(document, dict) else None
        if not isinstance(found, str):
            raise CliError(
                "usage", f"--continuation {path}: a JSON file here is a paused run's result"
            )
        return found
    return text


def paused_json(result: RunResult) -> dict[str, Any]:
    return {
        "status": result.status,
        "pending": [call.model_dump(mode="json") for call in result.pending],
        "continuation": result.continuation,
    }


def write_pending(err: TextIO, result: RunResult, *, keyed: bool) -> None:
    """One line per waiting call, and how to answer it."""
    for call in result.pending:
        assert isinstance(call, ToolApprovalRequest | ClientToolCall)
        waits = "needs approval" if isinstance(call, ToolApprovalRequest) else "client tool"
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        err.write(f"runport: paused: {call.call_id}: {call.name} {arguments} ({waits})\n")
    err.write(
        "runport: paused: save stdout to a file and resume with --continuation FILE and "
        "--approve CALL_ID, --deny CALL_ID[:REASON], --tool-result CALL_ID=VALUE or "
        "--tool-error CALL_ID=MESSAGE\n"
    )
    if not keyed:
        err.write(f"runport: warning: no key: this continuation cannot be resumed; {KEY_HINT}\n")
    err.flush()


__all__ = ["PAUSED", "Resume", "add_resume_options", "paused_json", "seal", "write_pending"]
