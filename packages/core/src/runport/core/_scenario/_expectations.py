"""What a scenario states its outcome will be, and the comparison with what happened.

``runport scenarios check`` and any other surface that plays scenarios (the MCP catalog, a
host's own test runner) compare an outcome the same way by calling
:meth:`ScenarioExpectations.problems`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from runport.contracts import ExecutionReceipt, FilePart, ImagePart, Message, OperationEnvelope
from runport.core._document import json_value_problem

FINGERPRINT_PATTERN = r"^[0-9a-f]{64}$"

ReceiptPayloadPolicy = Literal["fingerprints_only", "no_successful_receipt"]


def require_json(value: JsonValue) -> JsonValue:
    """Refuse what YAML can spell but JSON cannot carry (NaN, lone surrogates, runaway depth)."""
    problem = json_value_problem(value, document=False)
    if problem is not None:
        pointer, message = problem
        raise ValueError(f"{message} (at {pointer or '/'})")
    return value


class _Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EvidenceExpectation(_Expectation):
    """A templiqx payload-free evidence expectation, kept as-is."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    document_id: str
    fragment_id: str
    quote_sha256: str


class DocumentExpectation(_Expectation):
    """A templiqx document expectation, kept as-is."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    status: str = ""
    unresolved_references: Annotated[int, Field(ge=0)] = 0


PartDigest = tuple[str, str, str]
"""An image or file part of a request as a scenario states it: ``(kind, media_type, the SHA-256
of its bytes or its URL)``."""


def part_digests(messages: Iterable[Message]) -> tuple[PartDigest, ...]:
    """The image and file parts of ``messages``, in order, as a scenario states them."""
    return tuple(
        (part.kind, part.media_type, part.sha256 or part.url or "")
        for message in messages
        if not isinstance(message.content, str)
        for part in message.content
        if isinstance(part, ImagePart | FilePart)
    )


class ScenarioExpectations(_Expectation):
    """The outcome a scenario file states, gathered from either format's fields.

    Each is ``None`` when the file does not state it (nothing to check). ``status``,
    ``failure``, ``diagnostics``, ``output_fingerprint``, ``output_schema_valid`` and
    ``reasoning`` (the text of each reasoning block of the last receipt, in order; ``()`` for
    none) are compared by :meth:`problems`; the templiqx-only ones (``receipt_payload_policy``,
    ``evidence``, ``document``, ``golden_receipt_fingerprint``) are kept for hosts that
    produce such evidence, which runport's own runs do not.
    """

    status: Literal["success", "failure"] | None = None
    failure: str | None = None
    diagnostics: tuple[str, ...] | None = None
    output_fingerprint: Annotated[str, Field(pattern=FINGERPRINT_PATTERN)] | None = None
    output_schema_valid: bool | None = None
    reasoning: tuple[str, ...] | None = None
    parts: tuple[PartDigest, ...] | None = None
    """The request's image and file parts (``()``: none), compared when the caller says what
    the request held."""
    receipt_payload_policy: ReceiptPayloadPolicy | None = None
    evidence: tuple[EvidenceExpectation, ...] | None = None
    document: DocumentExpectation | None = None
    golden_receipt_fingerprint: str | None = None

    def problems(self, envelope: OperationEnvelope) -> list[str]:
        """Every stated expectation the envelope does not meet (empty when all are met)."""
        return self.compare(
            ok=envelope.ok,
            codes={d.code for d in envelope.diagnostics},
            errors={d.code for d in envelope.diagnostics if d.severity == "error"},
            receipt=envelope.result,
        )

    def compare(
        self,
        *,
        ok: bool,
        codes: Iterable[str],
        errors: Iterable[str],
        receipt: ExecutionReceipt | None,
        parts: tuple[PartDigest, ...] | None = None,
    ) -> list[str]:
        """Every stated expectation an outcome does not meet, from the facts any outcome has:
        whether it was ok, its codes (errors among them) and its last receipt — so a run's
        outcome is compared as an envelope's is — and, when given, the request's ``parts``."""
        problems: list[str] = []
        status = "success" if ok else "failure"
        codes = sorted(set(codes))
        errors = sorted(set(errors))
        if self.status is not None and self.status != status:
            problems.append(f"status: expected {self.status}, got {status} {codes}")
        if self.failure is not None and self.failure not in errors:
            problems.append(f"failure: expected {self.failure}, got {errors}")
        if self.diagnostics is not None and sorted(set(self.diagnostics)) != codes:
            problems.append(f"diagnostics: expected {sorted(set(self.diagnostics))}, got {codes}")
        actual_fp = receipt.output_fingerprint if receipt is not None else None
        if self.output_fingerprint is not None and self.output_fingerprint != actual_fp:
            problems.append(
                f"output fingerprint: expected {self.output_fingerprint}, got {actual_fp}"
            )
        actual_valid = receipt.output_schema_valid if receipt is not None else None
        if self.output_schema_valid is not None and self.output_schema_valid != actual_valid:
            problems.append(
                f"output_schema_valid: expected {self.output_schema_valid}, got {actual_valid}"
            )
        if self.reasoning is not None:
            actual = tuple(part.text for part in (receipt.reasoning or [])) if receipt else ()
            if actual != self.reasoning:
                problems.append(
                    f"reasoning: expected {_blocks(self.reasoning)}, got {_blocks(actual)}"
                )
        if self.parts is not None and parts is not None:
            problems.extend(_part_problems(self.parts, parts))
        return problems


def _part_problems(
    expected: tuple[PartDigest, ...], actual: tuple[PartDigest, ...]
) -> Iterable[str]:
    if len(expected) != len(actual):
        yield f"parts: expected {len(expected)} image or file part(s), got {len(actual)}"
        return
    for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
        if want != got:
            yield f"part {index}: expected {want[0]} {want[1]} {want[2]}, got {' '.join(got)}"


def _blocks(texts: tuple[str, ...]) -> str:
    """Reasoning blocks as a problem names them: each text, cut short when long."""
    if not texts:
        return "no reasoning"
    shown = [text if len(text) <= 60 else text[:57] + "..." for text in texts]
    return f"{len(texts)} block(s) {shown!r}"
