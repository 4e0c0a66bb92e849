"""Print one of the two commands of README.md's "Quick start" block: `main` or `test`."""

import re
import sys
from pathlib import Path

readme = Path(__file__).resolve().parent.parent / "README.md"
section = readme.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0]
(block,) = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
commands = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
if len(commands) != 2:
    sys.exit(f"README.md's Quick start must hold exactly two commands, found {len(commands)}")
print(commands[{"main": 0, "test": 1}[sys.argv[1]]])
