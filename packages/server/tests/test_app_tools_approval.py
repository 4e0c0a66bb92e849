"""A tool that needs a person's approval is refused when the app is made: the chat routes
carry no approval requests, so a served run would pause with nobody to ask."""

from __future__ import annotations

import pytest

from runport.application import Tool
from runport.mock import FunctionRuntime
from runport.server import create_app


def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def answer(request: object, emit: object) -> None:
    """A model that is never called."""


def test_a_tool_that_needs_approval_is_refused_by_name() -> None:
    tool = Tool.from_function(delete_file, needs_approval=True)
    with pytest.raises(ValueError, match="need approval cannot be served: delete_file"):
        create_app([], FunctionRuntime(answer), tools=[tool])


def test_a_tool_that_never_needs_approval_is_served() -> None:
    app = create_app([], FunctionRuntime(answer), tools=[delete_file])
    assert app is not None
