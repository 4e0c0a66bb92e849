"""Time the hostile shapes docs/limits.md bounds: a catastrophic schema pattern on the stock
engine and on runport's RE2 validator, and YAML alias ladders through runport's document reader.

Run: ``.venv/bin/python benchmarks/hostile_input.py``. The stock engine's column stops at 24
``a``s: its time doubles with each one (40 would take about a day).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from jsonschema import Draft202012Validator

from runport.core import DocumentError, parse_document, validate_output

SCHEMA = {"type": "string", "pattern": "^(a+)+$"}


def seconds(call: Callable[..., object], *args: object) -> float:
    start = time.perf_counter()
    call(*args)
    return time.perf_counter() - start


def ladder(levels: int) -> str:
    lines = ["l0: &l0 [" + ", ".join(["x"] * 10) + "]"]
    lines += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def refuse(text: str) -> None:
    try:
        parse_document(text)
    except DocumentError:
        return


def main() -> None:
    stock = Draft202012Validator(SCHEMA)
    print("pattern ^(a+)+$ against 'a'*n + '!'")
    for n in (16, 20, 24, 40, 1_000_000):
        value = "a" * n + "!"
        ours = seconds(validate_output, SCHEMA, value)
        theirs = f"{seconds(list, stock.iter_errors(value)):10.4f}s" if n <= 24 else "-"
        print(f"  n={n:>9}  stock {theirs:>11}  runport (RE2) {ours:.6f}s")
    print("YAML alias ladder (10 aliases per level), refused past 100,000 values")
    for levels in (3, 5, 7, 9, 30):
        text = ladder(levels)
        print(f"  levels={levels:>2}  {len(text):>5} bytes  {seconds(refuse, text):.4f}s")


if __name__ == "__main__":
    main()
