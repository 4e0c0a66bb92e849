"""Chat-completion chunks (or one whole completion) read into runport.http's ``TurnBuilder``.

A JSON completion is read by the same code as the chunks of a stream, which is what makes
``execute`` and ``execute_streaming`` agree (docs/streaming-law.md, law 2). This module says
what a chunk means; the turn — text, reasoning, tool calls, finish reason, usage and bounds —
is assembled by ``TurnBuilder``, the one assembler every codec uses (docs/codecs.md).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import JsonValue

from runport.contracts import Finish, StreamEvent
from runport.core import TextPieces, TurnBuilder
from runport.http import cache_counts
from runport.openai._errors import error_frame, invalid
from runport.openai._provided import cite_annotations, cite_sources, generated_images

PROVIDER = "openai"
"""The ``provider_metadata`` key of a reasoning block: ``{"openai": {"field": …}}`` names the
field that carried it (``reasoning_content``, ``reasoning``, or ``thinking`` for Mistral's
typed content parts)."""

FINISHES: Final[dict[str, Finish]] = {
    "stop": "stop",
    "eos": "stop",  # vLLM's older servers
    "length": "length",
    "model_length": "length",  # Mistral: the model's context is full
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "error": "error",  # Mistral
}
"""Chat-completions ``finish_reason`` words normalised (``ExecutionReceipt.finish``); any other
word is ``other``."""

OPENROUTER = "openrouter"
"""``{"openrouter": {"reasoning_details": [...]}}``: OpenRouter's entries, sent back as they
came (adr/0031-reasoning-sent-back-per-dialect.md)."""

DETAILS = "reasoning_details"

_REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where servers put streamed reasoning text, in the order read: a delta that carries both
(a server keeping the old name beside the new) is read once, from the first."""

_JOINED = ("text", "summary")
"""The ``reasoning_details`` fields a streamed entry carries in pieces (joined per entry)."""


class _Pending:
    """A call whose name has not arrived: its id so far and the argument text held for its
    announcement."""

    __slots__ = ("arguments", "upstream_id")

    def __init__(self) -> None:
        self.arguments = TextPieces()
        self.upstream_id: str | None = None


def _names_a_call(fragment: dict[str, Any]) -> bool:
    function = fragment.get("function")
    return type(function) is dict and type(function.get("name")) is str and bool(function["name"])


class ChunkAssembly:
    """Reads one turn's chunks into ``turn``.

    Upstream quirks it accepts: a role-only first chunk, chunks with empty or absent
    ``choices`` (usage, content-filter results), tool-call ``id``/``name`` on the first fragment
    only or repeated on every one, argument text before a call's name (held, and sent with its
    announcement), calls interleaved by ``index`` in any order, a named call with no ``index``
    at all (Mistral streams each call whole: it takes the next position), parallel calls that
    all arrive at one ``index`` with distinct ids (Ollama, LiteLLM: a new id at an index is a
    new call, numbered after every call so far, as the unstreamed answer lists it; a fragment
    with no id goes on to the index's latest call), a ``refusal`` in place of content (kept
    as the turn's text: nothing the model said is lost). What it refuses
    (``INVALID_RESPONSE``): a call whose name changes, an index that is not a non-negative
    integer, a call that never gets a name, fields of the wrong JSON type.

    A finish reason is not a completion marker: servers (Z.ai's GLM-4.5, OpenRouter) put
    ``finish_reason`` on every chunk, the calls' fragments included, so content after one is
    kept and the last finish reason stands. The completion marker is ``[DONE]`` (the
    decoder's, ``_ChunkStream``).

    Reasoning: ``delta.reasoning_content`` (DeepSeek, vLLM, SGLang, Qwen) or
    ``delta.reasoning`` (OpenRouter, Groq, Ollama), else the text of
    ``delta.reasoning_details`` entries (OpenRouter, which sends both: its text is read once),
    and Mistral's ``thinking`` content parts, each piece a ``ReasoningDelta``; unstreamed,
    ``message.reasoning_content`` / ``message.reasoning`` / ``message.reasoning_details``. A
    turn's reasoning is one block (the protocol marks no boundaries); OpenRouter's entries,
    merged by their ``index`` as they stream, are its ``provider_metadata``.
    ``usage.completion_tokens_details.reasoning_tokens`` is ``Usage.reasoning_tokens``, and
    ``usage.prompt_tokens_details.cached_tokens`` (a part of ``prompt_tokens``)
    ``Usage.cache_read_tokens`` (ADR 0051).
    """

    __slots__ = (
        "_cited",
        "_details",
        "_field",
        "_ids",
        "_pending",
        "_refused",
        "_secrets",
        "_slots",
        "turn",
    )

    def __init__(self, turn: TurnBuilder, secrets: tuple[str, ...] = ()) -> None:
        self.turn = turn
        self._secrets = secrets
        self._slots: dict[int, int] = {}
        """An upstream ``index`` → the number of its latest call (the index itself, unless
        that number was taken or several calls share the index)."""
        self._pending: dict[int, _Pending] = {}
        """A call without a name yet, by number."""
        self._ids: dict[int, str | None] = {}
        """Each announced call's upstream id, by number (``None``: it had none when
        announced)."""
        self._field: str | None = None
        """The field that opened the turn's reasoning block (``None``: none yet)."""
        self._details: list[dict[str, Any]] = []
        self._refused = False
        """A ``refusal`` arrived: the turn's end is ``content_filter``, whatever word ends it."""
        self._cited = 0
        """How many of the top-level ``citations`` (Perplexity's) are cited so far."""

    # -- a stream's chunk ----------------------------------------------------------------------

    def feed_chunk(self, chunk: Any) -> None:
        """One ``chat.completion.chunk`` (already JSON-decoded)."""
        choices = self._answer(chunk, "a stream frame").get("choices")
        if choices:
            if type(choices) is not list:
                raise invalid("a stream frame's choices is not a list")
            for choice in choices:
                if type(choice) is not dict:
                    raise invalid("a stream frame's choice is not an object")
                if choice.get("index", 0) != 0:
                    continue  # this adapter never asks for n > 1
                delta = choice.get("delta")
                if delta:
                    if type(delta) is not dict:
                        raise invalid("a stream frame's delta is not an object")
                    self._feed_message(delta)
                finish = choice.get("finish_reason")
                if finish is not None:
                    self._finish(finish)
        sources = chunk.get("citations")
        if sources is not None:
            self._cited = cite_sources(self.turn, sources, self._cited)
        usage = chunk.get("usage")
        if usage is None:
            groq = chunk.get("x_groq")  # Groq streams its usage here, on the last chunk
            if type(groq) is dict:
                usage = groq.get("usage")
        if usage is not None:
            self._usage(usage)

    def single_event(self, chunk: Any) -> StreamEvent | None:
        """The one event of a chunk in a shape nearly every frame of a long stream has — one
        choice whose delta is only a piece of text, a piece of reasoning (beside a null
        ``content``, as DeepSeek sends it), or a fragment of a call's arguments already
        announced — assembled like ``feed_chunk`` would; ``None`` for any other chunk, which
        ``feed_chunk`` then takes (untouched by this call).

        Returned rather than emitted (``TurnBuilder``'s ``*_event`` variants), so a decoder
        hands it on with no list between (the per-delta cost of the streaming benchmark)."""
        if type(chunk) is not dict:
            return None
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        if chunk.get("usage") is not None or chunk.get("error") is not None:
            return None
        if "citations" in chunk:
            return None  # Perplexity's sources beside the text: the long way
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None:
            return None
        delta = choice.get("delta")
        if type(delta) is not dict or choice.get("index", 0) != 0:
            return None
        size = len(delta)
        content = delta.get("content")
        if size == 2:
            # DeepSeek's reasoning shape, beside a null (or empty) ``content``.
            opened = self._field is not None
            if (content is None or content == "") and "content" in delta and opened:
                return self._reasoning_event(delta)
            return None
        if size == 1:
            if content:
                if type(content) is not str:
                    return None
                return self.turn.text_event(content)
            calls = delta.get("tool_calls")
            if calls is None:
                if self._field is None:
                    return None  # the turn's first piece opens its block: the long way
                return self._reasoning_event(delta)
            if type(calls) is not list or len(calls) != 1:
                return None
            fragment = calls[0]
            if type(fragment) is not dict or len(fragment) != 2:
                return None
            function = fragment.get("function")
            index = fragment.get("index")
            if type(function) is not dict or len(function) != 1 or type(index) is not int:
                return None
            arguments = function.get("arguments")
            number = self._slots.get(index)
            if type(arguments) is not str or not arguments or number is None:
                return None
            return self.turn.arguments_event(number, arguments)
        return None

    def _reasoning_event(self, delta: dict[str, Any]) -> StreamEvent | None:
        """A delta's piece of reasoning (``reasoning_content``, else ``reasoning``) as the
        event of the block already open; ``None``: the long way."""
        piece = delta.get("reasoning_content")
        if piece is None:
            piece = delta.get("reasoning")
        return self.turn.reasoning_event(piece) if type(piece) is str and piece else None

    # -- a whole completion --------------------------------------------------------------------

    def feed_completion(self, completion: Any) -> None:
        """A whole ``chat.completion`` (the non-streamed answer), read as one big chunk."""
        choices = self._answer(completion, "the response").get("choices")
        if type(choices) is not list or not choices:
            raise invalid("the response has no choices")
        choice = next(
            (c for c in choices if type(c) is dict and c.get("index", 0) == 0), choices[0]
        )
        if type(choice) is not dict:
            raise invalid("the response's choice is not an object")
        message = choice.get("message")
        if message is not None:
            if type(message) is not dict:
                raise invalid("the response's message is not an object")
            calls = message.get("tool_calls")
            if calls:
                if type(calls) is not list:
                    raise invalid("the response's tool_calls is not a list")
                # A whole completion lists its calls in order without an index: the position is.
                message = {
                    **message,
                    "tool_calls": [
                        {**call, "index": position} if type(call) is dict else call
                        for position, call in enumerate(calls)
                    ],
                }
            self._feed_message(message)
        finish = choice.get("finish_reason")
        if finish is not None:
            self._finish(finish)
        sources = completion.get("citations")
        if sources is not None:
            self._cited = cite_sources(self.turn, sources, self._cited)
        self._usage(completion.get("usage"))

    def close(self) -> None:
        """The completion marker arrived: a call still without a name is refused, and
        OpenRouter's entries become the reasoning block's ``provider_metadata``."""
        if self._pending:
            raise invalid(f"tool call {min(self._pending)} never got a name")
        if self._details:
            details: list[JsonValue] = list(self._details)
            self.turn.reasoning_metadata({OPENROUTER: {DETAILS: details}})
            self._details = []

    # -- the pieces of a delta or message ------------------------------------------------------

    def _feed_message(self, delta: dict[str, Any]) -> None:
        self._reasoning(delta)
        content = delta.get("content")
        if content:
            if type(content) is list:
                self._content_parts(content)
            elif type(content) is str:
                self.turn.text(content)
            else:
                raise invalid("a content field is neither a string nor a list of parts")
        refusal = delta.get("refusal")
        if refusal:
            if type(refusal) is not str:
                raise invalid("a refusal field is not a string")
            self.turn.text(refusal)
            self._refused = True
        calls = delta.get("tool_calls")
        if calls:
            if type(calls) is not list:
                raise invalid("a tool_calls field is not a list")
            for fragment in calls:
                self._feed_call(fragment)
        if "annotations" in delta:
            cite_annotations(self.turn, delta["annotations"])
        if "images" in delta:
            generated_images(self.turn, delta["images"])

    def _reasoning(self, delta: dict[str, Any]) -> None:
        carried = False
        for field in _REASONING_FIELDS:
            piece = delta.get(field)
            if piece is None:
                continue
            if type(piece) is not str:
                raise invalid(f"a {field} field is not a string")
            if piece and not carried:
                self._reasoning_piece(field, piece)
                carried = True
        details = delta.get(DETAILS)
        if details:
            if type(details) is not list:
                raise invalid("a reasoning_details field is not a list")
            text = self._merge_details(details)
            if text and not carried:
                self._reasoning_piece(None, text)

    def _reasoning_piece(self, field: str | None, piece: str) -> None:
        if self._field is None:
            self._field = field or ""
            self.turn.open_reasoning({PROVIDER: {"field": field}} if field else None)
        self.turn.reasoning(piece)

    def _merge_details(self, entries: list[Any]) -> str:
        """OpenRouter's entries, merged into the turn's by their ``index`` (a streamed entry
        comes in pieces whose ``text``/``summary`` join; any other field a piece carries is
        set); returns the reasoning text these pieces carry."""
        texts: list[str] = []
        held = self._details
        for entry in entries:
            if type(entry) is not dict:
                raise invalid("a reasoning_details entry is not an object")
            for key in _JOINED:
                value = entry.get(key)
                if value is not None:
                    if type(value) is not str:
                        raise invalid(f"a reasoning_details entry's {key} is not a string")
                    texts.append(value)
            index = entry.get("index")
            into = None
            if index is not None:
                into = next((kept for kept in held if kept.get("index") == index), None)
            if into is None or ("type" in entry and entry["type"] != into.get("type")):
                held.append(dict(entry))
                continue
            for key, value in entry.items():
                if value is None:
                    into.setdefault(key, None)
                elif key in _JOINED and type(into.get(key)) is str:
                    into[key] += value
                else:
                    into[key] = value
        return "".join(texts)

    def _content_parts(self, parts: list[Any]) -> None:
        """Typed content parts (Mistral's reasoning models): ``text`` parts (and bare strings)
        are the answer, ``thinking`` parts are reasoning, any other part is neither. Runs of
        one kind go as one piece."""
        run: list[str] = []
        thinking = False
        for part in parts:
            if type(part) is str:
                piece, kind = part, False
            elif type(part) is not dict:
                raise invalid("a content part is not an object")
            elif part.get("type") == "text":
                text = part.get("text")
                if type(text) is not str:
                    raise invalid("a text content part holds no string")
                piece, kind = text, False
            elif part.get("type") == "thinking":
                piece, kind = _thinking_text(part.get("thinking")), True
            else:
                continue
            if kind != thinking and run:
                self._content_run(run, thinking=thinking)
                run = []
            thinking = kind
            run.append(piece)
        if run:
            self._content_run(run, thinking=thinking)

    def _content_run(self, run: list[str], *, thinking: bool) -> None:
        piece = "".join(run)
        if not piece:
            return
        if thinking:
            self._reasoning_piece("thinking", piece)
        else:
            self.turn.text(piece)

    def _feed_call(self, fragment: Any) -> None:
        if type(fragment) is not dict:
            raise invalid("a tool-call fragment is not an object")
        index = fragment.get("index")
        if index is None and _names_a_call(fragment):
            # Mistral streams each call whole, in one chunk, with no index: the next position
            index = max(self._slots, default=-1) + 1
        if type(index) is not int or index < 0:
            raise invalid("a tool-call fragment has no valid index")
        function = fragment.get("function") or {}
        if type(function) is not dict:
            raise invalid(f"tool call {index}: function is not an object")
        name = _optional_text(function.get("name"), index, "name")
        upstream_id = _optional_text(fragment.get("id"), index, "id")
        arguments = _optional_text(function.get("arguments"), index, "arguments")
        number = self._number(index, upstream_id)
        turn = self.turn
        if not turn.has_call(number):
            pending = self._pending.get(number)
            if pending is None:
                pending = self._pending[number] = _Pending()
            if upstream_id:
                pending.upstream_id = upstream_id
            if arguments:
                pending.arguments.add(arguments)
            if name:
                del self._pending[number]
                self._ids[number] = pending.upstream_id
                turn.open_call(
                    name, pending.upstream_id, index=number, arguments=pending.arguments.take()
                )
            return
        if name and name != turn.call_identity(number)[1]:
            raise invalid(f"tool call {number} changed its name mid-stream")
        # An id first seen after the call was announced is ignored: the announced call_id
        # stands, since a call's identity never changes once a caller has seen it.
        if arguments:
            turn.call_arguments(number, arguments)

    def _number(self, index: int, upstream_id: str | None) -> int:
        """The number of the call a fragment at upstream ``index`` belongs to: the index's
        latest call, unless the fragment names an id other than that call's — then it is a
        new call, numbered after every call so far (parallel calls sent at one index)."""
        number = self._slots.get(index)
        if number is not None:
            pending = self._pending.get(number)
            known = pending.upstream_id if pending is not None else self._ids.get(number)
            if not upstream_id or known is None or known == upstream_id:
                return number
        taken = (*self._ids, *self._pending)
        fresh = number is None and index not in taken
        self._slots[index] = number = index if fresh else max(taken, default=-1) + 1
        return number

    def _answer(self, value: Any, what: str) -> dict[str, Any]:
        """A chunk or a completion as the object it must be, unless the upstream sent an error
        in its place (then that error, as the call's failure)."""
        if type(value) is not dict:
            raise invalid(f"{what} is not a JSON object")
        if value.get("error") is not None:
            raise error_frame(value["error"], self._secrets)
        return value

    def _usage(self, usage: Any) -> None:
        if usage is not None:
            take_usage(self.turn, usage, input_key="prompt", output_key="completion")

    def _finish(self, finish: Any) -> None:
        if type(finish) is not str:
            raise invalid("a finish_reason is not a string")
        self.turn.finished(finish, FINISHES)  # the last one stands
        if self._refused:
            self.turn.finish = "content_filter"


def take_usage(turn: TurnBuilder, usage: Any, *, input_key: str, output_key: str) -> None:
    """A usage object's counts onto ``turn``. OpenAI's two APIs name the same counts apart,
    ``KEY_tokens`` with ``input_key`` and ``output_key`` as KEY (``prompt``/``completion`` in
    chat completions, ``input``/``output`` in Responses); the reasoning tokens are among the
    output's ``KEY_tokens_details``, the cached ones among the input's. A usage object without
    counts reports nothing: none is invented."""
    if type(usage) is not dict:
        raise invalid("usage is not an object")
    counts = usage.get(f"{input_key}_tokens"), usage.get(f"{output_key}_tokens")
    if counts == (None, None):
        return
    for count in counts:
        if count is not None and (type(count) is not int or count < 0):
            raise invalid("usage does not hold token counts")
    details_key = f"{output_key}_tokens_details"
    details = usage.get(details_key)
    reasoning = None
    if details is not None:
        if type(details) is not dict:
            raise invalid(f"usage's {details_key} is not an object")
        reasoning = details.get("reasoning_tokens")
        if reasoning is not None and (type(reasoning) is not int or reasoning < 0):
            raise invalid("usage does not hold token counts")
    turn.usage = (counts[0] or 0, counts[1] or 0)
    turn.reasoning_tokens = reasoning or None
    turn.cache_read_tokens, _ = cache_counts(
        cached_tokens(usage, f"{input_key}_tokens_details"), input_tokens=counts[0] or 0
    )


def cached_tokens(usage: dict[str, Any], key: str) -> Any:
    """``usage[key].cached_tokens``: of the input tokens, those read from the prompt cache."""
    details = usage.get(key)
    if details is None:
        return None
    if type(details) is not dict:
        raise invalid(f"usage's {key} is not an object")
    return details.get("cached_tokens")


def _thinking_text(value: Any) -> str:
    """A Mistral ``thinking`` part's text: a list of ``text`` chunks (or a string)."""
    if type(value) is str:
        return value
    if type(value) is not list:
        raise invalid("a thinking content part holds no list of chunks")
    texts: list[str] = []
    for chunk in value:
        if type(chunk) is str:
            texts.append(chunk)
        elif type(chunk) is dict and chunk.get("type") == "text":
            text = chunk.get("text")
            if type(text) is not str:
                raise invalid("a thinking chunk holds no string")
            texts.append(text)
        elif type(chunk) is not dict:
            raise invalid("a thinking chunk is not an object")
    return "".join(texts)


def _optional_text(value: Any, index: int, field: str) -> str | None:
    if value is None or type(value) is str:
        return value
    raise invalid(f"tool call {index}: {field} is not a string")
