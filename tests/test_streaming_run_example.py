"""The streaming-run example (examples/streaming_run.py) runs as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_streaming_run_example_runs() -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "streaming_run.py"
    result = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert '[call 1 get_weather] {"city": "Ede"}' in result.stdout
    assert (
        result.stdout.splitlines()[-2]
        == '{"go_to": "Ede", "celsius": 14, "why": "warmest of the two"}'
    )
