"""``runport.application.mcp_tools`` without the MCP client installed: a coded error that
says what to install (the client itself is proven in packages/mcp/tests/test_client.py)."""

from __future__ import annotations

import pytest

from runport.application import _tool_sources, mcp_tools
from runport.ports import PortError


def test_without_the_mcp_client_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_tool_sources, "entry_points", lambda group: [])
    with pytest.raises(PortError) as caught:
        mcp_tools("http://127.0.0.1:9/mcp")
    assert caught.value.code == "TQX_MCP_SERVER_FAILED"
    assert "pip install 'runport[mcp]'" in caught.value.message
