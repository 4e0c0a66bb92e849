"""The AI SDK's UI message stream as a ``FrontendProtocol``: ``POST
/v1/contracts/{id}/chat``, and the chat's resume route."""

from __future__ import annotations

import json
import secrets

from pydantic import JsonValue

from runport.core import Contract
from runport.server._errors import RequestRefused
from runport.server._frontends._encoder import RunEventEncoder
from runport.server._frontends._protocol import ChatCall, FrontendProtocol, coded_error
from runport.server._frontends.ui_message_stream._request import parse_chat
from runport.server._frontends.ui_message_stream._stream import (
    CLOSING,
    UI_MESSAGE_STREAM_HEADERS,
    UIMessageEncoder,
)


class UIMessageStream(FrontendProtocol):
    name = "ui-message-stream"
    segment = "chat"
    headers = UI_MESSAGE_STREAM_HEADERS
    closing = CLOSING
    resumes_chats = True

    def parse(self, body: bytes, contract: Contract) -> ChatCall:
        return parse_chat(body, contract, self.reasoning_key)

    def encoder(self, call: ChatCall, *, resumable: bool) -> RunEventEncoder:
        """A resumable chat's ``start`` always names its assistant message (the request's
        ``messageId``, or one made up here): a page that kept the message across a reload
        then has the replay replace it, not add a second one."""
        message_id = call.message_id
        if resumable:
            message_id = message_id or f"msg-{secrets.token_hex(12)}"
        return UIMessageEncoder(
            message_id,
            self.reasoning_key,
            contract_id=call.contract_id,
            chat_id=call.chat_id,
            denied=call.denied,
        )

    def refusal_body(self, refused: RequestRefused) -> dict[str, JsonValue]:
        """runport's coded error, and the UI message stream's own error chunk
        (``errorText``) in the same object, which the AI SDK shows as the chat's error."""
        return {
            "type": "error",
            "errorText": f"{refused.code}: {refused.message}",
            "error": coded_error(refused),
        }

    def failed(self, code: str, message: str) -> list[bytes]:
        """An error chunk and ``finish``."""
        error = {"type": "error", "errorText": f"{code}: {message}"}
        return [json.dumps(error).encode(), b'{"type": "finish", "finishReason": "error"}']
