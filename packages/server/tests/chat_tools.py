"""The tools the server tests' runs are offered (``runport serve --tools chat_tools:TOOLS``
in the subprocess tests, ``tools=TOOLS`` in process)."""

from __future__ import annotations

import os
from pathlib import Path

from runport.application import Tool


def get_weather(city: str) -> dict[str, object]:
    """The weather in a city, as a forecast service would give it."""
    return {"city": city, "celsius": 12.5, "sky": "dry"}


TOOLS = [get_weather]


FILES_FOLDER = "RUNPORT_TEST_FILES"
"""The environment variable naming the folder ``delete_file`` deletes in (a test's own)."""


def delete_file(path: str) -> str:
    """Delete a file (in the test's folder), noting each deletion in ``deleted.log``."""
    folder = Path(os.environ[FILES_FOLDER])
    (folder / path).unlink()
    with (folder / "deleted.log").open("a", encoding="utf-8") as log:
        log.write(path + "\n")
    return f"deleted {path}"


APPROVAL_TOOLS = [Tool.from_function(delete_file, needs_approval=True)]
"""``delete_file``, which asks a person first (``--tools chat_tools:APPROVAL_TOOLS``)."""
