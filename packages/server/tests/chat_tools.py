"""The tools the server tests' runs are offered (``runport serve --tools chat_tools:TOOLS``
in the subprocess tests, ``tools=TOOLS`` in process)."""

from __future__ import annotations


def get_weather(city: str) -> dict[str, object]:
    """The weather in a city, as a forecast service would give it."""
    return {"city": city, "celsius": 12.5, "sky": "dry"}


TOOLS = [get_weather]
