"""Tools for the CLI's --tools tests."""

WEATHER = {"Delft": 12.0, "Ede": 14.0}


def get_weather(city: str) -> dict[str, object]:
    """Current temperature in a city, in degrees Celsius."""
    return {"city": city, "celsius": WEATHER.get(city)}


TOOLS = [get_weather]
NOT_TOOLS = [42]


def _needs_approval() -> list[object]:
    from runport.application import Tool

    return [Tool.from_function(get_weather, needs_approval=True)]


def _client() -> list[object]:
    from runport.application import Tool

    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    return [Tool.client("get_weather", "Current temperature in a city.", parameters)]


APPROVED = _needs_approval()
CLIENT = _client()
