"""A tool-using contract streamed to the terminal: every fragment of every turn as it arrives.

Run it from the repository root, after the README's main command made .venv:
    .venv/bin/uv run --all-packages python examples/streaming_run.py
or check its scenario without code:  runport scenarios check examples/streaming_run
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runport.application import run_stream
from runport.contracts import Complete, Delta, Failed, StreamEvent, ToolCallDelta
from runport.mock import ScriptedRuntime

HERE = Path(__file__).parent / "streaming_run"
WEATHER = {"Delft": 12.0, "Ede": 14.0}


def get_weather(city: str) -> dict[str, object]:
    """Current temperature in a city, in degrees Celsius."""
    return {"city": city, "celsius": WEATHER.get(city)}


def show(event: StreamEvent) -> None:
    if isinstance(event, Delta):
        sys.stdout.write(event.text)
    elif isinstance(event, ToolCallDelta):
        # Parallel calls interleave, so each fragment is shown with the call it belongs to.
        sys.stdout.write(f"[call {event.index} {event.name}] {event.arguments_fragment}\n")
    elif isinstance(event, Complete):
        sys.stdout.write(f"\n-- turn complete ({event.receipt.finish_reason})\n\n")
    elif isinstance(event, Failed):
        sys.stdout.write(f"\n-- turn failed: {event.code}\n")
    sys.stdout.flush()


def main() -> None:
    runtime = ScriptedRuntime.from_scenario(HERE / "scenario.yaml")
    result = run_stream(
        HERE / "contract.yaml",
        runtime,
        inputs={"cities": ["Delft", "Ede"]},
        tools=[get_weather],
        on_event=show,
    )
    print(json.dumps(result.output))
    print(f"{len(result.receipts)} turns, usage {result.usage.model_dump()}")


if __name__ == "__main__":
    main()
