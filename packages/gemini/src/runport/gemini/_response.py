"""Gemini ``GenerateContentResponse`` chunks (or one whole response) assembled into a
``TurnBuilder`` — the same code for both, so ``execute`` and ``execute_streaming`` agree."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from pydantic import JsonValue

from runport.contracts import ErrorCode, Finish
from runport.core import TurnBuilder
from runport.gemini._partial import StreamedArguments, invalid
from runport.gemini._provided import Provided
from runport.gemini._request import PROVIDER, SIGNATURE
from runport.http import cache_counts, error_from_words, error_message, provider_text
from runport.ports import PortError

FINISHES: Final[dict[str, Finish]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "LANGUAGE": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
}
"""``finishReason`` words normalised (``ExecutionReceipt.finish``); any other (``OTHER``,
``FINISH_REASON_UNSPECIFIED``, a new one) is ``other``."""


class _Streaming:
    """A function call whose arguments arrive in pieces (``partialArgs``, ``willContinue``)."""

    __slots__ = ("arguments", "call_id", "index", "name", "signed")

    def __init__(self, index: int, name: str, call_id: str | None, signed: bool) -> None:
        self.index = index
        self.name = name
        self.call_id = call_id
        self.signed = signed
        self.arguments = StreamedArguments()


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
    """Parts of candidate 0 in order: text parts are the answer; ``thought: true`` parts are
    reasoning, never the answer (consecutive thought parts are one block, whose
    ``thoughtSignature`` is kept as ``{"gemini": {"thoughtSignature": …}}``; a second
    signature in a run begins a new block, as signatures cannot be merged); a part carrying a
    ``thoughtSignature`` beside its answer text is answer text. A ``functionCall`` arrives
    whole — announced and its arguments sent as one fragment — or, from Gemini 3 with streamed
    arguments, in pieces: the first names it (``willContinue: true``), the next carry
    ``partialArgs``, and the first piece without ``willContinue: true`` ends it; each piece's
    arguments go out as fragments of the one call.

    A candidate's ``finishReason`` is the completion marker, but content after it is kept
    (Gemini's built-in tools send ``STOP`` and then more): the last finish reason stands.
    What the provider did itself (``executableCode``, ``codeExecutionResult``, ``inlineData``,
    ``groundingMetadata``) is read by ``Provided``; a part of a kind not known is kept.
    Usage is the latest ``usageMetadata``: input ``promptTokenCount``, output
    ``candidatesTokenCount`` + ``thoughtsTokenCount`` (what is billed as output; the
    candidates' count leaves thoughts out), reasoning ``thoughtsTokenCount``, cache reads
    ``cachedContentTokenCount`` (a part of ``promptTokenCount``; ADR 0051).
    """

    __slots__ = (
        "_busy",
        "_provided",
        "_secrets",
        "_signed",
        "_streaming",
        "_thinking",
        "turn",
    )

    def __init__(self, turn: TurnBuilder, secrets: tuple[str, ...]) -> None:
        self.turn = turn
        self._secrets = secrets
        self._thinking = False  # the last part was a thought: the next one joins its block
        self._signed = False  # the open thought block has its signature
        self._streaming: _Streaming | None = None
        self._busy = False  # a thought block or a streamed call is open
        self._provided = Provided(turn)

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
            self._grounding(candidates)
        else:
            self._prompt_feedback(chunk.get("promptFeedback"))
        usage = chunk.get("usageMetadata")
        if usage is not None:
            self._usage(usage)
        return finished

    def close(self) -> None:
        """The response ended: a call still streaming its arguments is whole."""
        if self._streaming is not None:
            self._end_call()

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
                    and not self._busy
                ):
                    turn.text(text)
                elif (
                    self._thinking
                    and type(part) is dict
                    and len(part) == 2
                    and part.get("thought") is True
                    and type(text := part.get("text")) is str
                ):
                    turn.reasoning(text)  # the next piece of a thought block, unsigned
                else:
                    self._part(part)
        reason = candidate.get("finishReason")
        if reason is None:
            return False
        if type(reason) is not str:
            raise invalid("a finishReason is not a string")
        self.close()
        turn = self.turn
        turn.finished(reason, FINISHES)
        if turn.finish == "stop" and turn.has_call(0):
            turn.finish = "tool_calls"  # STOP is also the word for a turn that made calls
        return True

    def _grounding(self, candidates: list[Any]) -> None:
        """Candidate 0's ``groundingMetadata``, read after its parts (its spans point into
        the text so far)."""
        for candidate in candidates:
            if type(candidate) is dict and candidate.get("index", 0) == 0:
                self._provided.grounding(candidate.get("groundingMetadata"))
                return

    def _part(self, part: Any) -> None:
        if type(part) is not dict:
            raise invalid("a content part is not an object")
        if self._provided.part(part):
            if self._streaming is not None:
                self._end_call()
            self._thinking = False
            self._busy = False
            return
        text = part.get("text")
        if text is not None and type(text) is not str:
            raise invalid("a text part holds no string")
        signature = part.get("thoughtSignature")
        if signature is not None and type(signature) is not str:
            raise invalid("a thoughtSignature is not a string")
        call = part.get("functionCall")
        if self._streaming is not None and call is None:
            self._end_call()
        if part.get("thought") is True:
            self._thought(text, signature)
            return
        self._thinking = False
        self._busy = self._streaming is not None
        if text is not None:
            self.turn.text(text)
        if call is not None:
            if type(call) is not dict:
                raise invalid("a functionCall is not an object")
            if self._streaming is not None or "partialArgs" in call or call.get("willContinue"):
                self._streamed_call(call, signature)
            elif call:  # an empty one marks the end of a streamed call: there is none here
                self._whole_call(call, signature)

    def _thought(self, text: str | None, signature: str | None) -> None:
        if not text and not signature:
            return  # an empty thought is nothing (no block, no event)
        turn = self.turn
        if not self._thinking or (signature and self._signed):
            turn.open_reasoning()
            self._thinking, self._signed, self._busy = True, False, True
        if text:
            turn.reasoning(text)
        if signature:
            # Sent back with the thought in later turns, as thinking models want.
            turn.reasoning_metadata({PROVIDER: {SIGNATURE: signature}})
            self._signed = True

    def _whole_call(self, call: dict[str, Any], signature: str | None) -> None:
        name, call_id, args = call.get("name"), call.get("id"), call.get("args")
        if type(name) is not str or (call_id is not None and type(call_id) is not str):
            raise invalid("a functionCall has no name")
        if args is not None and type(args) is not dict:
            raise invalid(f"functionCall {name!r}: args is not an object")
        arguments = json.dumps(args, ensure_ascii=False, separators=(",", ":")) if args else ""
        # Sent back with the call in later turns, as thinking models require.
        metadata: dict[str, JsonValue] | None = (
            {PROVIDER: {SIGNATURE: signature}} if signature else None
        )
        self.turn.whole_call(name, call_id or None, arguments, metadata)

    def _streamed_call(self, call: dict[str, Any], signature: str | None) -> None:
        name, call_id, args = call.get("name"), call.get("id"), call.get("args")
        if call_id is not None and type(call_id) is not str:
            raise invalid("a functionCall's id is not a string")
        streaming = self._streaming
        if streaming is None:
            if type(name) is not str or not name:
                raise invalid("a streamed functionCall's first piece has no name")
            index = self.turn.open_call(name, call_id or None)
            streaming = self._streaming = _Streaming(index, name, call_id, False)
            self._busy = True
        elif (name and name != streaming.name) or (
            call_id and streaming.call_id and call_id != streaming.call_id
        ):
            raise invalid(f"functionCall {streaming.name!r} was still streaming its arguments")
        if signature and not streaming.signed:
            self.turn.call_metadata(streaming.index, {PROVIDER: {SIGNATURE: signature}})
            streaming.signed = True
        partials = call.get("partialArgs")
        if partials is not None and type(partials) is not list:
            raise invalid(f"functionCall {streaming.name!r}: partialArgs is not a list")
        if args is not None and type(args) is not dict:
            raise invalid(f"functionCall {streaming.name!r}: args is not an object")
        writer = streaming.arguments
        for key, value in (args or {}).items():
            self.turn.call_arguments(streaming.index, writer.whole(key, value))
        for partial in partials or ():
            self.turn.call_arguments(streaming.index, writer.piece(partial))
        if call.get("willContinue") is not True:
            self._end_call()

    def _end_call(self) -> None:
        streaming = self._streaming
        assert streaming is not None
        self._streaming = None
        self._busy = self._thinking
        self.turn.call_arguments(streaming.index, streaming.arguments.end())
        self.turn.close_call(streaming.index)

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
        self.turn.reasoning_tokens = thoughts
        self.turn.cache_read_tokens, _ = cache_counts(
            usage.get("cachedContentTokenCount"), input_tokens=prompt or 0
        )
