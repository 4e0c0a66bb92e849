"""What a batch came to: ok / failed by code, output validity, latency, tokens (docs/batch.md)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from runport.contracts import OperationEnvelope


@dataclass(frozen=True)
class BatchSummary:
    """The whole output file's account after a batch (resumed rows included).

    ``failed_by_code`` counts failed rows by their first error's code; ``output_valid`` /
    ``output_invalid`` count rows whose receipt's output met / missed the output schema;
    latencies are of the rows run this time (ms, wall clock per row); ``skipped`` rows were
    already in the output; ``interrupted`` when the batch was stopped before its end.
    """

    rows: int = 0
    ok: int = 0
    failed: int = 0
    failed_by_code: dict[str, int] = field(default_factory=dict)
    output_valid: int = 0
    output_invalid: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    ran: int = 0
    skipped: int = 0
    torn_lines_discarded: int = 0
    interrupted: bool = False

    @property
    def all_ok(self) -> bool:
        return self.failed == 0 and not self.interrupted

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the summary to ``path`` by replacing it, never through it: the JSON goes to a
        new file beside it, renamed over ``path`` — a symlink there is replaced, not followed
        (``OUT.summary.json`` is a name the user never typed), and a reader sees the old
        summary or the new one, never half of one."""
        target = Path(path)
        text = json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n"
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        handle = os.open(temporary, flags, 0o666)  # the umask applies, as to any new file
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as written:
                written.write(text)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    @staticmethod
    def path_for(out: str | os.PathLike[str]) -> Path:
        """Where the summary of a batch into ``out`` is written: ``OUT.summary.json``."""
        path = Path(out)
        return path.with_name(f"{path.stem}.summary.json")

    def lines(self) -> list[str]:
        """The summary as a few lines for a terminal."""
        said = [f"{self.rows} row(s): {self.ok} ok, {self.failed} failed"]
        if self.skipped:
            said[0] += f" ({self.skipped} already in the output)"
        for code, count in sorted(self.failed_by_code.items()):
            said.append(f"  {code}: {count}")
        said.append(f"output schema: {self.output_valid} valid, {self.output_invalid} invalid")
        if self.latency_p50_ms is not None:
            said.append(
                f"latency: p50 {self.latency_p50_ms:.1f} ms, p95 {self.latency_p95_ms:.1f} ms"
            )
        said.append(f"tokens: {self.input_tokens} in, {self.output_tokens} out")
        if self.interrupted:
            said.append("interrupted: rerun the same command to finish")
        return said


def percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile: a latency some row really had."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


class Tally:
    """Counts envelopes (as JSON) into a ``BatchSummary``."""

    def __init__(self) -> None:
        self.rows = 0
        self.ok = 0
        self.codes: Counter[str] = Counter()
        self.valid = 0
        self.invalid = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.latencies: list[float] = []

    def add(self, envelope: OperationEnvelope, latency: float | None) -> None:
        """Count a row's envelope; ``latency`` (s) when the row was run this time."""
        self.rows += 1
        if latency is not None:
            self.latencies.append(latency * 1000)
        if envelope.ok:
            self.ok += 1
        else:
            errors = [d.code for d in envelope.diagnostics if d.severity == "error"]
            self.codes[errors[0] if errors else "unknown"] += 1
        result = envelope.result
        if result is None:
            return
        self.valid += result.output_schema_valid is True
        self.invalid += result.output_schema_valid is False
        if result.usage is not None:
            self.input_tokens += result.usage.input_tokens
            self.output_tokens += result.usage.output_tokens

    def summary(self, *, skipped: int, torn: int, interrupted: bool) -> BatchSummary:
        return BatchSummary(
            rows=self.rows,
            ok=self.ok,
            failed=self.rows - self.ok,
            failed_by_code=dict(sorted(self.codes.items())),
            output_valid=self.valid,
            output_invalid=self.invalid,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            latency_p50_ms=percentile(self.latencies, 0.50),
            latency_p95_ms=percentile(self.latencies, 0.95),
            ran=len(self.latencies),
            skipped=skipped,
            torn_lines_discarded=torn,
            interrupted=interrupted,
        )
