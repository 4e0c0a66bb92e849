"""Image and file inputs on the command line: read by path within the folder rules and the size
bound, kept by ``runport record`` (bytes beside the scenario, digests in ``expect.parts``) and
compared by ``scenarios check``."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from runport.contracts import MAX_PART_BYTES
from runport.core import load_scenario

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(48))
CONTRACT = """\
api_version: runport/v1alpha1
id: describe
version: 1.0.0
inputs:
  photo: {kind: image, required: true}
  note: {schema: {type: object}}
messages:
  - role: user
    content: "What is in {{ inputs.photo }}?"
output_schema: {type: string}
"""
SCENARIO = """\
api_version: runport.mock/v1
id: cat
turns:
  - events:
      - {kind: delta, text: "A cat."}
      - {kind: finish, finish_reason: stop}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "contract.yaml").write_text(CONTRACT, encoding="utf-8")
    (work / "scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    (work / "cat.png").write_bytes(PNG)
    (tmp_path / "outside.png").write_bytes(PNG)
    return work


def inputs(folder: Path, photo: object, name: str = "input.json") -> Path:
    path = folder / name
    # a non-image input with a `path` key is data, never a file to read
    path.write_text(json.dumps({"photo": photo, "note": {"path": "cat.png"}}), encoding="utf-8")
    return path


def test_a_path_in_an_inputs_file_is_read_as_the_image(runport: Any, folder: Path) -> None:
    by_path = runport(
        "run", "contract.yaml", "--input", inputs(folder, {"path": "cat.png"}),
        "--scenario", "scenario.yaml", cwd=folder,
    )  # fmt: skip
    as_data = {"media_type": "image/png", "data": base64.b64encode(PNG).decode()}
    inline = runport(
        "run", "contract.yaml", "--input", inputs(folder, as_data, "data.json"),
        "--scenario", "scenario.yaml", cwd=folder,
    )  # fmt: skip
    at = runport(
        "run", "contract.yaml", "-i", "photo=@cat.png", "-i", 'note={"path": "cat.png"}',
        "--scenario", "scenario.yaml", cwd=folder,
    )  # fmt: skip
    assert by_path.returncode == inline.returncode == at.returncode == 0, by_path.stderr
    fingerprints = {
        json.loads(done.stdout)["result"]["request_fingerprint"] for done in (by_path, inline, at)
    }
    assert len(fingerprints) == 1


@pytest.mark.parametrize(
    ("photo", "code", "says"),
    [
        ({"path": "../outside.png"}, "TQX_DATA_INVALID", "resolves outside"),
        ({"path": "missing.png"}, "TQX_DATA_INVALID", "is not a file"),
        ({"path": "contract.yaml"}, "TQX_DATA_INVALID", "give it as media_type"),
        ({"path": "huge.png"}, "TQX_REQUEST_TOO_LARGE", "more than"),
    ],
)
def test_a_path_the_rules_refuse_is_a_coded_error_naming_the_input(
    runport: Any, folder: Path, photo: dict[str, str], code: str, says: str
) -> None:
    with (folder / "huge.png").open("wb") as huge:
        huge.truncate(MAX_PART_BYTES + 1)
    done = runport(
        "run", "contract.yaml", "--input", inputs(folder, photo), "--scenario", "scenario.yaml",
        cwd=folder,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"runport: error: {code}: input 'photo'" in done.stderr
    assert says in done.stderr


def test_bytes_that_are_not_their_media_type_are_refused_before_the_adapter(
    runport: Any, folder: Path
) -> None:
    photo = {"path": "cat.png", "media_type": "image/jpeg"}
    done = runport(
        "run", "contract.yaml", "--input", inputs(folder, photo), "--scenario", "scenario.yaml",
        cwd=folder,
    )  # fmt: skip
    assert done.returncode == 2
    (problem,) = json.loads(done.stdout)["diagnostics"]
    assert (problem["code"], problem["json_pointer"]) == ("TQX_VALUE_SCHEMA", "/inputs/photo")


def test_record_keeps_the_image_and_check_compares_it(runport: Any, folder: Path) -> None:
    recorded = runport(
        "record", "contract.yaml", "--input", inputs(folder, {"path": "cat.png"}),
        "--scenario", "scenario.yaml", "--out", "rec/cat.yaml", cwd=folder,
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    assert (folder / "rec" / "cat.photo.png").read_bytes() == PNG
    kept = json.loads((folder / "rec" / "cat.input.json").read_text(encoding="utf-8"))
    assert kept["inputs"]["photo"] == {"path": "cat.photo.png", "media_type": "image/png"}
    scenario = load_scenario(folder / "rec" / "cat.yaml")
    digest = hashlib.sha256(PNG).hexdigest()
    assert scenario.expectations.parts == (("image", "image/png", digest),)

    assert runport("scenarios", "check", folder).returncode == 0
    (folder / "rec" / "cat.photo.png").write_bytes(PNG[:-1] + b"\x00")
    changed = runport("scenarios", "check", folder)
    assert changed.returncode == 2
    assert f"part 0: expected image image/png {digest}" in changed.stdout
