"""The Vercel AI SDK's UI message stream (protocol v1): its stream, its request, and the
protocol object the server's routes are made from."""

from runport.server._frontends.ui_message_stream._frontend import UIMessageStream
from runport.server._frontends.ui_message_stream._stream import (
    UI_MESSAGE_STREAM_HEADERS,
    ui_message_stream,
)

__all__ = ["UI_MESSAGE_STREAM_HEADERS", "UIMessageStream", "ui_message_stream"]
