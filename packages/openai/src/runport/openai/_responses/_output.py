"""A Responses API answer — its output items, status and usage — assembled into runport.http's
``TurnBuilder``, whether the items arrive as stream events or whole in one response object
(docs/streaming-law.md, law 2)."""

from __future__ import annotations

from typing import Any, Final

from pydantic import JsonValue

from runport.contracts import Citation, Finish
from runport.core import TurnBuilder
from runport.openai._chunks import take_usage
from runport.openai._errors import error_frame, invalid
from runport.openai._responses._provided import (
    KNOWN_ITEMS,
    SERVER_TOOLS,
    annotation,
    annotation_event,
    generated_image,
    part_annotations,
    partial_image,
    server_tool,
)
from runport.openai._responses._request import PROVIDER

TERMINALS: Final = frozenset(("response.completed", "response.incomplete", "response.failed"))
STATUS_EVENTS: Final = frozenset(
    f"response.{item}.{status}"
    for item, statuses in (
        ("web_search_call", ("in_progress", "searching", "completed")),
        ("file_search_call", ("in_progress", "searching", "completed")),
        ("code_interpreter_call", ("in_progress", "interpreting", "completed")),
        ("mcp_call", ("in_progress", "completed", "failed")),
        ("image_generation_call", ("in_progress", "generating", "completed")),
    )
    for status in statuses
)
"""The events that only say how a provider-run item is getting on: the finished item says
what it did, so they give no event (the stream's hot path passes them over)."""
"""The completion markers: a stream that ends before one of them was cut short."""

INCOMPLETE: Final = {"max_output_tokens": "length", "content_filter": "content_filter"}
"""``incomplete_details.reason`` as a finish reason (any other reason is kept as sent)."""

FINISHES: Final[dict[str, Finish]] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}
"""The finish reasons ``OutputAssembly.end`` gives, normalised (``ExecutionReceipt.finish``):
an incomplete response's other reasons are ``other``."""

_NONE: Final = object()
"""``OutputAssembly._open`` before any reasoning block opened (a block may have no id)."""

SEPARATOR: Final = "\n\n"
"""Between the summary parts of one reasoning item (each a paragraph, usually headed): sent as
an event of its own when the next begins, so the joined deltas are the text, streamed or not.
The texts of several message items are joined as sent, with nothing between them (what the
SDK's ``output_text`` gives, and what the conformance law expects of text around a call)."""


class OutputAssembly:
    """Reads one response into ``turn``.

    Output items, in order: a ``message`` item's ``output_text`` is the answer's text (the
    texts of several items joined as sent; a ``refusal`` part too: nothing the model
    said is lost, and the turn's finish reason is then ``content_filter``,
    adr/0032-openai-responses-stateless.md); a ``function_call`` item is a call — ``call_id``
    the item's, numbered in the order of function-call items; a ``reasoning`` item is one
    reasoning block — its summary parts (joined by ``SEPARATOR``) and any ``reasoning_text``
    content are its text, its id and ``encrypted_content`` (given with the finished item) are
    kept as ``{"openai-responses": {"id": …, "encrypted_content": …}}``, what a stateless run
    sends back; an item with neither text nor encrypted content is nothing. A
    ``web_search_call``, ``file_search_call``, ``code_interpreter_call`` or ``mcp_call`` ran at
    the provider: a ``ServerToolCall`` and its ``ServerToolResult`` when it finishes, never a
    call; an ``image_generation_call`` is a generated file (its ``partial_image`` events
    previews); an ``output_text`` part's annotations are ``Citation``s (streamed by
    ``output_text.annotation.added``); any other item is kept, as it finished, in the
    receipt's ``provider_metadata`` (adr/0054-nothing-a-provider-sends-is-dropped.md).

    Upstream quirks it accepts: items announced or not (a finished item whose deltas never
    came gives its content whole), an item whose id changes on every event (GitHub Copilot's
    endpoint: events are matched to items by ``output_index``), events it does not know
    (skipped), the whole output only in the terminal event, events without a
    ``sequence_number``. What it refuses (``INVALID_RESPONSE``), as the ``openai`` SDK does or
    where its completed response would disagree (adr/0044-stream-order-and-call-ids.md): a
    ``sequence_number`` that does not grow (a replayed event), ``response.created`` after
    other events, a second ``output_item.added`` or ``output_item.done`` for one
    ``output_index``, an item finished at an index other than the one it was announced at,
    two function calls under one ``call_id``, text or arguments for an
    item never announced (or announced as another
    kind) or already finished, the text of two message items interleaved, a finished item
    whose text or arguments differ from what streamed for it, fields of the wrong JSON type,
    usage that holds no token counts. An item announced but not finished when the terminal
    event arrives is read from the terminal event's output.
    """

    __slots__ = (
        "_added",
        "_annotated",
        "_by_item",
        "_call_ids",
        "_finished",
        "_from",
        "_ids_at",
        "_open",
        "_part_from",
        "_parts",
        "_piece",
        "_reasoned",
        "_refused",
        "_secrets",
        "_seen",
        "_spoken",
        "began",
        "by_position",
        "sequence",
        "speaking",
        "turn",
    )

    def __init__(self, turn: TurnBuilder, secrets: tuple[str, ...] = ()) -> None:
        self.turn = turn
        self._secrets = secrets
        self._by_item: dict[Any, int] = {}
        """A function-call item's id → its call's index."""
        self.by_position: dict[Any, int] = {}
        """A function call's ``output_index`` → its call's index (the decoder's fast path
        reads it)."""
        self._open: object = _NONE
        """Which reasoning item's block is the turn's latest — its ``output_index``, else its
        id (``_NONE``: no block takes pieces)."""
        self._reasoned = False
        """Whether the open block has any text."""
        self._piece: tuple[str, Any] | None = None
        """The part of the open block the last reasoning piece belonged to."""
        self.speaking: int | None = None
        """The ``output_index`` of the message item whose text is streaming, until it
        finishes (the decoder's fast path takes a text delta for it alone)."""
        self._from = 0
        """Where the speaking item's text begins in the turn's text."""
        self._spoken: set[int] = set()
        """The message items whose text streamed."""
        self._added: dict[int, Any] = {}
        """Each announced item's ``output_index`` → its type."""
        self._call_ids: set[str] = set()
        """The ``call_id`` of every function call so far."""
        self._parts: dict[int, int] = {}
        """How many content parts each announced message item has (those it was announced
        with, then one per ``content_part.added``)."""
        self._ids_at: dict[str, int] = {}
        """An announced item's id → its ``output_index``."""
        self._finished: set[int] = set()
        """The ``output_index`` of every finished item."""
        self._part_from: dict[tuple[int, int], int] = {}
        """Where each announced content part's text begins in the turn's text."""
        self._annotated: dict[tuple[int, int], int] = {}
        """How many annotations each content part has streamed."""
        self.sequence = -1
        """The last ``sequence_number`` seen (``-1``: none yet)."""
        self.began = False
        """Whether any event arrived."""
        self._refused = False
        self._seen = False
        """Whether any output item was announced or finished in the stream."""

    # -- a stream's events -----------------------------------------------------------------------

    def sequenced(self, number: Any) -> None:
        """An event's ``sequence_number``: each must be greater than the last (a replayed
        event, appended twice, would say what the model did not)."""
        if type(number) is not int:
            raise invalid("a stream event's sequence_number is not an integer")
        if number <= self.sequence:
            raise invalid(
                f"a stream event was replayed or reordered (sequence_number {number} "
                f"after {self.sequence})"
            )
        self.sequence = number

    def event(self, data: dict[str, Any]) -> bool:
        """One stream event (decoded); ``True`` when it was the completion marker."""
        kind = data.get("type")
        if kind == "response.created" and self.began:
            raise invalid("response.created arrived after other events")
        self.began = True
        # first the frames every item has, which the stream's hot path leaves to this chain
        if kind == "response.output_item.done":
            self.item(_item(data), data.get("output_index"))
        elif kind == "response.output_item.added":
            self._added_item(_item(data), data.get("output_index"))
        elif kind == "response.output_text.delta" or kind == "response.refusal.delta":
            piece = _text(data.get("delta"), "a text delta")
            self._refused = self._refused or kind == "response.refusal.delta"
            self._speak(data.get("output_index"), data.get("content_index"))
            if piece:
                self.turn.text(piece)
        elif kind == "response.function_call_arguments.delta":
            index = self._announced(data)
            fragment = _text(data.get("delta"), "an arguments delta")
            if fragment:
                self.turn.call_arguments(index, fragment)
        elif kind == "response.content_part.added":
            position, part = data.get("output_index"), data.get("part")
            raw = type(part) is dict and part.get("type") == "reasoning_text"
            if raw and type(position) is int and self._added.get(position) == "reasoning":
                # a reasoning item's raw chain of thought comes in content parts of its own
                # (gpt-oss through OpenRouter); its text streams as reasoning_text deltas
                self._open_item(position, "reasoning", kind)
            else:
                self._open_item(position, "message", kind)
                at: int = data["output_index"]
                self._part_from[(at, self._parts[at])] = self.turn.text_length()
                self._parts[at] += 1
        elif kind == "response.output_text.annotation.added":
            cited = self.annotation_added(data)
            if cited is not None:
                self.turn.events.append(cited)
        elif kind == "response.image_generation_call.partial_image":
            self._open_item(data.get("output_index"), "image_generation_call", kind)
            partial_image(self.turn, data)
        elif kind == "response.output_text.done":
            self._open_item(data.get("output_index"), "message", kind)
        elif kind == "response.reasoning_summary_text.delta":
            self.reasoning_piece(data, ("summary", data.get("summary_index")))
        elif kind == "response.reasoning_text.delta":
            self.reasoning_piece(data, ("content", data.get("content_index")))
        elif kind == "response.function_call_arguments.done":
            index = self._announced(data)
            if not self.turn.has_arguments(index):
                arguments = _text(data.get("arguments"), "a call's arguments")
                if arguments:
                    self.turn.call_arguments(index, arguments)
        elif kind in TERMINALS:
            response = data.get("response")
            if type(response) is not dict:
                raise invalid(f"{kind} holds no response object")
            if not self._seen:  # the whole output in the terminal event only
                self.output(response.get("output"))
            else:
                self._unfinished(response.get("output"))
            self.end(response, str(kind)[len("response.") :])
            return True
        elif kind == "error":
            error = data.get("error")
            raise error_frame(error if type(error) is dict else data, self._secrets)
        return False

    def annotation_added(self, data: dict[str, Any]) -> Citation | None:
        """A citation as it streams (``response.output_text.annotation.added``), returned
        for the stream's hot path to yield (``None``: a kind kept unknown, no event); its
        indexes count from its content part's start."""
        self._open_item(data.get("output_index"), "message", "an annotation")
        position: int = data["output_index"]
        part = data.get("content_index")
        if type(part) is not int or not 0 <= part < self._parts[position]:
            raise invalid(f"an annotation arrived for content part {part!r}, never announced")
        key = (position, part)
        cited = annotation_event(
            self.turn, data.get("annotation"), self._part_from.get(key, self._from)
        )
        self._annotated[key] = self._annotated.get(key, 0) + 1
        return cited

    def reasoning_piece(self, data: dict[str, Any], part: tuple[str, Any]) -> None:
        """A piece of a reasoning item's text: its block opens with its first piece, and a new
        part of the same item begins with ``SEPARATOR``."""
        piece = _text(data.get("delta"), "a reasoning delta")
        if type(data.get("output_index")) is int:
            self._open_item(data["output_index"], "reasoning", str(data.get("type")))
        if not piece:
            return
        key = _key(data)
        if key != self._open:
            self._open_block(key, _optional(data.get("item_id"), "a reasoning delta's item_id"))
        elif part != self._piece and self._reasoned:
            self.turn.reasoning(SEPARATOR)
        self._piece = part
        self._reasoned = True
        self.turn.reasoning(piece)

    def reasoning_event(self, data: dict[str, Any]) -> Any:
        """The hot path's reasoning piece: the open item's current summary part, else
        ``None`` (``event`` takes it)."""
        piece = data.get("delta")
        position = data.get("output_index")
        if (
            type(piece) is not str
            or not piece
            or (position if type(position) is int else data.get("item_id")) != self._open
            or ("summary", data.get("summary_index")) != self._piece
        ):
            return None
        return self.turn.reasoning_event(piece)

    def _open_block(self, key: Any, item_id: str | None, encrypted: str | None = None) -> None:
        metadata: dict[str, JsonValue] = {}
        if item_id is not None:
            metadata["id"] = item_id
        if encrypted is not None:
            metadata["encrypted_content"] = encrypted
        self.turn.open_reasoning({PROVIDER: metadata} if metadata else None)
        self._open = key
        self._reasoned = False
        self._piece = None

    def _open_item(self, position: Any, kind: str, what: str) -> None:
        """``INVALID_RESPONSE`` unless ``position`` is an announced ``kind`` item still
        open."""
        announced = self._added.get(position, _NONE) if type(position) is int else _NONE
        if announced is _NONE:
            raise invalid(f"{what} arrived for an output item that was never announced")
        if announced != kind:
            raise invalid(f"{what} arrived for an output item announced as {announced!r}")
        if position in self._finished:
            raise invalid(f"{what} arrived for an output item that had finished")

    def _speak(self, position: Any, part: Any) -> None:
        """A text delta for item ``position``: an announced message, still open, whose text
        does not interleave with another item's, for a content part announced (when it names
        one)."""
        if position == self.speaking and position is not None:
            return
        self._open_item(position, "message", "text")
        if part is not None and (type(part) is not int or not 0 <= part < self._parts[position]):
            raise invalid(f"text arrived for content part {part!r}, which was never announced")
        if self.speaking is not None or position in self._spoken:
            raise invalid("the text of two output items is interleaved")
        self.speaking = position
        self._spoken.add(position)
        self._from = self.turn.text_length()

    def _added_item(self, item: dict[str, Any], position: Any) -> None:
        self._seen = True
        kind = item.get("type")
        if type(position) is int:
            if position in self._added:
                raise invalid(f"output item {position} was announced twice")
            self._added[position] = kind
            if type(item.get("id")) is str:
                self._ids_at[item["id"]] = position
            if kind == "message":
                content = item.get("content")
                self._parts[position] = len(content) if type(content) is list else 0
        if kind == "function_call":
            self._announce(item, position, whole=False)

    def _announce(self, item: dict[str, Any], position: Any, *, whole: bool) -> int:
        name = _text(item.get("name"), "a function call's name")
        call_id = _optional(item.get("call_id"), "a function call's call_id")
        if call_id:
            if call_id in self._call_ids:
                raise invalid(f"two function calls have one call_id {call_id[:64]!r}")
            self._call_ids.add(call_id)
        arguments = _text(item.get("arguments"), "a function call's arguments")
        index = self.turn.open_call(name, call_id, arguments="" if whole else arguments)
        item_id = item.get("id")
        if item_id is not None:
            self._by_item[item_id] = index
        if type(position) is int:
            self.by_position[position] = index
        return index

    def _call_of(self, data: dict[str, Any], item_id: Any = None) -> int | None:
        """The announced call an event (or finished item) is about: by ``output_index`` (some
        servers — GitHub Copilot's — give an item a new id on every event), else by id."""
        index = self.by_position.get(data.get("output_index"))
        if index is None:
            index = self._by_item.get(data.get("item_id") if item_id is None else item_id)
        return index

    def _announced(self, data: dict[str, Any]) -> int:
        """The call an arguments event is about: the function call announced at its
        ``output_index`` (by its ``item_id`` only when it names no index), still open."""
        position = data.get("output_index")
        if type(position) is int:
            self._open_item(position, "function_call", "arguments")
            index = self.by_position.get(position)
        else:
            index = self._by_item.get(data.get("item_id"))
        if index is None:
            raise invalid("arguments arrived for a function call that was never announced")
        return index

    def item(self, item: dict[str, Any], position: Any) -> None:
        """A finished output item (``response.output_item.done``, or one of a whole
        response's, ``position`` its place in the output): what its deltas did not already
        give."""
        self._seen = True
        kind = item.get("type")
        if type(position) is int:
            if position in self._finished:
                raise invalid(f"output item {position} finished twice")
            announced = self._added.get(position, _NONE)
            if announced is _NONE and type(item.get("id")) is str and item["id"] in self._ids_at:
                raise invalid(f"output item {self._ids_at[item['id']]} finished at {position}")
            if announced is not _NONE and announced != kind:
                raise invalid(f"output item {position} was announced as {announced!r}")
            self._finished.add(position)
        if kind == "message":
            if position in self._spoken:
                self._agrees(self.turn.text_since(self._from), _message_text(item), "text")
                self._late_annotations(item, position)
            else:
                self._message(item)
            if position == self.speaking:
                self.speaking = None
        elif kind == "function_call":
            index = self._call_of({"output_index": position}, item.get("id"))
            if index is None:
                index = self._announce(item, position, whole=True)
            arguments = _text(item.get("arguments"), "a function call's arguments")
            if not self.turn.has_arguments(index):
                if arguments:
                    self.turn.call_arguments(index, arguments)
            else:
                self._agrees(self.turn.arguments_so_far(index), arguments, "arguments")
            self.turn.close_call(index)
        elif kind == "reasoning":
            self._reasoning_item(item, position)
        elif kind in SERVER_TOOLS:
            server_tool(self.turn, item)
        elif kind == "image_generation_call":
            generated_image(self.turn, item)
        elif kind not in KNOWN_ITEMS:
            self.turn.unknown(PROVIDER, item)

    def _late_annotations(self, item: dict[str, Any], position: Any) -> None:
        """A streamed message's annotations that no ``annotation.added`` event gave."""
        content = item.get("content")
        if type(content) is not list:
            return
        base = self._from
        for index, part in enumerate(content):
            notes = part_annotations(part)
            base = self._part_from.get((position, index), base)
            for note in notes[self._annotated.get((position, index), 0) :]:
                annotation(self.turn, note, base)

    @staticmethod
    def _agrees(streamed: str, finished: str, what: str) -> None:
        """A finished item's ``what`` (when it has any) is what streamed for it."""
        if finished and finished != streamed:
            raise invalid(f"a finished output item's {what} differ from what streamed for it")

    def _unfinished(self, output: Any) -> None:
        """The terminal event's output items that were announced but not finished."""
        if type(output) is not list:
            return
        for position in sorted(self._added.keys() - self._finished):
            if position < len(output) and type(output[position]) is dict:
                self.item(output[position], position)

    def _message(self, item: dict[str, Any]) -> None:
        text = _message_text(item)
        content = item.get("content") or ()
        if any(type(p) is dict and p.get("type") == "refusal" for p in content):
            self._refused = True
        if any(part_annotations(part) for part in content):
            self._cited_message(content)
        elif text:
            self.turn.text(text)

    def _cited_message(self, content: Any) -> None:
        """A whole message with annotations: each part's text, then its citations (the order
        a stream gives them: text deltas, then ``annotation.added``)."""
        base = self.turn.text_length()
        for part in content:
            if part.get("type") not in ("output_text", "refusal"):
                continue
            text = _text(part.get("text", part.get("refusal")), "an output_text part's text")
            self.turn.text(text)
            for note in part_annotations(part):
                annotation(self.turn, note, base)
            base += len(text)

    def _reasoning_item(self, item: dict[str, Any], position: Any) -> None:
        """A finished reasoning item: the encrypted content (and the id) of the block its
        deltas opened, or a block of its own when none came."""
        item_id = _optional(item.get("id"), "a reasoning item's id")
        encrypted = _optional(item.get("encrypted_content"), "a reasoning item's encrypted_content")
        encrypted = encrypted or None
        key = position if type(position) is int else item_id
        if key != self._open:
            texts = _reasoning_texts(item)
            if not texts and encrypted is None:
                return  # no text, nothing to send back: nothing
            self._open_block(key, item_id, encrypted)
            self.turn.reasoning(SEPARATOR.join(texts))
            self._reasoned = bool(texts)
            self._open = _NONE  # a later piece for this id is another block
            return
        texts = _reasoning_texts(item)
        if texts:
            self._agrees(self.turn.reasoning_so_far(), SEPARATOR.join(texts), "reasoning")
        finished: dict[str, JsonValue] = {}
        if item_id is not None:
            finished["id"] = item_id  # the finished item's id stands
        if encrypted is not None:
            finished["encrypted_content"] = encrypted
        if finished:
            self.turn.reasoning_metadata({PROVIDER: finished})
        self._open = _NONE  # a later piece for this item is refused: it finished

    # -- a whole response ------------------------------------------------------------------------

    def response(self, response: Any) -> None:
        """A whole response object (the unstreamed answer): ``INVALID_RESPONSE`` unless it
        finished — completed or incomplete; a failed one is its error."""
        if type(response) is not dict:
            raise invalid("the response is not a JSON object")
        status = response.get("status")
        error = response.get("error")
        if status == "failed" or (status is None and type(error) is dict):
            raise error_frame(error if type(error) is dict else None, self._secrets)
        if status not in ("completed", "incomplete"):
            if type(status) is not str:
                raise invalid("the response has no status")
            raise invalid(f"the response is not finished (status {status[:40]!r})")
        self.output(response.get("output"))
        self.end(response, status)

    def output(self, output: Any) -> None:
        if output is None:
            return
        if type(output) is not list:
            raise invalid("a response's output is not a list")
        for position, item in enumerate(output):
            if type(item) is not dict:
                raise invalid("an output item is not an object")
            self.item(item, position)

    def end(self, response: dict[str, Any], status: str) -> None:
        """The terminal event's (or whole response's) status, usage and finish reason."""
        if status == "failed":
            error = response.get("error")
            raise error_frame(error if type(error) is dict else None, self._secrets)
        usage = response.get("usage")
        if usage is not None:
            take_usage(self.turn, usage, input_key="input", output_key="output")
        turn = self.turn
        if status == "incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if type(details) is dict else None
            if reason is not None and type(reason) is not str:
                raise invalid("incomplete_details.reason is not a string")
            turn.finished(INCOMPLETE.get(reason or "", reason or "incomplete"), FINISHES)
        elif self._refused:
            turn.finished("content_filter", FINISHES)
        else:  # calls are numbered from 0 in the order of function-call items
            turn.finished("tool_calls" if turn.has_call(0) else "stop", FINISHES)


def _key(data: dict[str, Any]) -> Any:
    """Which output item an event is about: its ``output_index`` (stable), else its id."""
    position = data.get("output_index")
    return position if type(position) is int else data.get("item_id")


def _message_text(item: dict[str, Any]) -> str:
    """A finished message item's text: its ``output_text`` and ``refusal`` parts, joined."""
    content = item.get("content")
    if content is None:
        return ""
    if type(content) is not list:
        raise invalid("a message item's content is not a list")
    texts: list[str] = []
    for part in content:
        if type(part) is not dict:
            raise invalid("a message content part is not an object")
        kind = part.get("type")
        if kind == "output_text":
            texts.append(_text(part.get("text"), "an output_text part's text"))
        elif kind == "refusal":
            texts.append(_text(part.get("refusal"), "a refusal part's text"))
    return "".join(texts)


def _reasoning_texts(item: dict[str, Any]) -> list[str]:
    """A finished reasoning item's summary texts, then its ``reasoning_text`` content."""
    texts: list[str] = []
    for field, kind in (("summary", "summary_text"), ("content", "reasoning_text")):
        parts = item.get(field)
        if parts is None:
            continue
        if type(parts) is not list:
            raise invalid(f"a reasoning item's {field} is not a list")
        for part in parts:
            if type(part) is not dict:
                raise invalid(f"a reasoning item's {field} part is not an object")
            if part.get("type", kind) == kind:
                text = _text(part.get("text"), f"a reasoning item's {kind}")
                if text:
                    texts.append(text)
    return texts


def _item(data: dict[str, Any]) -> dict[str, Any]:
    item = data.get("item")
    if type(item) is not dict:
        raise invalid(f"{data.get('type')} holds no item object")
    return item


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if type(value) is not str:
        raise invalid(f"{what} is not a string")
    return value


def _optional(value: Any, what: str) -> str | None:
    if value is None or type(value) is str:
        return value
    raise invalid(f"{what} is not a string")
