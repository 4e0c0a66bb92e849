"""Tools for the CLI's --tools tests."""

WEATHER = {"Delft": 12.0, "Ede": 14.0}


def get_weather(city: str) -> dict[str, object]:
    """Current temperature in a city, in degrees Celsius."""
    return {"city": city, "celsius": WEATHER.get(city)}


TOOLS = [get_weather]
NOT_TOOLS = [42]
