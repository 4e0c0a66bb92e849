"""What the Responses API did itself, read from its output items and annotations
(adr/0055-what-the-provider-did-itself.md): the tools it ran (``web_search_call``,
``file_search_call``, ``code_interpreter_call``, ``mcp_call``), the images it generated
(``image_generation_call``, with ``partial_image`` previews), the sources its text cites
(``output_text`` annotations). Shared by the stream and the whole response."""

from __future__ import annotations

import json
from typing import Any, Final

from pydantic import JsonValue

from runport.contracts import Citation
from runport.core import TurnBuilder
from runport.openai._errors import invalid
from runport.openai._responses._request import PROVIDER

SERVER_TOOLS: Final = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "mcp_call": None,  # named by the item
}
"""The output items of a tool the provider ran itself, and the name each call is given."""

_CALL_FIELDS: Final = {
    "web_search_call": ("action",),
    "file_search_call": ("queries",),
    "code_interpreter_call": ("code", "container_id"),
}
_RESULT_FIELDS: Final = {
    "web_search_call": ("status",),
    "file_search_call": ("status", "results"),
    "code_interpreter_call": ("status", "outputs"),
}
KNOWN_ITEMS: Final = frozenset({"message", "function_call", "reasoning", "image_generation_call"})


def server_tool(turn: TurnBuilder, item: dict[str, Any]) -> None:
    """A finished server tool item: its call (what it was asked) and its result (what it
    gave), announced together — the API gives a tool's input only with the finished item."""
    kind = item["type"]
    call_id = item.get("id")
    if type(call_id) is not str or not call_id:
        raise invalid(f"a {kind} item has no id")
    metadata: dict[str, JsonValue] = {PROVIDER: {"type": kind}}
    error: str | None = None
    if kind == "mcp_call":
        name = item.get("name")
        if type(name) is not str or not name:
            raise invalid("an mcp_call item has no name")
        arguments = item.get("arguments")
        call: Any = _json_or_text(arguments) if type(arguments) is str else arguments
        output: Any = item.get("output")
        label = item.get("server_label")
        if type(label) is str:
            metadata = {PROVIDER: {"type": kind, "server_label": label}}
        raised = item.get("error")
        if raised is not None:
            error = raised if type(raised) is str else json.dumps(raised)
    else:
        name = str(SERVER_TOOLS[kind])
        call, output = {}, {}
        for key in _CALL_FIELDS[kind]:
            if item.get(key) is not None:
                call[key] = item[key]
        for key in _RESULT_FIELDS[kind]:
            if item.get(key) is not None:
                output[key] = item[key]
    if item.get("status") in ("failed", "incomplete") and error is None:
        error = str(item["status"])
    # the values are the decoded body's, and ``metadata`` is made of its strings
    turn.server_call(call_id, name, call, metadata, decoded=True)
    turn.server_result(call_id, output, error=error, metadata=metadata, decoded=True)


def image_media_type(value: Any) -> str:
    """An image item's (or partial image event's) ``output_format`` as a media type (PNG
    when it says none)."""
    form = value.get("output_format") if type(value) is dict else None
    if form is None:
        return "image/png"
    if type(form) is not str or not form.isalnum():
        raise invalid("an image's output_format is not a format name")
    return "image/jpeg" if form.lower() in ("jpg", "jpeg") else f"image/{form.lower()}"


def generated_image(turn: TurnBuilder, item: dict[str, Any]) -> None:
    """A finished ``image_generation_call``: its ``result`` (base64) is a generated file; one
    without a result (failed) is kept as it came (ADR 0054)."""
    result = item.get("result")
    if result is None:
        turn.unknown(PROVIDER, item)
        return
    if type(result) is not str:
        raise invalid("an image_generation_call's result is not base64 text")
    turn.file(image_media_type(item), result)


def partial_image(turn: TurnBuilder, data: dict[str, Any]) -> None:
    """``response.image_generation_call.partial_image``: a preview, superseded by the item."""
    preview = data.get("partial_image_b64")
    if type(preview) is not str or not preview:
        raise invalid("a partial_image event holds no image")
    turn.file(image_media_type(data), preview, partial=True)


def annotation(turn: TurnBuilder, note: Any, base: int) -> None:
    """An ``output_text`` annotation as a ``Citation``, owed at once (``annotation_event``)."""
    cited = annotation_event(turn, note, base)
    if cited is not None:
        turn.events.append(cited)


def annotation_event(turn: TurnBuilder, note: Any, base: int) -> Citation | None:
    """An ``output_text`` annotation as a ``Citation``, kept by ``turn`` and returned (not
    owed: the stream's hot path yields it); its indexes count from the start of its content
    part, which begins at ``base`` in the turn's text. A kind not known is kept (ADR 0054)
    and gives no event."""
    if type(note) is not dict:
        raise invalid("an annotation is not an object")
    kind = note.get("type")
    if kind == "url_citation":
        source: dict[str, JsonValue] = {"type": "url"}
        url, title = note.get("url"), note.get("title")
        if url is not None:
            source["url"] = url
        if title is not None:
            source["title"] = title
    elif kind in ("file_citation", "container_file_citation", "file_path"):
        source = {"type": "document"}
        file_id, filename = note.get("file_id"), note.get("filename")
        if file_id is not None:
            source["file_id"] = file_id
        if filename is not None:
            source["filename"] = filename
    else:
        turn.unknown(PROVIDER, {"annotation": note})
        return None
    start = note["start_index"] if "start_index" in note else note.get("index")
    end = note.get("end_index")
    if start is not None:
        if type(start) is not int or start < 0:
            raise invalid(f"a {kind} annotation's index is not a count of characters")
        start += base
    if end is not None:
        if type(end) is not int or end < 0:
            raise invalid(f"a {kind} annotation's index is not a count of characters")
        end += base
    return turn.citation_event(source, start=start, end=end)


def part_annotations(part: Any) -> list[Any]:
    """An ``output_text`` part's annotations (none for another part)."""
    if type(part) is not dict or part.get("type") != "output_text":
        return []
    notes = part.get("annotations")
    if notes is None:
        return []
    if type(notes) is not list:
        raise invalid("an output_text part's annotations are not a list")
    return notes


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
