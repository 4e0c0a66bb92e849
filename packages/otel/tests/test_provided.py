"""What the provider did itself, on a call's span (adr/0055-what-the-provider-did-itself.md):
an event per server tool call and result (name, call id, type ``extension``, a failure's
code; never its input or output), and the counts of server tools, citations and files as
attributes, left out when there were none; a server tool's arrival is the first chunk."""

from __future__ import annotations

import base64

from runport.contracts import ExecutionRequest
from runport.mock import Emitter, FunctionRuntime
from runport.otel import Traced

from .otel_doubles import Recorded, make_request

PNG = b"\x89PNG\r\n\x1a\n" + bytes(8)


def searching(request: ExecutionRequest, emit: Emitter) -> None:
    emit.server_tool_call("web_search", {"query": "secret plans"}, call_id="srv_1")
    emit.server_tool_result("srv_1", [{"url": "https://example.org/a"}])
    emit.server_tool_call("code_execution", {"code": "1/0"}, call_id="srv_2")
    emit.server_tool_result("srv_2", error="execution_time_exceeded")
    emit.text("Rivers run downhill.")
    emit.citation("https://example.org/a", start=0, end=6)
    emit.citation("https://example.org/b", start=7, end=10)
    emit.file("image/png", PNG)


def test_server_tools_are_span_events_and_the_counts_attributes(recorded: Recorded) -> None:
    sink_saw: list[object] = []
    Traced(FunctionRuntime(searching), **recorded.providers).execute_streaming(
        make_request(), sink_saw.append
    )
    span = recorded.only_span()
    attributes = dict(span.attributes or {})
    assert attributes["runport.server_tools"] == 2
    assert attributes["runport.citations"] == 2
    assert attributes["runport.files"] == 1
    events = [(event.name, dict(event.attributes or {})) for event in span.events]
    tool = {"gen_ai.tool.type": "extension"}
    assert events == [
        ("runport.server_tool.call",
         {**tool, "gen_ai.tool.name": "web_search", "gen_ai.tool.call.id": "srv_1"}),
        ("runport.server_tool.result",
         {**tool, "gen_ai.tool.name": "web_search", "gen_ai.tool.call.id": "srv_1"}),
        ("runport.server_tool.call",
         {**tool, "gen_ai.tool.name": "code_execution", "gen_ai.tool.call.id": "srv_2"}),
        ("runport.server_tool.result",
         {**tool, "gen_ai.tool.name": "code_execution", "gen_ai.tool.call.id": "srv_2",
          "runport.server_tool.error": "execution_time_exceeded"}),
    ]  # fmt: skip
    assert "secret plans" not in repr(span.to_json())  # no content unless captured
    assert base64.b64encode(PNG).decode() not in repr(span.to_json())


def test_a_server_tool_is_a_first_chunk(recorded: Recorded) -> None:
    def only_searches(request: ExecutionRequest, emit: Emitter) -> None:
        emit.server_tool_call("web_search", {"query": "x"})
        emit.file("image/png", PNG)  # no text at all: an image was the answer

    runtime = Traced(FunctionRuntime(only_searches), **recorded.providers)
    runtime.execute_streaming(make_request(), lambda event: None)
    [first] = recorded.points()["gen_ai.client.operation.time_to_first_chunk"]
    assert first.count == 1


def test_a_turn_without_any_has_no_such_attributes_or_events(recorded: Recorded) -> None:
    Traced(FunctionRuntime(lambda request, emit: emit.text("ok")), **recorded.providers).execute(
        make_request()
    )
    span = recorded.only_span()
    assert not [key for key in span.attributes or {} if key.startswith("runport.") and
                key.split(".")[1] in ("server_tools", "citations", "files")]  # fmt: skip
    assert list(span.events) == []
