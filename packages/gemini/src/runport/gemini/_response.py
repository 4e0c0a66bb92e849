"""Gemini ``GenerateContentResponse`` chunks (or one whole response) assembled into a
``TurnBuilder`` — the same code for both, so ``execute`` and ``execute_streaming`` agree."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import JsonValue

from runport.contracts import ErrorCode
from runport.gemini._request import PROVIDER, SIGNATURE
from runport.http import TurnBuilder, error_from_words, error_message, provider_text
from runport.ports import PortError


def invalid(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)


def error_object(body: dict[str, Any], secrets: Iterable[str]) -> PortError:
    """``{"error": {"code": 503, "status": "UNAVAILABLE", "message": …}}`` in a stream or
    body, classified by its status word and code."""
    error = body.get("error")
    words: list[str] = []
    code: int | None = None
    if type(error) is dict:
        status = error.get("status")
        if type(status) is str:
            words.append(status[:200])
        if type(error.get("code")) is int:
            code = error["code"]
    return error_from_words(words, code, provider_text(error_message(body), secrets))


class ResponseAssembly:
    """Parts of candidate 0 in order: text parts are the answer, ``thought: true`` parts are
    not (a part carrying only a ``thoughtSignature`` beside its text is answer text), and a
    ``functionCall`` arrives whole — announced and its arguments sent as one fragment. A
    candidate's ``finishReason`` is the completion marker; usage is the latest
    ``usageMetadata``: input ``promptTokenCount``, output ``candidatesTokenCount`` +
    ``thoughtsTokenCount``.
    """

    __slots__ = ("_secrets", "turn")

    def __init__(self, turn: TurnBuilder, secrets: tuple[str, ...]) -> None:
        self.turn = turn
        self._secrets = secrets

    def feed(self, chunk: Any) -> bool:
        """One response object; ``True`` when it carried the completion marker."""
        if type(chunk) is not dict:
            raise invalid("a response chunk is not a JSON object")
        if chunk.get("error") is not None:
            raise error_object(chunk, self._secrets)
        finished = False
        candidates = chunk.get("candidates")
        if candidates:
            if type(candidates) is not list:
                raise invalid("candidates is not a list")
            finished = self._candidate(candidates)
        else:
            self._prompt_feedback(chunk.get("promptFeedback"))
        usage = chunk.get("usageMetadata")
        if usage is not None:
            self._usage(usage)
        return finished

    def _candidate(self, candidates: list[Any]) -> bool:
        candidate = candidates[0]
        for other in candidates:
            if type(other) is dict and other.get("index", 0) == 0:
                candidate = other
                break
        if type(candidate) is not dict:
            raise invalid("a candidate is not an object")
        content = candidate.get("content")
        if content is not None:
            if type(content) is not dict:
                raise invalid("a candidate's content is not an object")
            parts = content.get("parts") or []
            if type(parts) is not list:
                raise invalid("a candidate's parts is not a list")
            turn = self.turn
            for part in parts:
                # The hot path: a plain text part goes straight to the turn.
                if (
                    type(part) is dict
                    and len(part) == 1
                    and type(text := part.get("text")) is str
                    and turn.finish_reason is None
                ):
                    turn.text(text)
                else:
                    self._part(part)
        reason = candidate.get("finishReason")
        if reason is None:
            return False
        if type(reason) is not str:
            raise invalid("a finishReason is not a string")
        if self.turn.finish_reason is None:
            self.turn.finish_reason = reason
        return True

    def _part(self, part: Any) -> None:
        if type(part) is not dict:
            raise invalid("a content part is not an object")
        if part.get("thought") is True:
            return
        turn = self.turn
        text = part.get("text")
        call = part.get("functionCall")
        if (text or call is not None) and turn.finish_reason is not None:
            raise invalid("content arrived after finishReason")
        if text is not None:
            if type(text) is not str:
                raise invalid("a text part holds no string")
            turn.text(text)
        if call is not None:
            if type(call) is not dict:
                raise invalid("a functionCall is not an object")
            name, call_id, args = call.get("name"), call.get("id"), call.get("args")
            if type(name) is not str or (call_id is not None and type(call_id) is not str):
                raise invalid("a functionCall has no name")
            if args is not None and type(args) is not dict:
                raise invalid(f"functionCall {name!r}: args is not an object")
            arguments = json.dumps(args, ensure_ascii=False, separators=(",", ":")) if args else ""
            signature = part.get("thoughtSignature")
            if signature is not None and type(signature) is not str:
                raise invalid(f"functionCall {name!r}: thoughtSignature is not a string")
            # Sent back with the call in later turns, as thinking models require.
            metadata: dict[str, JsonValue] | None = (
                {PROVIDER: {SIGNATURE: signature}} if signature else None
            )
            turn.whole_call(name, call_id or None, arguments, metadata)

    def _prompt_feedback(self, feedback: Any) -> None:
        if type(feedback) is not dict:
            return
        reason = feedback.get("blockReason")
        if reason is not None:
            word = provider_text(reason, self._secrets) or "a reason it did not name"
            raise PortError(
                ErrorCode.RUNTIME_PERMANENT, f"the upstream blocked the prompt ({word})"
            )

    def _usage(self, usage: Any) -> None:
        if type(usage) is not dict:
            raise invalid("usageMetadata is not an object")
        prompt = usage.get("promptTokenCount")
        candidates = usage.get("candidatesTokenCount")
        thoughts = usage.get("thoughtsTokenCount")
        if prompt is None and candidates is None and thoughts is None:
            return  # usage without counts reports nothing: none is invented
        for count in (prompt, candidates, thoughts):
            if count is not None and (type(count) is not int or count < 0):
                raise invalid("usageMetadata does not hold token counts")
        self.turn.usage = (prompt or 0, (candidates or 0) + (thoughts or 0))
