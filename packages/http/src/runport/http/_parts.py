"""Which message parts a provider takes, checked before any request is sent
(adr/0039-images-and-files-in-messages.md).

Each codec maps parts to its own wire shapes; what it cannot take — a URL where it needs the
bytes, a media type it does not read, an image in a turn that carries none, a part past its
own size bound — is refused here, in one wording, with ``TQX_RUNTIME_CAPABILITY_UNSUPPORTED``
(``TQX_REQUEST_TOO_LARGE`` for size).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from runport.contracts import ContentPart, ErrorCode, FilePart, ImagePart, Message, TextPart
from runport.ports import PortError

__all__ = ["PartRules", "data_url", "joined_turns", "message_parts", "text_content"]


@dataclass(frozen=True)
class PartRules:
    """What one provider API takes in a user turn. A media type set may hold ``"text/*"``
    for a whole family."""

    provider: str
    """The API's name as errors say it (``"OpenAI chat completions"``)."""
    image_types: frozenset[str]
    file_types: frozenset[str]
    image_urls: bool = True
    """Whether an image may be given by URL (else only its bytes)."""
    file_urls: bool = True
    max_data_chars: int | None = None
    """The longest base64 ``data`` one part may have, where the API bounds it."""
    max_request_data_chars: int | None = None
    """The most base64 characters all parts of a request may have together."""

    def check(self, part: ImagePart | FilePart, where: str) -> None:
        """Refuse ``part`` (in the message ``where`` names) unless this API takes it."""
        noun = "image" if isinstance(part, ImagePart) else "file"
        accepted = self.image_types if isinstance(part, ImagePart) else self.file_types
        family = part.media_type.split("/")[0] + "/*"
        if part.media_type not in accepted and family not in accepted:
            listed = ", ".join(sorted(accepted)) or "none"
            raise _refused(
                f"{self.provider} takes no {part.media_type} {noun} ({where}; it takes {listed})"
            )
        by_url = self.image_urls if isinstance(part, ImagePart) else self.file_urls
        if part.url is not None and not by_url:
            raise _refused(
                f"{self.provider} takes a {noun} by its bytes, not by URL ({where}): give its "
                "data (base64) instead"
            )
        limit = self.max_data_chars
        if limit is not None and part.data is not None and len(part.data) > limit:
            raise PortError(
                ErrorCode.REQUEST_TOO_LARGE,
                f"{where}: a {noun} of {len(part.data)} base64 characters passes the "
                f"{limit} {self.provider} takes in one part",
            )


def message_parts(messages: Sequence[Message], index: int, rules: PartRules) -> list[ContentPart]:
    """The parts of user message ``index``, each checked against ``rules`` (and, when the API
    bounds a request's parts together, every message's parts counted up to this one)."""
    message = messages[index]
    content = message.content
    if isinstance(content, str):
        return [TextPart(text=content)]
    where = f"message {index}"
    for part in content:
        if isinstance(part, ImagePart | FilePart):
            rules.check(part, where)
    if rules.max_request_data_chars is not None:
        total = sum(
            len(part.data)
            for earlier in messages[: index + 1]
            if not isinstance(earlier.content, str)
            for part in earlier.content
            if isinstance(part, ImagePart | FilePart) and part.data is not None
        )
        if total > rules.max_request_data_chars:
            raise PortError(
                ErrorCode.REQUEST_TOO_LARGE,
                f"the parts up to {where} hold {total} base64 characters, more than the "
                f"{rules.max_request_data_chars} {rules.provider} takes in one request",
            )
    return list(content)


def text_content(message: Message, provider: str, index: int) -> str:
    """A turn that carries only text (a system or assistant turn, a tool result): its string,
    or its text parts joined; an image or file in it is refused."""
    content = message.content
    if isinstance(content, str):
        return content
    if any(not isinstance(part, TextPart) for part in content):
        raise _refused(
            f"{provider} takes images and files in user turns only, not in a {message.role} "
            f"turn (message {index})"
        )
    return "".join(part.text for part in content if isinstance(part, TextPart))


def joined_turns(
    turns: Iterable[tuple[str, list[dict[str, Any]]]], blocks: str = "content"
) -> list[dict[str, Any]]:
    """A conversation's wire turns, ``{"role": role, blocks: [...]}``, from ``(role, blocks)``
    pairs in order: consecutive turns of one role are joined into one (each of a turn's tool
    results belongs in the one user turn after it, and APIs that want user and assistant turns
    to alternate refuse two in a row), and a turn with no blocks is left out."""
    wire: list[dict[str, Any]] = []
    for role, content in turns:
        if not content:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1][blocks].extend(content)
        else:
            wire.append({"role": role, blocks: content})
    return wire


def data_url(part: ImagePart | FilePart) -> str:
    """A part's bytes as a ``data:`` URL (its https URL as it is)."""
    if part.url is not None:
        return part.url
    return f"data:{part.media_type};base64,{part.data}"


def _refused(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED, message)
