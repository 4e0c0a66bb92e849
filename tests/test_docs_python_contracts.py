"""docs/python-contracts.md (its snippets run in tests/test_snippets.py): the printed
errors are the ones the page shows, and the tool-call task fits in twenty lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from runport.core import parse_contract, parse_document

from .test_snippets import run_python

PAGE = Path(__file__).resolve().parent.parent / "docs" / "python-contracts.md"
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
PYTHON = [code for lang, code in BLOCKS if lang == "python"]
STREAMING = next(code for code in PYTHON if "run_stream(" in code)


def test_the_printed_errors_are_the_ones_the_page_shows(tmp_path: Path) -> None:
    position = next(i for i, (_, code) in enumerate(BLOCKS) if "except ContractError" in code)
    lang, shown = BLOCKS[position + 1]
    assert lang == "text"
    assert run_python(BLOCKS[position][1], tmp_path).stdout == shown


def test_the_yaml_on_the_page_is_a_contract_and_a_content_list() -> None:
    yaml_blocks = [parse_document(code) for lang, code in BLOCKS if lang == "yaml"]
    contracts = [
        block for block in yaml_blocks if isinstance(block, dict) and "api_version" in block
    ]
    fragments = [block["content"] for block in yaml_blocks if block not in contracts]
    assert len(contracts) == 1
    assert len(fragments) == 1
    parse_contract(contracts[0])
    specs = {"topic": {"schema": {"type": "string"}}, "audience": {"schema": {"type": "string"}}}
    parse_contract(
        {
            "api_version": "runport/v1alpha1",
            "id": "fragment",
            "version": "1.0.0",
            "inputs": specs,
            "messages": [{"role": "user", "content": fragments[0]}],
            "output_schema": {"type": "string"},
        }
    )


def test_the_tool_call_task_fits_in_twenty_lines_besides_the_scenario_data() -> None:
    tree = ast.parse(STREAMING)
    (scenario,) = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "SCENARIO"
    ]
    assert scenario.end_lineno is not None
    data_lines = range(scenario.lineno, scenario.end_lineno + 1)
    counted = [
        line
        for number, line in enumerate(STREAMING.splitlines(), start=1)
        if line.strip() and number not in data_lines
    ]
    assert len(counted) <= 20, "\n".join(counted)


def test_the_tool_call_task_streams_and_returns_a_model_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__snippet__"}
    exec(compile(STREAMING, str(PAGE), "exec"), namespace)
    weather = namespace["weather"]
    assert type(weather) is namespace["Weather"]
    assert weather.model_dump() == {"city": "Paris", "celsius": 21.5}
    result = namespace["result"]
    assert [receipt.finish_reason for receipt in result.receipts] == ["tool_calls", "stop"]
    assert [message.role for message in result.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert result.messages[2].content == "21.5"
    assert capsys.readouterr().out == '{"city": "Paris", "celsius": 21.5}\n' + repr(weather) + "\n"
