"""AG-UI as a ``FrontendProtocol``: ``POST /v1/contracts/{id}/agui``."""

from __future__ import annotations

import json

from pydantic import JsonValue

from runport.core import Contract
from runport.server._errors import RequestRefused
from runport.server._frontends._encoder import RunEventEncoder
from runport.server._frontends._protocol import ChatCall, FrontendProtocol, coded_error
from runport.server._frontends.agui._request import parse_agui
from runport.server._frontends.agui._stream import AGUI_HEADERS, AGUIEncoder


class AGUI(FrontendProtocol):
    name = "ag-ui"
    segment = "agui"
    headers = AGUI_HEADERS

    def parse(self, body: bytes, contract: Contract) -> ChatCall:
        call, _, _ = parse_agui(body, contract)
        return call

    def encoder(self, call: ChatCall, *, resumable: bool) -> RunEventEncoder:
        assert call.run_id is not None  # parse_agui's calls name their run
        return AGUIEncoder(call.chat_id, call.run_id, denied=call.denied)

    def refusal_body(self, refused: RequestRefused) -> dict[str, JsonValue]:
        """runport's coded error in the shape of AG-UI's ``RUN_ERROR``."""
        return {
            "type": "RUN_ERROR",
            "code": str(refused.code),
            "message": refused.message,
            "error": coded_error(refused),
        }

    def failed(self, code: str, message: str) -> list[bytes]:
        """``RUN_ERROR`` with the code."""
        return [json.dumps({"type": "RUN_ERROR", "code": str(code), "message": message}).encode()]
