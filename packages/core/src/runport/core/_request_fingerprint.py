"""The request fingerprint of a compiled interaction, with its contract's part encoded once.

Every interaction compiled from one contract differs from the others only in its messages: the
schema, the policy, the capabilities and the tools are the contract's. The canonical encoding of
those fields is kept (the *frame*) and only the messages are encoded per call; the digest is
the very one ``fingerprint(interaction)`` gives, byte for byte.
"""

from __future__ import annotations

import hashlib
import marshal
import threading
from json.encoder import encode_basestring
from typing import Any

from runport.contracts import CompiledInteraction, Message, canonical_json, fingerprint

_Frame = tuple[str, str]
_FRAMES: dict[bytes | str, _Frame] = {}
_LIMIT = 256
_LOCK = threading.Lock()


def request_fingerprint(interaction: CompiledInteraction) -> str:
    """``fingerprint(interaction)``, the frame around the messages found by the other fields'
    ``marshal`` image (their ``repr`` when they hold models): both tell apart all the canonical
    encoding does (``1``, ``1.0`` and ``true`` included), so a frame is never served to fields
    it was not made from; a different key order is only one more entry."""
    others = dict(interaction.__dict__)
    messages = others.pop("messages", None)
    if type(messages) is not list:
        return fingerprint(interaction)  # built around validation: encoded the long way
    encoded: list[str] = []
    for message in messages:
        if type(message) is not Message:
            return fingerprint(interaction)
        encoded.append(_message(message))
    try:
        key: bytes | str = marshal.dumps(others, 2)
    except ValueError:  # models inside (tools)
        key = repr(others)
    frame = _FRAMES.get(key)
    if frame is None:
        frame = _frame(interaction)
        with _LOCK:
            if len(_FRAMES) >= _LIMIT:
                _FRAMES.pop(next(iter(_FRAMES)), None)
            _FRAMES[key] = frame
    text = frame[0] + ",".join(encoded) + frame[1]
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _frame(interaction: CompiledInteraction) -> _Frame:
    """The canonical encoding before and after the messages' array: an object's encoding is
    its members' encodings, key-sorted and comma-joined, which is what is rebuilt here."""
    dumped: dict[str, Any] = interaction.model_dump(mode="json")
    before: list[str] = []
    after: list[str] = []
    side = before
    for name in sorted(dumped):
        if name == "messages":
            before.append(f'"{name}":[')
            side = after
            continue
        side.append(f'"{name}":' + canonical_json(dumped[name]).decode("utf-8"))
    head = ",".join(before[:-1])
    head = "{" + (head + "," if head else "") + before[-1]
    return head, "]" + "".join("," + member for member in after) + "}"


def _message(message: Message) -> str:
    if (
        message.tool_calls is not None
        or message.tool_call_id is not None
        or type(message.content) is not str
    ):
        return canonical_json(message).decode("utf-8")
    return '{"content":' + encode_basestring(message.content) + ',"role":"' + message.role + '"}'
